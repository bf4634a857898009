// Shared set-up of the Qt view tests: the one QApplication of a test executable, and a small
// synthetic profile loaded once.
#pragma once

#include <QApplication>

#include <memory>
#include <string>
#include <vector>

#include "profiler/synthetic/synthetic_profile.h"
#include "storage/profile_reader.h"
#include "storage/sqlite_handle.h"
#include "tests/support/test_paths.h"

namespace ss::test {

// Never destroyed: tearing QApplication down during static destruction crashes in Qt's post
// routines (the GL/xcb integration is gone by then).
inline QApplication& qt_app() {
  static int argc = 1;
  static char name[] = "shardscope-view-test";
  static char* argv[] = {name, nullptr};
  static QApplication* a = new QApplication(argc, argv);
  return *a;
}

// A 2-rank, 4-layer synthetic profile, written and loaded on first use.
inline std::shared_ptr<const Profile> small_synthetic_profile() {
  static TempDir dir;
  static std::shared_ptr<const Profile> p = [] {
    SyntheticSpec spec;
    spec.ranks = 2;
    spec.layers = 4;
    write_synthetic_profile(dir.file("p.ssdb"), spec);
    return std::make_shared<const Profile>(load_profile(dir.file("p.ssdb")));
  }();
  return p;
}

// A synthetic profile of `ranks` x `layers` written at `path`, changed by the SQL statements (what a
// recording of another kind would hold: no steps, a pipeline's meta), then loaded.
inline std::shared_ptr<const Profile> edited_synthetic_profile(const std::string& path, int ranks, int layers,
                                                               const std::vector<std::string>& statements) {
  SyntheticSpec spec;
  spec.ranks = ranks;
  spec.layers = layers;
  write_synthetic_profile(path, spec);
  {
    sql::Db db(path, SQLITE_OPEN_READWRITE);
    for (const auto& sql : statements) db.exec(sql);
  }
  return std::make_shared<const Profile>(load_profile(path));
}

}  // namespace ss::test
