#include "app/gui/profile_loader.h"

#include "storage/errors.h"
#include "storage/profile_reader.h"

namespace ss::gui {

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

void ProfileLoader::start(const QString& path) {
  cancel();
  wait_for_worker();
  auto cancel_flag = std::make_shared<std::atomic<bool>>(false);
  cancel_ = cancel_flag;
  const std::string file = path.toStdString();
  thread_ = QThread::create([this, file, path, cancel_flag] {
    LoadOptions options;
    options.cancel = cancel_flag.get();
    int last_percent = -1;
    options.progress = [&](double fraction, const char* stage) {
      const int percent = static_cast<int>(fraction * 100);
      if (percent == last_percent) return;  // keep the signal rate low
      last_percent = percent;
      emit progress(percent, QString::fromUtf8(stage));
    };
    try {
      auto profile = std::make_shared<const Profile>(load_profile(file, options));
      emit loaded(profile);
    } catch (const ProfileError& e) {
      emit failed(path, QString::fromUtf8(e.what()), e.kind() == ProfileErrorKind::Cancelled);
    } catch (const std::exception& e) {
      emit failed(path, QString::fromUtf8(e.what()), false);
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
