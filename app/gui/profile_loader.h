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
  // A profile with more than twice this many kernel rows is loaded in two passes: first its
  // first `rows` kernel rows without ranges and memory (firstPart), then the whole (loaded).
  // 0: always in one pass.
  void set_first_part_rows(std::int64_t rows) { first_part_rows_ = rows; }

 signals:
  void progress(int percent, QString stage);
  // The inputs were imported to (or an earlier import reused from) `profile_path`.
  void imported(QStringList inputs, QString profile_path, bool reused);
  // A first part of a big profile (see set_first_part_rows); `total_kernel_rows` estimates the whole.
  void firstPart(std::shared_ptr<const ss::Profile> profile, qint64 total_kernel_rows);
  void loaded(std::shared_ptr<const ss::Profile> profile);
  void failed(QString path, QString message, bool cancelled);

 private:
  void run(const QStringList& inputs, const QString& output, bool force_import);
  void wait_for_worker();
  QThread* thread_ = nullptr;
  std::shared_ptr<std::atomic<bool>> cancel_;
  std::int64_t first_part_rows_ = 500'000;
};

}  // namespace ss::gui
