#include "app/gui/profile_loader.h"

#include <QFileInfo>

#include "app/gui/trace_import.h"
#include "profiler/import/import.h"
#include "storage/errors.h"
#include "storage/profile_reader.h"

namespace ss::gui {

namespace {
// The kernels table's largest row id (its row count in files we write): cheap, a b-tree lookup.
std::int64_t kernel_rows(const std::string& path) {
  sql::Db db = open_profile_readonly(path);
  sql::Stmt s(db.get(), "SELECT coalesce(max(id), 0) FROM kernels");
  return s.step() ? s.col_int(0) : 0;
}
}  // namespace

ProfileLoader::~ProfileLoader() {
  cancel();
  wait_for_worker();
}

void ProfileLoader::cancel() {
  if (cancel_) cancel_->store(true);
}

void ProfileLoader::wait_for_worker() {
  if (thread_) {
    thread_->wait();
    delete thread_;
    thread_ = nullptr;
  }
}

void ProfileLoader::start(const QString& path) { run({path}, {}, false); }

void ProfileLoader::start_import(const QStringList& inputs, const QString& output) { run(inputs, output, true); }

void ProfileLoader::run(const QStringList& inputs, const QString& output, bool force_import) {
  cancel();
  wait_for_worker();
  auto cancel_flag = std::make_shared<std::atomic<bool>>(false);
  cancel_ = cancel_flag;
  thread_ = QThread::create([this, inputs, output, force_import, cancel_flag, first_part_rows = first_part_rows_] {
    const QString shown = inputs.size() == 1 ? inputs.front() : QString("%1 files").arg(inputs.size());
    int last_percent = -1;
    QString last_stage;
    const auto report = [&](double fraction, const QString& stage) {
      const int percent = static_cast<int>(fraction * 100);
      if (percent == last_percent && stage == last_stage) return;  // keep the signal rate low
      last_percent = percent;
      last_stage = stage;
      emit progress(percent, stage);
    };
    try {
      if (inputs.isEmpty()) throw ProfileError(ProfileErrorKind::Io, "no files to open");
      QString profile_path = inputs.front();
      if (force_import || inputs.size() > 1 || needs_import(inputs.front())) {
        const ImportTarget target = choose_import_target(inputs, output);
        if (!target.reuse) {
          import::ImportOptions options;
          options.show_progress = false;
          options.cancel = cancel_flag.get();
          options.on_progress = [&](double fraction, const std::string& path) {
            report(fraction, "importing " + QFileInfo(QString::fromStdString(path)).fileName());
          };
          std::vector<std::string> files;
          // Absolute paths: origin.source_files is how a later open recognises this import.
          for (const auto& i : inputs) files.push_back(QFileInfo(i).absoluteFilePath().toStdString());
          import::import_files(files, target.path.toStdString(), options);
        }
        profile_path = target.path;
        emit imported(inputs, profile_path, target.reuse);
      }
      const std::string file = profile_path.toStdString();
      // A big profile: its first kernel rows first, to draw and use while the rest loads (the
      // first 500 k rows take ~0.5 s on an idle 2-core machine; the whole then reads them again).
      const std::int64_t rows = first_part_rows ? kernel_rows(file) : 0;
      if (first_part_rows > 0 && rows > 2 * first_part_rows) {
        LoadOptions first;
        first.cancel = cancel_flag.get();
        first.ranges = false;
        first.memory = false;
        first.collectives = false;  // 1.4 M rows at 13 M kernels: most of a first pass
        first.kernel_id_limit = first_part_rows;
        first.progress = [&](double fraction, const char* stage) { report(fraction * 0.1, QString("first part: %1").arg(stage)); };
        emit firstPart(std::make_shared<const Profile>(load_profile(file, first)), rows);
      }
      LoadOptions options;
      options.cancel = cancel_flag.get();
      options.progress = [&](double fraction, const char* stage) { report(fraction, QString::fromUtf8(stage)); };
      auto profile = std::make_shared<const Profile>(load_profile(file, options));
      emit loaded(profile);
    } catch (const ProfileError& e) {
      emit failed(shown, QString::fromUtf8(e.what()), e.kind() == ProfileErrorKind::Cancelled);
    } catch (const std::exception& e) {
      emit failed(shown, QString::fromUtf8(e.what()), false);
    }
  });
  connect(thread_, &QThread::finished, this, [this, t = thread_] {
    if (thread_ == t) {
      thread_->deleteLater();
      thread_ = nullptr;
    }
  });
  thread_->start();
}

}  // namespace ss::gui
