// The main window as a first-time user meets it (issue 13): the layout at 1600x1000 and
// 1920x1080 (Unshard a central tab, docks wide enough for their content, an old saved layout not
// restored), check boxes visible in the dark palette, the loading page, and opening other tools'
// traces: a Kineto .json.gz and an nsys SQLite export through open_file and through a drop,
// several rank files through File > Import, cancelling (no file left), bad files (the exact
// message), and where the imported profile goes. Needs an OpenGL context (the timeline), so
// ctest runs it under xvfb-run (tests/views/CMakeLists.txt).
#include <catch2/catch.hpp>
#include <zlib.h>

#include <QApplication>
#include <QCheckBox>
#include <QDir>
#include <QDockWidget>
#include <QDropEvent>
#include <QFileInfo>
#include <QLabel>
#include <QListWidget>
#include <QMimeData>
#include <QPainter>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QStyleOptionButton>
#include <QTabWidget>
#include <QTest>
#include <QUrl>
#include <filesystem>
#include <optional>

#include "app/gui/app_style.h"
#include "app/gui/main_window.h"
#include "app/gui/trace_import.h"
#include "profiler/synthetic/synthetic_profile.h"
#include "tests/import/nsys/nsys_fixture.h"
#include "tests/support/test_paths.h"
#include "views/analyses/analyses_dock.h"
#include "views/timeline/timeline_widget.h"
#include "views/unshard/unshard_panel.h"

using namespace ss;

namespace {

QApplication& app() {
  static int argc = 1;
  static char name[] = "test_main_window_gui";
  static char* argv[] = {name, nullptr};
  static QApplication* a = new QApplication(argc, argv);  // never destroyed (see test_timeline_gui)
  QStandardPaths::setTestModeEnabled(true);               // QSettings go to a scratch location
  QApplication::setOrganizationName("ShardScopeTest");
  QApplication::setApplicationName("test_main_window_gui");
  return *a;
}

std::string fixture(const std::string& name) { return test::source_dir() + "/tests/import/fixtures/" + name; }

void write_gz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
  gzclose(f);
}

// A Kineto trace of one rank with `kernels` kernels (big enough that an import takes a while).
std::string big_kineto(int kernels) {
  std::string s = R"({"schemaVersion": 1, "distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": [)";
  for (int i = 0; i < kernels; ++i) {
    s += i ? "," : "";
    s += R"({"ph": "X", "cat": "kernel", "name": "gemm_)" + std::to_string(i % 17) + R"(", "pid": 0, "tid": 7, "ts": )" +
         std::to_string(1000 + i * 3) + R"(, "dur": 2, "args": {"device": 0, "stream": 7, "correlation": )" +
         std::to_string(i + 1) + "}}\n";
  }
  return s + "]}";
}

// An nsys export with two processes (ranks) and a few kernels.
void write_nsys(const std::string& path) {
  using test::nsys::gpid;
  using test::nsys::gtid;
  const auto P = [](std::int64_t pid) { return std::to_string(gpid(pid)); };
  const auto T = [](std::int64_t pid, std::int64_t tid) { return std::to_string(gtid(pid, tid)); };
  const std::string rows =
      "INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1700000000000000000, '', '', 0);\n"
      "INSERT INTO PROCESSES VALUES (" + P(100) + ", 100, 'python3'), (" + P(200) + ", 200, 'python3');\n"
      "INSERT INTO StringIds VALUES (1, 'sm90_xmma_gemm_bf16'), (2, 'cudaLaunchKernel');\n"
      "INSERT INTO TARGET_INFO_GPU VALUES (0, 0, 'NVIDIA H100 80GB HBM3', 85520809984, 132, 9, 0, 0),"
      " (0, 1, 'NVIDIA H100 80GB HBM3', 85520809984, 132, 9, 0, 1);\n"
      "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, correlationId, globalPid, demangledName)"
      " VALUES (1000, 2000, 0, 7, 1, " + P(100) + ", 1), (3000, 4000, 0, 7, 2, " + P(100) + ", 1),"
      " (1200, 2200, 1, 7, 1, " + P(200) + ", 1);\n"
      "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME(start, end, globalTid, correlationId, nameId) VALUES"
      " (500, 510, " + T(100, 101) + ", 1, 2), (2500, 2510, " + T(100, 101) + ", 2, 2), (900, 910, " + T(200, 201) + ", 1, 2);\n";
  test::nsys::build_sqlite(path, test::nsys::modern_schema() + rows);
}

bool open_and_wait(gui::MainWindow& w, const QString& path) {
  QSignalSpy loaded(&w, &gui::MainWindow::profileLoaded);
  QSignalSpy failed(&w, &gui::MainWindow::loadFailed);
  w.open_file(path);
  for (int i = 0; i < 600 && loaded.isEmpty() && failed.isEmpty(); ++i) QTest::qWait(50);
  if (!failed.isEmpty()) FAIL_CHECK(w.last_error().toStdString());
  return !loaded.isEmpty();
}

void drop(gui::MainWindow& w, const QStringList& files) {
  QMimeData mime;
  QList<QUrl> urls;
  for (const auto& f : files) urls << QUrl::fromLocalFile(f);
  mime.setUrls(urls);
  QDragEnterEvent enter(QPoint(400, 300), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(&w, &enter);
  REQUIRE(enter.isAccepted());
  QDropEvent e(QPointF(400, 300), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(&w, &e);
}

// Files in `dir` other than `keep` (partial files of a cancelled import would show here).
QStringList others(const std::string& dir, const QStringList& keep) {
  QStringList out;
  for (const QString& f : QDir(QString::fromStdString(dir)).entryList(QDir::Files))
    if (!keep.contains(f)) out << f;
  return out;
}

void check_layout(int width, int height) {
  QSettings().clear();  // no saved layout: the defaults
  gui::MainWindow w;
  w.set_interactive(false);
  w.resize(width, height);
  w.show();
  REQUIRE(QTest::qWaitForWindowExposed(&w));
  QApplication::processEvents();
  INFO("window " << w.width() << "x" << w.height());
  // Unshard is a central tab, between Timeline and Compare.
  QTabWidget* tabs = w.central_tabs();
  REQUIRE(tabs->count() == 3);
  CHECK(tabs->tabText(0) == "Timeline");
  CHECK(tabs->tabText(1) == "Unshard");
  CHECK(tabs->tabText(2) == "Compare");
  CHECK(tabs->widget(1) == w.unshard_panel());
  w.show_unshard_tab();
  QApplication::processEvents();
  CHECK(w.unshard_panel()->isVisible());
  CHECK(w.unshard_panel()->height() >= height / 2);  // most of the window, not a dock's strip
  // The right column is wide enough for Details' lines and the aggregate's Count/Total columns.
  CHECK(w.details_dock()->width() >= 460);
  CHECK(w.analyses_dock()->width() >= 460);
  CHECK(w.details_dock()->height() >= 150);
  // The analyses list shows up to six plugins (a scroll bar beyond); the results area below gets
  // most of the dock.
  QListWidget* list = w.analyses()->plugin_list();
  REQUIRE(list->count() > 0);
  CHECK(list->height() >= std::min(list->count(), 6) * list->sizeHintForRow(0));
  CHECK(w.analyses_dock()->height() >= height / 2);
  CHECK(w.memory_dock()->height() >= 260);
  w.close();
}

}  // namespace

TEST_CASE("layout at 1600x1000 and 1920x1080: Unshard a tab, docks sized for their content", "[views][gui]") {
  app();
  check_layout(1600, 1000);
  check_layout(1920, 1080);
}

TEST_CASE("a layout saved by an older build is not restored; this build's is", "[views][gui]") {
  app();
  QSettings().clear();
  {
    gui::MainWindow w;
    w.resize(1600, 1000);
    w.show();
    REQUIRE(QTest::qWaitForWindowExposed(&w));
    w.resizeDocks({w.details_dock()}, {150}, Qt::Horizontal);
    QApplication::processEvents();
    REQUIRE(w.details_dock()->width() < 200);
    QSettings().setValue("window/state", w.saveState(0));  // what earlier builds saved (version 0)
  }
  {
    gui::MainWindow w;
    w.show();
    REQUIRE(QTest::qWaitForWindowExposed(&w));
    QApplication::processEvents();
    CHECK(w.details_dock()->width() >= 460);
    // A narrow layout saved by this build is the user's choice and comes back.
    w.resizeDocks({w.details_dock()}, {300}, Qt::Horizontal);
    QApplication::processEvents();
    w.close();
  }
  gui::MainWindow w;
  w.show();
  REQUIRE(QTest::qWaitForWindowExposed(&w));
  QApplication::processEvents();
  CHECK(w.details_dock()->width() == Approx(300).margin(12));
  QSettings().clear();
}

TEST_CASE("an unchecked check box shows its frame in the dark palette", "[views][gui]") {
  app();
  QStyle* style = gui::make_app_style();
  QCheckBox box("unsharded");
  box.setStyle(style);
  box.setPalette(gui::dark_palette());
  box.resize(box.sizeHint());
  QImage image(box.size(), QImage::Format_ARGB32);
  image.fill(gui::dark_palette().color(QPalette::Window));
  box.render(&image);
  QStyleOptionButton option;
  option.initFrom(&box);
  const QRect indicator = style->subElementRect(QStyle::SE_CheckBoxIndicator, &option, &box);
  REQUIRE(indicator.isValid());
  // Some pixel of the indicator stands out from the window by a clear margin (the frame).
  const int window = gui::dark_palette().color(QPalette::Window).lightness();
  int brightest = 0;
  for (int y = indicator.top(); y <= indicator.bottom(); ++y)
    for (int x = indicator.left(); x <= indicator.right(); ++x) brightest = std::max(brightest, QColor(image.pixel(x, y)).lightness());
  CHECK(brightest >= window + 80);
  delete style;
}

TEST_CASE("opening a Kineto .json.gz imports it beside itself, shows loading, and reopens the import", "[views][gui][import]") {
  app();
  test::TempDir dir;
  const std::string trace = dir.file("fsdp_rank1.json.gz");
  write_gz(trace, test::read_file(fixture("fsdp_rank1.json")));
  gui::MainWindow w;
  w.set_interactive(false);
  w.resize(1600, 1000);
  w.show();
  REQUIRE(QTest::qWaitForWindowExposed(&w));
  QSignalSpy loaded(&w, &gui::MainWindow::profileLoaded);
  w.open_file(QString::fromStdString(trace));
  CHECK(w.showing_loading());  // the centre says what loads, not "Open a profile"
  CHECK(w.loading_title()->text().contains("fsdp_rank1.json.gz"));
  REQUIRE(loaded.wait(30000));
  CHECK_FALSE(w.showing_loading());
  REQUIRE(w.profile());
  const QString profile = QString::fromStdString(dir.file("fsdp_rank1.ssdb"));
  CHECK(w.last_import() == profile);
  CHECK(QString::fromStdString(w.profile()->path) == profile);
  CHECK(QFileInfo::exists(profile));
  CHECK(w.profile()->kernel_count > 0);
  CHECK(w.profile()->ranks.size() == 1);
  CHECK(w.profile()->ranks.front().info.rank == 1);
  CHECK(w.windowTitle().contains("fsdp_rank1.ssdb"));
  CHECK(others(dir.path(), {"fsdp_rank1.json.gz", "fsdp_rank1.ssdb"}).isEmpty());

  // Opening the trace again reuses the up-to-date import (the file is not rewritten).
  const auto written = QFileInfo(profile).lastModified();
  QTest::qWait(1100);
  REQUIRE(open_and_wait(w, QString::fromStdString(trace)));
  CHECK(QFileInfo(profile).lastModified() == written);
  CHECK(gui::is_up_to_date_import(profile, {QString::fromStdString(trace)}));
}

TEST_CASE("nsys SQLite and Kineto .json.gz open through a drop and open_file; several dropped rank files import into one profile", "[views][gui][import]") {
  app();
  test::TempDir dir;
  const std::string nsys = dir.file("mfu_2gpu.sqlite");
  write_nsys(nsys);
  gui::MainWindow w;
  w.set_interactive(false);
  w.resize(1600, 1000);
  w.show();
  REQUIRE(QTest::qWaitForWindowExposed(&w));
  {
    QSignalSpy loaded(&w, &gui::MainWindow::profileLoaded);
    drop(w, {QString::fromStdString(nsys)});
    REQUIRE(loaded.wait(30000));
    REQUIRE(w.profile());
    CHECK(w.last_import() == QString::fromStdString(dir.file("mfu_2gpu.ssdb")));
    CHECK(w.profile()->ranks.size() == 2);
    CHECK(w.profile()->kernel_count == 3);
  }
  // The other way round: a Kineto .json.gz dropped, an nsys export through open_file.
  {
    const std::string gz = dir.file("dropped.json.gz");
    write_gz(gz, test::read_file(fixture("fsdp_rank1.json")));
    QSignalSpy loaded(&w, &gui::MainWindow::profileLoaded);
    drop(w, {QString::fromStdString(gz)});
    REQUIRE(loaded.wait(30000));
    CHECK(w.last_import() == QString::fromStdString(dir.file("dropped.ssdb")));
    CHECK(w.profile()->ranks.size() == 1);
    const std::string nsys2 = dir.file("second.sqlite");
    write_nsys(nsys2);
    REQUIRE(open_and_wait(w, QString::fromStdString(nsys2)));
    CHECK(w.last_import() == QString::fromStdString(dir.file("second.ssdb")));
    CHECK(w.profile()->kernel_count == 3);
  }
  // Two Kineto rank files of one job dropped together: one profile with both ranks.
  const std::string r1 = dir.file("job_rank1.json"), r0 = dir.file("job_rank0.json");
  std::string rank0 = test::read_file(fixture("fsdp_rank1.json"));
  const auto at = rank0.find("\"rank\": 1");
  REQUIRE(at != std::string::npos);
  rank0.replace(at, 9, "\"rank\": 0");
  test::write_file(r0, rank0);
  test::write_file(r1, test::read_file(fixture("fsdp_rank1.json")));
  {
    QSignalSpy loaded(&w, &gui::MainWindow::profileLoaded);
    drop(w, {QString::fromStdString(r0), QString::fromStdString(r1)});
    REQUIRE(loaded.wait(30000));
    CHECK(w.last_import() == QString::fromStdString(dir.file("job_rank-2-files.ssdb")));
    REQUIRE(w.profile()->ranks.size() == 2);
    CHECK(w.profile()->ranks[0].info.rank == 0);
    CHECK(w.profile()->ranks[1].info.rank == 1);
  }
  // File > Import with a chosen output (the dialog's answer).
  {
    QSignalSpy loaded(&w, &gui::MainWindow::profileLoaded);
    const QString out = QString::fromStdString(dir.file("both.ssdb"));
    w.import_files({QString::fromStdString(r0), QString::fromStdString(r1)}, out);
    REQUIRE(loaded.wait(30000));
    CHECK(w.last_import() == out);
    CHECK(QString::fromStdString(w.profile()->path) == out);
    CHECK(w.profile()->ranks.size() == 2);
  }
}

TEST_CASE("cancelling an import leaves no file; bad files give the importer's or reader's message", "[views][gui][import]") {
  app();
  test::TempDir dir;
  const std::string trace = dir.file("big.json");
  test::write_file(trace, big_kineto(300000));
  gui::MainWindow w;
  w.set_interactive(false);
  w.resize(1600, 1000);
  w.show();
  REQUIRE(QTest::qWaitForWindowExposed(&w));
  {
    QSignalSpy failed(&w, &gui::MainWindow::loadFailed);
    QSignalSpy loaded(&w, &gui::MainWindow::profileLoaded);
    w.open_file(QString::fromStdString(trace));
    w.cancel_loading();
    REQUIRE(failed.wait(60000));
    CHECK(loaded.isEmpty());
    CHECK(w.last_error().contains("cancelled"));
    CHECK_FALSE(w.showing_loading());
    CHECK(others(dir.path(), {"big.json"}).isEmpty());  // neither big.ssdb nor a partial file
    CHECK_FALSE(w.profile());
  }
  // A gzip that is not JSON: the importer's message names the file.
  const std::string bad_gz = dir.file("broken.json.gz");
  write_gz(bad_gz, "{\"traceEvents\": [ {\"ph\": ");
  {
    QSignalSpy failed(&w, &gui::MainWindow::loadFailed);
    w.open_file(QString::fromStdString(bad_gz));
    REQUIRE(failed.wait(30000));
    CHECK(w.last_error().contains("broken.json.gz"));
    CHECK_FALSE(QFileInfo::exists(QString::fromStdString(dir.file("broken.ssdb"))));
  }
  // A text file: the reader's message, as before.
  const std::string text = dir.file("notes.txt");
  test::write_file(text, "this is not a profile");
  {
    QSignalSpy failed(&w, &gui::MainWindow::loadFailed);
    w.open_file(QString::fromStdString(text));
    REQUIRE(failed.wait(30000));
    CHECK(w.last_error().contains("notes.txt"));
    CHECK(w.last_error().contains("SQLite"));
  }
}

TEST_CASE("an existing older file of the import's name is left alone: the import goes to the temp folder", "[views][gui][import]") {
  app();
  test::TempDir dir;
  const std::string trace = dir.file("run.json");
  const std::string theirs = dir.file("run.ssdb");
  test::write_file(theirs, "someone's file");
  test::write_file(trace, test::read_file(fixture("fsdp_rank1.json")));
  // run.ssdb older than the trace
  std::filesystem::last_write_time(theirs, std::filesystem::last_write_time(trace) - std::chrono::hours(1));
  const gui::ImportTarget target = gui::choose_import_target({QString::fromStdString(trace)});
  CHECK_FALSE(target.beside);
  CHECK_FALSE(target.reuse);
  CHECK(target.path.startsWith(gui::temporary_import_dir()));
  gui::MainWindow w;
  w.set_interactive(false);
  w.show();
  REQUIRE(QTest::qWaitForWindowExposed(&w));
  REQUIRE(open_and_wait(w, QString::fromStdString(trace)));
  CHECK(w.last_import() == target.path);
  CHECK(test::read_file(theirs) == "someone's file");
  QFile::remove(target.path);
}

TEST_CASE("a big profile shows its first kernel rows, usable, then the whole; a view moved meanwhile is kept", "[views][gui]") {
  app();
  test::TempDir dir;
  const std::string path = dir.file("big.ssdb");
  SyntheticSpec spec;
  spec.ranks = 4;
  spec.layers = 6;
  write_synthetic_profile(path, spec);
  gui::MainWindow w;
  w.set_interactive(false);
  w.resize(1600, 1000);
  w.show();
  REQUIRE(QTest::qWaitForWindowExposed(&w));
  w.set_first_part_rows(300);  // "big" = more than 600 kernel rows: this profile
  QSignalSpy first(&w, &gui::MainWindow::firstPartShown);
  QSignalSpy loaded(&w, &gui::MainWindow::profileLoaded);
  std::shared_ptr<const Profile> part;
  std::optional<timeline::Viewport> zoomed;
  QObject::connect(&w, &gui::MainWindow::firstPartShown, &w, [&] {
    part = w.profile();
    CHECK(w.showing_first_part());
    CHECK_FALSE(w.showing_loading());  // the timeline is shown and usable
    CHECK(&w.timeline()->controller()->profile() == part.get());
    // The user zooms into the part before the rest arrives.
    auto& v = w.timeline()->controller()->viewport();
    v.fit(static_cast<double>(part->time_begin), static_cast<double>(part->time_begin) + 1e5);
    zoomed = v;
  });
  w.open_file(QString::fromStdString(path));
  REQUIRE(loaded.wait(60000));
  REQUIRE(first.size() == 1);
  REQUIRE(part);
  CHECK(part->kernel_count == 300);
  CHECK(part->range_count == 0);  // the first pass reads kernels only
  REQUIRE(w.profile());
  CHECK(w.profile()->kernel_count > 600);
  CHECK(w.profile()->range_count > 0);
  CHECK_FALSE(w.showing_first_part());
  CHECK(&w.timeline()->controller()->profile() == w.profile().get());
  REQUIRE(zoomed);
  CHECK(w.timeline()->controller()->viewport().start_ns == Approx(zoomed->start_ns));
  CHECK(w.timeline()->controller()->viewport().ns_per_px == Approx(zoomed->ns_per_px));
}
