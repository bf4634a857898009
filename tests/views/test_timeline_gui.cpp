// The main window end to end, driven with synthetic Qt input events the way a user would: open a
// profile (and a broken file), zoom, pan, box-select, find, click to select. Needs an OpenGL
// context, so ctest runs it under xvfb-run (tests/views/CMakeLists.txt).
#include <catch2/catch.hpp>

#include <QAction>
#include <QApplication>
#include <QFileInfo>
#include <QKeyEvent>
#include <QMimeData>
#include <QSettings>
#include <QUrl>
#include <QMouseEvent>
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>
#include <QValueAxis>
#include <QWheelEvent>
#include <map>
#include <set>

#include "app/gui/main_window.h"
#include "app/gui/profile_loader.h"
#include "profiler/synthetic/synthetic_profile.h"
#include "tests/support/test_paths.h"
#include "views/memory/memory_chart.h"
#include "views/memory/memory_view.h"
#include "views/timeline/aggregate_model.h"
#include "views/timeline/timeline_widget.h"

using namespace ss;
using namespace ss::timeline;

namespace {

QApplication& app() {
  static int argc = 1;
  static char name[] = "test_timeline_gui";
  static char* argv[] = {name, nullptr};
  // Never destroyed: tearing QApplication down during static destruction crashes in Qt's
  // post routines (the GL/xcb integration is gone by then).
  static QApplication* a = new QApplication(argc, argv);
  QStandardPaths::setTestModeEnabled(true);  // QSettings go to a scratch location
  QApplication::setOrganizationName("ShardScopeTest");
  return *a;
}

void send_mouse(QWidget* w, QEvent::Type type, QPointF pos, Qt::MouseButton button, Qt::MouseButtons buttons,
                Qt::KeyboardModifiers mods = Qt::NoModifier) {
  QMouseEvent e(type, pos, w->mapToGlobal(pos), button, buttons, mods);
  QApplication::sendEvent(w, &e);
}

void send_key(QWidget* w, int key, Qt::KeyboardModifiers mods = Qt::NoModifier, const QString& text = {}) {
  QKeyEvent press(QEvent::KeyPress, key, mods, text);
  QApplication::sendEvent(w, &press);
  QKeyEvent release(QEvent::KeyRelease, key, mods, text);
  QApplication::sendEvent(w, &release);
}

// A synthetic 4-rank, 6-layer profile in `dir`.
std::string synthetic_4rank(const test::TempDir& dir) {
  const std::string path = dir.file("p.ssdb");
  SyntheticSpec spec;
  spec.ranks = 4;
  spec.layers = 6;
  write_synthetic_profile(path, spec);
  return path;
}

// Shows a non-interactive main window at 1500 x 950 and waits until it is on screen.
void show_main_window(gui::MainWindow& window) {
  window.set_interactive(false);
  window.resize(1500, 950);
  window.show();
  REQUIRE(QTest::qWaitForWindowExposed(&window));
}

// Lets the widget draw the frames its input asked for (ImGui processes input inside a frame).
void settle(TimelineWidget* w) {
  for (int i = 0; i < 4; ++i) {
    w->grabFramebuffer();
    QApplication::processEvents();
  }
}

}  // namespace

TEST_CASE("main window: open, zoom, pan, box-select, find and select with synthetic input", "[views][gui]") {
  app();
  test::TempDir dir;
  const std::string path = synthetic_4rank(dir);
  gui::MainWindow window;
  show_main_window(window);

  // A broken file: the reader's message comes back and the app stays usable.
  const std::string bad = dir.file("bad.ssdb");
  test::write_file(bad, "this is not a database");
  QSignalSpy failed(&window, &gui::MainWindow::loadFailed);
  window.open_file(QString::fromStdString(bad));
  REQUIRE(failed.wait(10000));
  CHECK(window.last_error().contains("bad.ssdb"));
  CHECK(!window.profile());

  QSignalSpy loaded(&window, &gui::MainWindow::profileLoaded);
  window.open_file(QString::fromStdString(path));
  REQUIRE(loaded.wait(20000));
  REQUIRE(window.profile());
  const Profile& p = *window.profile();
  TimelineWidget* tw = window.timeline();
  settle(tw);
  TimelineController& c = *tw->controller();
  const long frames_before = tw->frames();
  REQUIRE(frames_before > 0);
  CHECK(c.viewport().width_px == Approx(tw->width() - kLabelWidth));

  // Zoom with W around the mouse, then with Ctrl+wheel.
  const QPointF mouse(kLabelWidth + 400, 120);
  send_mouse(tw, QEvent::MouseMove, mouse, Qt::NoButton, Qt::NoButton);
  const double nspp = c.viewport().ns_per_px;
  const double anchor = c.viewport().time_at(mouse.x() - kLabelWidth);
  for (int i = 0; i < 3; ++i) send_key(tw, Qt::Key_W, Qt::NoModifier, "w");
  CHECK(c.viewport().ns_per_px == Approx(nspp * 0.8 * 0.8 * 0.8));
  CHECK(c.viewport().time_at(mouse.x() - kLabelWidth) == Approx(anchor));
  QWheelEvent wheel(mouse, tw->mapToGlobal(mouse), QPoint(), QPoint(0, 120), Qt::NoButton, Qt::ControlModifier,
                    Qt::NoScrollPhase, false);
  QApplication::sendEvent(tw, &wheel);
  CHECK(c.viewport().ns_per_px == Approx(nspp * 0.8 * 0.8 * 0.8 * 0.8));
  CHECK(c.viewport().time_at(mouse.x() - kLabelWidth) == Approx(anchor));
  settle(tw);
  CHECK(tw->frames() > frames_before);  // input led to repaints

  // Pan with A and with a left drag.
  double s = c.viewport().start_ns;
  send_key(tw, Qt::Key_A, Qt::NoModifier, "a");
  CHECK(c.viewport().start_ns == Approx(s - 0.1 * c.viewport().width_px * c.viewport().ns_per_px));
  s = c.viewport().start_ns;
  send_mouse(tw, QEvent::MouseButtonPress, mouse, Qt::LeftButton, Qt::LeftButton);
  send_mouse(tw, QEvent::MouseMove, mouse + QPointF(-80, 0), Qt::NoButton, Qt::LeftButton);
  send_mouse(tw, QEvent::MouseButtonRelease, mouse + QPointF(-80, 0), Qt::LeftButton, Qt::NoButton);
  CHECK(c.viewport().start_ns == Approx(s + 80 * c.viewport().ns_per_px));

  // Box-select (right drag) across every track of the whole profile; compare the aggregate table
  // with a brute-force sum over all kernels in the range.
  send_key(tw, Qt::Key_0, Qt::ControlModifier);  // not bound in the widget: fit via the controller
  c.fit_all();
  const QPointF a(kLabelWidth + 200, kRulerHeight + 2), b(kLabelWidth + 600, tw->height() - 2);
  send_mouse(tw, QEvent::MouseButtonPress, a, Qt::RightButton, Qt::RightButton);
  send_mouse(tw, QEvent::MouseMove, (a + b) / 2, Qt::NoButton, Qt::RightButton);
  send_mouse(tw, QEvent::MouseMove, b, Qt::NoButton, Qt::RightButton);
  send_mouse(tw, QEvent::MouseButtonRelease, b, Qt::RightButton, Qt::NoButton);
  REQUIRE(c.aggregate());
  const TimeNs t0 = c.aggregate()->t0, t1 = c.aggregate()->t1;
  CHECK(static_cast<double>(t0) == Approx(c.viewport().time_at(200)).margin(1));
  CHECK(static_cast<double>(t1) == Approx(c.viewport().time_at(600)).margin(1));
  // Which stream tracks the box covered: those laid out between its top and the widget bottom.
  std::set<std::int32_t> covered;
  for (std::size_t i = 0; i < c.tracks().size(); ++i) {
    const float y = c.track_y(static_cast<std::int32_t>(i));
    if (c.tracks()[i].kind == TrackKind::Stream && y + c.tracks()[i].height() > a.y() && y < b.y())
      covered.insert(c.tracks()[i].index);
  }
  REQUIRE(!covered.empty());
  std::map<std::string, std::pair<std::int64_t, double>> expect;
  for (std::int32_t ti : covered)
    for (const auto& e : p.stream_tracks[static_cast<std::size_t>(ti)].events)
      if (e.end >= t0 && e.start <= t1) {
        auto& r = expect[std::string(p.strings[e.name])];
        ++r.first;
        r.second += static_cast<double>(std::min(e.end, t1) - std::max(e.start, t0));
      }
  AggregateModel* km = window.kernel_aggregate();
  REQUIRE(km->rowCount() == static_cast<int>(expect.size()));
  for (int r = 0; r < km->rowCount(); ++r) {
    const std::string name = km->data(km->index(r, AggregateModel::Name)).toString().toStdString();
    REQUIRE(expect.count(name));
    CHECK(km->data(km->index(r, AggregateModel::Count), Qt::UserRole).toLongLong() == expect[name].first);
    CHECK(km->data(km->index(r, AggregateModel::Total), Qt::UserRole).toDouble() == Approx(expect[name].second));
  }
  CHECK(window.module_aggregate()->rowCount() > 0);
  // Esc drops the range and what the dock showed for it.
  send_key(tw, Qt::Key_Escape);
  CHECK_FALSE(c.aggregate());
  CHECK(window.kernel_aggregate()->rowCount() == 0);
  CHECK(window.module_aggregate()->rowCount() == 0);

  // Find: Ctrl+F, type into the ImGui find bar, Enter selects the first match in time; F3 the next.
  send_key(tw, Qt::Key_Escape);
  send_key(tw, Qt::Key_F, Qt::ControlModifier);
  REQUIRE(tw->find_open());
  settle(tw);
  for (QChar ch : QString("flash_fwd")) send_key(tw, Qt::Key_unknown, Qt::NoModifier, QString(ch));
  settle(tw);
  CHECK(c.find_query() == "flash_fwd");
  send_key(tw, Qt::Key_Return);
  settle(tw);
  const KernelEvent* first = nullptr;
  std::size_t matches = 0;
  for (const auto& t : p.stream_tracks)
    for (const auto& e : t.events)
      if (p.strings[e.name].find("flash_fwd") != std::string_view::npos) {
        ++matches;
        if (!first || e.start < first->start) first = &e;
      }
  REQUIRE(first);
  CHECK(c.find_results().size() == matches);
  REQUIRE(c.selected().valid());
  CHECK(event_info(p, c.selected()).id == first->id);
  send_key(tw, Qt::Key_F3);
  CHECK(c.find_cursor() == 1);
  CHECK(p.strings[event_info(p, c.selected()).name].find("flash_fwd") != std::string_view::npos);
  CHECK(window.details()->toPlainText().contains("flash_fwd"));
  send_key(tw, Qt::Key_Escape);  // closes the find bar
  CHECK(!tw->find_open());

  // Click on a collective kernel: it is selected and linked to the same collective on the others.
  const CollectiveEvent* col = nullptr;
  for (const auto& cc : p.collectives)
    if (cc.rank == 0 && cc.sequence >= 0) {
      col = &cc;
      break;
    }
  REQUIRE(col);
  c.viewport().fit(static_cast<double>(col->start) - 1e5, static_cast<double>(col->end) + 1e5);
  std::int32_t track = -1;
  for (std::size_t i = 0; i < c.tracks().size(); ++i) {
    const Track& t = c.tracks()[i];
    if (t.kind != TrackKind::Stream || t.rank != 0) continue;
    for (const auto& e : p.stream_tracks[static_cast<std::size_t>(t.index)].events)
      if (e.id == static_cast<std::uint32_t>(col->kernel_id)) track = static_cast<std::int32_t>(i);
  }
  REQUIRE(track >= 0);
  const QPointF click(c.x_of(static_cast<double>(col->start + col->end) / 2), c.track_y(track) + kRowHeight / 2);
  send_mouse(tw, QEvent::MouseMove, click, Qt::NoButton, Qt::NoButton);
  CHECK(c.hovered().valid());
  send_mouse(tw, QEvent::MouseButtonPress, click, Qt::LeftButton, Qt::LeftButton);
  send_mouse(tw, QEvent::MouseButtonRelease, click, Qt::LeftButton, Qt::NoButton);
  REQUIRE(c.selected().valid());
  CHECK(event_info(p, c.selected()).id == static_cast<std::uint32_t>(col->kernel_id));
  CHECK(c.peers().size() == 3);
  CHECK(window.details()->toPlainText().contains("same collective on other ranks"));
  settle(tw);

  // Selection linked with the memory tree: the kernel's module is selected there.
  const std::int32_t module = event_info(p, c.selected()).module;
  if (module >= 0) CHECK(window.memory_view()->selected_module() == module);

  // The file is in the recent list; dropping a file on the window opens it.
  CHECK(QSettings().value("recent").toStringList().contains(QFileInfo(QString::fromStdString(path)).absoluteFilePath()));
  QMimeData mime;
  mime.setUrls({QUrl::fromLocalFile(QString::fromStdString(path))});
  QDragEnterEvent enter(QPoint(50, 50), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(&window, &enter);
  CHECK(enter.isAccepted());
  QDropEvent drop(QPointF(50, 50), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(&window, &drop);
  REQUIRE(loaded.wait(20000));
  CHECK(window.profile().get() != &p);  // a fresh load
}

TEST_CASE("timeline: marker lanes toggled from the View menu and M, hover gone on leave, tracks clipped below the ruler", "[views][gui]") {
  app();
  test::TempDir dir;
  const std::string path = synthetic_4rank(dir);
  gui::MainWindow window;
  show_main_window(window);
  QSignalSpy loaded(&window, &gui::MainWindow::profileLoaded);
  window.open_file(QString::fromStdString(path));
  REQUIRE(loaded.wait(20000));
  const Profile& p = *window.profile();
  TimelineWidget* tw = window.timeline();
  settle(tw);
  TimelineController& c = *tw->controller();
  const std::size_t rows = c.tracks().size();
  auto lanes = [&] {
    return std::count_if(c.tracks().begin(), c.tracks().end(), [](const Track& t) { return t.kind == TrackKind::Markers; });
  };

  // An analysis result's markers: one lane per rank.
  std::vector<OverlayMarker> markers;
  for (int i = 0; i < 80; ++i)
    markers.push_back({p.time_begin + i * 1000000, p.time_begin + i * 1000000 + 500000 + i, i % 4, "gap " + std::to_string(i)});
  tw->set_overlay(markers, {});
  CHECK(lanes() == static_cast<long>(p.ranks.size()));
  CHECK(c.shown_markers().size() == kDefaultMarkerLimit);
  auto* toggle = window.findChild<QAction*>("view_markers");
  REQUIRE(toggle);
  CHECK(toggle->isChecked());
  toggle->trigger();  // View > Analysis markers off
  CHECK_FALSE(c.markers_visible());
  CHECK(lanes() == 0);
  CHECK(c.tracks().size() == rows);
  send_mouse(tw, QEvent::MouseMove, QPointF(kLabelWidth + 300, 200), Qt::NoButton, Qt::NoButton);
  send_key(tw, Qt::Key_M, Qt::NoModifier, "m");  // M in the timeline: back on, and the menu follows
  CHECK(c.markers_visible());
  CHECK(toggle->isChecked());
  CHECK(lanes() == static_cast<long>(p.ranks.size()));
  auto* clear = window.findChild<QAction*>("clear_markers");
  REQUIRE(clear);
  clear->trigger();
  CHECK(c.markers().empty());
  CHECK(lanes() == 0);

  // Hover an event, then leave the widget: no hover, so no tooltip.
  c.fit_all();
  std::int32_t track = -1;
  for (std::size_t i = 0; i < c.tracks().size() && track < 0; ++i)
    if (c.tracks()[i].kind == TrackKind::Stream) track = static_cast<std::int32_t>(i);
  REQUIRE(track >= 0);
  const auto& events = p.stream_tracks[static_cast<std::size_t>(c.tracks()[static_cast<std::size_t>(track)].index)].events;
  const auto& e = events[events.size() / 2];
  c.viewport().fit(static_cast<double>(e.start) - 2000, static_cast<double>(e.end) + 2000);
  const QPointF over(c.x_of(static_cast<double>(e.start + e.end) / 2), c.track_y(track) + kRowHeight / 2);
  send_mouse(tw, QEvent::MouseMove, over, Qt::NoButton, Qt::NoButton);
  REQUIRE(c.hovered().valid());
  QEvent leave(QEvent::Leave);
  QApplication::sendEvent(tw, &leave);
  CHECK_FALSE(c.hovered().valid());

  // Scroll half way down, draw: the ruler's top row is the ruler's colour everywhere (no track
  // drawn over it); the scrollbar's thumb is off the top. Every row open: more than fits.
  for (std::size_t i = 0; i < c.tracks().size(); ++i) {
    c.tracks()[i].collapsed = false;
    if (c.tracks()[i].group_size > 1) set_group_open(c.tracks(), i, true);
  }
  c.fit_all();
  const Scrollbar sb = c.scrollbar();
  REQUIRE(sb.visible);
  c.set_scroll_y(sb.max_scroll / 2);
  CHECK(c.scrollbar().thumb_y0 > sb.y0);
  const QImage img = tw->grabFramebuffer();
  REQUIRE(!img.isNull());
  const double dpr = img.width() / static_cast<double>(tw->width());
  const QRgb ruler = img.pixel(2, 0);
  int other = 0;
  for (int x = static_cast<int>(kLabelWidth * dpr); x < img.width(); ++x) other += img.pixel(x, 0) != ruler;
  CHECK(other == 0);
}

TEST_CASE("profile loader: cancel from the progress callback ends in a cancelled failure", "[views][gui]") {
  app();
  test::TempDir dir;
  const std::string path = dir.file("p.ssdb");
  SyntheticSpec spec;
  spec.ranks = 2;
  spec.layers = 4;
  write_synthetic_profile(path, spec);
  gui::ProfileLoader loader;
  // Direct connection: cancel() runs on the worker thread at the first progress report, so the
  // reader's next progress step sees the flag (deterministic, whatever the machine's speed).
  QObject::connect(&loader, &gui::ProfileLoader::progress, &loader, [&] { loader.cancel(); }, Qt::DirectConnection);
  QSignalSpy failed(&loader, &gui::ProfileLoader::failed);
  QSignalSpy loaded(&loader, &gui::ProfileLoader::loaded);
  loader.start(QString::fromStdString(path));
  REQUIRE(failed.wait(10000));
  CHECK(loaded.count() == 0);
  CHECK(failed.at(0).at(2).toBool());  // cancelled
  CHECK(failed.at(0).at(1).toString().contains("cancel"));
}

TEST_CASE("View > Whole profile: the memory chart follows at once, not at the next input", "[views][gui]") {
  app();
  // The bundled real sample at 1600x1000, as a user opens it.
  const std::string path = test::source_dir() + "/resources/samples/cpu-fsdp2-llama-2rank.ssdb";
  gui::MainWindow window;
  window.set_interactive(false);
  window.resize(1600, 1000);
  window.show();
  REQUIRE(QTest::qWaitForWindowExposed(&window));
  QSignalSpy loaded(&window, &gui::MainWindow::profileLoaded);
  window.open_file(QString::fromStdString(path));
  REQUIRE(loaded.wait(20000));
  TimelineWidget* tw = window.timeline();
  settle(tw);
  // The timeline has the keyboard on open: W zooms without a click first.
  REQUIRE(window.focusWidget() == tw);
  const double before = tw->controller()->viewport().ns_per_px;
  QTest::keyClick(window.focusWidget(), Qt::Key_W);
  CHECK(tw->controller()->viewport().ns_per_px < before);
  auto* chart = window.memory_view()->chart();
  REQUIRE(QTest::qWaitFor([&] { return chart->x_axis() != nullptr; }, 5000));
  send_mouse(tw, QEvent::MouseMove, QPointF(kLabelWidth + 300, 120), Qt::NoButton, Qt::NoButton);
  for (int i = 0; i < 30; ++i) send_key(tw, Qt::Key_W, Qt::NoModifier, "w");
  const double zoomed_ms = tw->controller()->viewport().width_px * tw->controller()->viewport().ns_per_px / 1e6;
  REQUIRE(QTest::qWaitFor([&] { return chart->x_axis()->max() - chart->x_axis()->min() < zoomed_ms * 1.01; }, 5000));
  auto* fit = window.findChild<QAction*>("view_fit_all");
  REQUIRE(fit);
  fit->trigger();  // no further input
  const Viewport& vp = tw->controller()->viewport();
  const double whole_ms = vp.width_px * vp.ns_per_px / 1e6;
  CHECK(QTest::qWaitFor([&] { return chart->x_axis()->max() - chart->x_axis()->min() == Approx(whole_ms); }, 5000));
  // A screenshot for docs/screenshots (SHARDSCOPE_SCREENSHOT_DIR): the chart after the zoom-out.
  if (const char* shots = std::getenv("SHARDSCOPE_SCREENSHOT_DIR")) {
    settle(tw);
    CHECK(window.grab().save(QString::fromUtf8(shots) + "/memory-after-deep-zoom-and-ctrl0.png"));
  }
}
