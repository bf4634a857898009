// Loads a profile on a worker thread and reports progress; cancellable. Errors come back as the
// reader's (or importer's) message (ss::ProfileError), never as an exception on the GUI thread.
// Traces of other tools (Kineto JSON, nsys SQLite) are imported first into a profile
// (app/gui/trace_import.h says where), then that profile is loaded; a cancelled import leaves
// no file behind.
#pragma once

#include <QObject>
#include <QStringList>
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
  // Starts loading `path` (importing it first when it is a trace); a load already running is
  // cancelled first.
  void start(const QString& path);
  // Imports `inputs` (one per rank, or one trace) into one profile and loads it. `output`: the
  // profile to write; empty picks the default beside the first input.
  void start_import(const QStringList& inputs, const QString& output = {});
  void cancel();
  bool busy() const { return thread_ != nullptr; }

 signals:
  void progress(int percent, QString stage);
  // The inputs were imported to (or an earlier import reused from) `profile_path`.
  void imported(QStringList inputs, QString profile_path, bool reused);
  void loaded(std::shared_ptr<const ss::Profile> profile);
  void failed(QString path, QString message, bool cancelled);

 private:
  void run(const QStringList& inputs, const QString& output, bool force_import);
  void wait_for_worker();
  QThread* thread_ = nullptr;
  std::shared_ptr<std::atomic<bool>> cancel_;
};

}  // namespace ss::gui
