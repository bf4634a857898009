// Loads a profile on a worker thread and reports progress; cancellable. Errors come back as the
// reader's message (ss::ProfileError), never as an exception on the GUI thread.
#pragma once

#include <QObject>
#include <QThread>
#include <atomic>
#include <memory>

#include "storage/profile_model.h"

namespace ss::gui {

class ProfileLoader : public QObject {
  Q_OBJECT
 public:
  explicit ProfileLoader(QObject* parent = nullptr) : QObject(parent) {}
  ~ProfileLoader() override;
  // Starts loading `path`; a load already running is cancelled first.
  void start(const QString& path);
  void cancel();
  bool busy() const { return thread_ != nullptr; }

 signals:
  void progress(int percent, QString stage);
  void loaded(std::shared_ptr<const ss::Profile> profile);
  void failed(QString path, QString message, bool cancelled);

 private:
  void wait_for_worker();
  QThread* thread_ = nullptr;
  std::shared_ptr<std::atomic<bool>> cancel_;
};

}  // namespace ss::gui
