// launch-stats, copy-bandwidth and annotations through the main window (issue 14): the Analyses
// dock lists them, and a run puts the result's queue-depth / bandwidth counter tracks on the
// timeline as lanes after their rank and its markers on the timeline. Needs an OpenGL context
// (xvfb-run, tests/views/CMakeLists.txt). With SHARDSCOPE_SCREENSHOT_DIR set it also writes
// launch-stats.png, copy-bandwidth.png and annotations.png of the window there, for docs/gui.md; with
// SHARDSCOPE_SCREENSHOT_PROFILE set it opens that profile instead of the hand-made one.
#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QListWidget>
#include <QSignalSpy>
#include <QTest>
#include <catch2/catch.hpp>
#include <cstdlib>

#include "app/gui/main_window.h"
#include "tests/plugins/launch_profile.h"
#include "tests/support/test_paths.h"
#include "tests/views/qt_test_app.h"
#include "views/analyses/analyses_dock.h"
#include "views/timeline/timeline_controller.h"
#include "views/timeline/timeline_widget.h"

using namespace ss;

namespace {

void settle(timeline::TimelineWidget* w) {
  for (int i = 0; i < 4; ++i) {
    w->grabFramebuffer();
    QApplication::processEvents();
  }
}

}  // namespace

TEST_CASE("the issue-14 analyses run from the main window and draw their tracks", "[views][gui]") {
  test::qt_app();
  test::TempDir dir;
  std::string path = dir.file("launch.ssdb");
  test::write_launch_profile(path);
  const char* other = std::getenv("SHARDSCOPE_SCREENSHOT_PROFILE");
  const bool hand_made = !(other && *other);
  if (!hand_made) path = other;
  const char* shots = std::getenv("SHARDSCOPE_SCREENSHOT_DIR");

  gui::MainWindow window;
  window.set_interactive(false);
  window.resize(1600, 1000);
  window.show();
  REQUIRE(QTest::qWaitForWindowExposed(&window));
  QSignalSpy loaded(&window, &gui::MainWindow::profileLoaded);
  window.open_file(QString::fromStdString(path));
  REQUIRE(loaded.wait(20000));
  auto* dock = window.analyses();
  for (const char* name : {"launch-stats", "copy-bandwidth", "annotations"}) {
    bool listed = false;
    for (int i = 0; i < dock->plugin_list()->count(); ++i)
      listed |= dock->plugin_list()->item(i)->text().contains(name);
    CHECK(listed);
  }
  if (auto* details = window.findChild<QDockWidget*>("details_dock")) details->hide();
  window.analyses_dock()->raise();
  window.resizeDocks({window.analyses_dock()}, {700}, Qt::Horizontal);

  for (const char* name : {"launch-stats", "copy-bandwidth", "annotations"}) {
    INFO(name);
    QSignalSpy done(dock, &analyses::AnalysesDock::finished);
    REQUIRE(dock->run(name));
    REQUIRE(done.wait(30000));
    const auto& r = dock->result();
    REQUIRE(r.ok);
    auto* tw = window.timeline();
    settle(tw);
    const auto& oc = tw->controller()->overlay_counters();
    REQUIRE(oc.size() == r.counters.size());
    for (std::size_t i = 0; i < oc.size(); ++i) {
      CHECK(oc[i].rank == r.counters[i].rank);
      CHECK(oc[i].points.size() == r.counters[i].points.size());
    }
    CHECK(tw->controller()->markers().size() == r.markers.size());
    if (hand_made) {
      // The hand-made profile: one queue track (stream 7, 19 points, peak 4) / one GB/s track per rank.
      if (std::string(name) == "launch-stats") {
        REQUIRE(oc.size() == 1);
        CHECK(oc[0].label.find("launch queue stream 7") != std::string::npos);
        CHECK(oc[0].points.size() == 19);
      } else if (std::string(name) == "copy-bandwidth") {
        CHECK(oc.size() == 2);
      } else {
        CHECK(oc.empty());  // annotations marks the top sequence's 3 occurrences
        CHECK(tw->controller()->markers().size() == 3);
      }
    }
    if (shots && *shots) {
      QDir().mkpath(shots);
      QTest::qWait(300);
      settle(tw);
      CHECK(window.grab().toImage().save(QString::fromLocal8Bit(shots) + "/" + name + ".png"));
    }
  }
}
