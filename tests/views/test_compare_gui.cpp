// Issue 7 through the main window, the way a user works: open a measured profile, keep a unit
// unsharded in the Unshard dock (the prediction shown must be what `shardscope simulate --plan`
// prints for the same plan), compare the profile with that simulation in the Compare tab (a row
// click moves both timelines, the rank box re-aligns), save the comparison, open another
// profile, and reopen the saved comparison from the Comparisons dock: same profiles, same
// alignment, same plan. Needs an OpenGL context, so ctest runs it under xvfb-run.
#include <catch2/catch.hpp>

#include <QApplication>
#include <QTableWidget>
#include <QSpinBox>
#include <QPushButton>
#include <QComboBox>
#include <QDockWidget>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSignalSpy>
#include <QStatusBar>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableView>
#include <QTest>
#include <QValueAxis>
#include <map>

#include "app/gui/main_window.h"
#include "tests/support/test_paths.h"
#include "views/compare/compare_view.h"
#include "views/compare/comparisons_dock.h"
#include "views/compare/compare_table_model.h"
#include "views/compare/saved_comparison_model.h"
#include "views/memory/memory_chart.h"
#include "views/memory/memory_view.h"
#include "views/memory/module_tree_model.h"
#include "views/timeline/timeline_widget.h"
#include "views/unshard/byte_spin_box.h"
#include "views/unshard/unshard_panel.h"
#include "views/unshard/unshard_session.h"
#include "views/unshard/unshard_unit_model.h"

using namespace ss;

namespace {

QApplication& app() {
  static int argc = 1;
  static char name[] = "test_compare_gui";
  static char* argv[] = {name, nullptr};
  static QApplication* a = new QApplication(argc, argv);  // never destroyed (see test_timeline_gui)
  QStandardPaths::setTestModeEnabled(true);
  QApplication::setOrganizationName("ShardScopeTest");
  return *a;
}

std::string sample() { return test::source_dir() + "/resources/samples/synthetic-fsdp-4rank.ssdb"; }

// Runs the shardscope executable; returns its stdout, fails the test on a non-zero exit.
QByteArray shardscope(const QStringList& args) {
  QProcess p;
  p.start(QStringLiteral(SS_SHARDSCOPE_EXE), args);
  REQUIRE(p.waitForFinished(120000));
  INFO(p.readAllStandardError().toStdString());
  REQUIRE(p.exitCode() == 0);
  return p.readAllStandardOutput();
}

void open_and_wait(gui::MainWindow& w, const QString& path) {
  QSignalSpy loaded(&w, &gui::MainWindow::profileLoaded);
  w.open_file(path);
  REQUIRE(loaded.wait(60000));
}

bool shows(timeline::TimelineWidget* w, TimeNs t) {
  const auto& v = w->controller()->viewport();
  return v.start_ns <= static_cast<double>(t) && v.end_ns() > static_cast<double>(t);
}

}  // namespace

TEST_CASE("main window: unshard toggle equals simulate; compare, save and reopen a comparison", "[compare][gui]") {
  app();
  test::TempDir dir;
  const QString a = QString::fromStdString(sample());
  gui::MainWindow w;
  w.set_interactive(false);
  w.resize(1500, 950);
  w.show();
  open_and_wait(w, a);

  // 1. Unshard tab: keep layers.2 unsharded with its check box.
  w.show_unshard_tab();
  QApplication::processEvents();
  auto* panel = w.unshard_panel();
  REQUIRE(panel->session());
  auto* s = panel->session();
  const int unit = s->inputs().model.find_unit("layers.2");
  REQUIRE(unit >= 0);
  // On the default preset (fitted to the sample's collectives) layers.2's all-gathers hide behind
  // compute, so the step time may not move; its backward all-gather is gone either way.
  const int gathers = s->prediction().result.all_gathers;
  REQUIRE(panel->model()->setData(panel->model()->index_of_unit(unit), Qt::Checked, Qt::CheckStateRole));
  CHECK(s->prediction().result.all_gathers == gathers - 1);
  const QString plan = QString::fromStdString(dir.file("plan.json"));
  REQUIRE(panel->export_plan(plan));
  // The numbers shown are the command line's for the same plan.
  const QJsonObject cli = QJsonDocument::fromJson(shardscope({"simulate", a, "--plan", plan, "--format", "json"})).object();
  REQUIRE(cli.contains("step_time_ms"));
  CHECK(panel->step_text() == QString::number(cli["step_time_ms"].toDouble(), 'f', 3) + " ms");
  CHECK(static_cast<double>(s->prediction().peak_bytes) == cli["peak_memory_bytes"].toDouble());

  // 2. The simulation of that plan as profile B, in the Compare tab.
  const QString sim = QString::fromStdString(dir.file("whatif.ssdb"));
  shardscope({"simulate", a, "--plan", plan, "-o", sim});
  w.show_compare_tab();
  auto* cv = w.compare_view();
  CHECK(w.central_tabs()->currentWidget() == cv);
  REQUIRE(cv->compare_with(sim));
  QApplication::processEvents();
  // A click on the top row moves both timelines to that module.
  auto* table = cv->table();
  REQUIRE(table->model()->rowCount() > 0);
  QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, table->visualRect(table->model()->index(0, 0)).center());
  const QString fqn = table->model()->index(0, 0).data().toString();
  const auto& rows = cv->comparison()->modules;
  const auto row = std::find_if(rows.begin(), rows.end(), [&](const compare::ModuleDiff& m) {
    return (m.fqn.empty() ? QStringLiteral("(root)") : QString::fromStdString(m.fqn)) == fqn;
  });
  REQUIRE(row != rows.end());
  REQUIRE(row->first_a);
  REQUIRE(row->first_b);
  CHECK(shows(cv->timeline_a(), *row->first_a));
  CHECK(shows(cv->timeline_b(), *row->first_b));
  CHECK(cv->link_offset() == *row->first_a - *row->first_b);
  // The rank box: Down picks A's rank 1 and re-aligns.
  cv->rank_box(false)->setFocus();
  QTest::keyClick(cv->rank_box(false), Qt::Key_Down);
  CHECK(cv->alignment().rank_a == 1);
  CHECK(cv->comparison()->alignment.a.rank == 1);
  const compare::Alignment saved_alignment = cv->alignment();

  // 3. Save it (the button's dialog asks for a name; the dock's save is what it calls).
  REQUIRE(w.comparisons()->open_workspace(QString::fromStdString(dir.file("w.sscw"))));
  REQUIRE(w.comparisons()->save("what-if layers.2", cv->path_a(), cv->path_b(), cv->alignment(),
                                QString::fromStdString(s->plan_file_json()), "kept layers.2"));

  // 4. Open another profile, then reopen the saved comparison by double-clicking it.
  open_and_wait(w, sim);
  CHECK(w.profile()->origin.kind == OriginKind::Simulated);
  w.comparisons_dock()->show();
  w.comparisons_dock()->raise();
  QApplication::processEvents();
  auto* list = w.comparisons()->table();
  const int saved_row = w.comparisons()->model()->row_of("what-if layers.2");
  REQUIRE(saved_row >= 0);
  QSignalSpy loaded(&w, &gui::MainWindow::profileLoaded);
  const QPoint at = list->visualRect(list->model()->index(saved_row, 0)).center();
  QTest::mouseClick(list->viewport(), Qt::LeftButton, {}, at);
  QTest::mouseDClick(list->viewport(), Qt::LeftButton, {}, at);
  REQUIRE(loaded.wait(60000));
  CHECK(QFileInfo(QString::fromStdString(w.profile()->path)).absoluteFilePath() == QFileInfo(a).absoluteFilePath());
  CHECK(w.central_tabs()->currentWidget() == cv);
  CHECK(QFileInfo(cv->path_b()).absoluteFilePath() == QFileInfo(sim).absoluteFilePath());
  CHECK(cv->alignment() == saved_alignment);
  CHECK(cv->comparison()->alignment.a.rank == 1);
  // The plan came back: layers.2 kept unsharded, the same prediction as before.
  INFO("main window: " << w.last_error().toStdString() << "; panel: " << panel->last_error().toStdString() << "; status: " << w.statusBar()->currentMessage().toStdString());
  REQUIRE(panel->session());
  CHECK(panel->session()->state().keep[static_cast<std::size_t>(unit)]);
  CHECK(panel->step_text() == QString::number(cli["step_time_ms"].toDouble(), 'f', 3) + " ms");
}

TEST_CASE("main window: a new A drops B; Compare shown at load still fills the memory view; memory chart and timeline linked", "[compare][gui]") {
  app();
  const QString a = QString::fromStdString(test::source_dir() + "/resources/samples/cpu-fsdp2-llama-2rank.ssdb");
  const QString other = QString::fromStdString(sample());
  gui::MainWindow w;
  w.set_interactive(false);
  w.resize(1600, 1000);
  w.show();
  // What `gui A --compare B` does: compare and switch to the Compare tab as soon as A has loaded,
  // before the timeline has drawn a frame.
  auto once = QObject::connect(&w, &gui::MainWindow::profileLoaded, &w, [&] {
    REQUIRE(w.compare_view()->compare_with(a));
    w.show_compare_tab();
  });
  open_and_wait(w, a);
  QObject::disconnect(once);
  // The memory view fills although the Timeline tab never showed.
  for (int i = 0; i < 200 && w.memory_view()->model()->rowCount() == 0; ++i) QTest::qWait(20);
  CHECK(w.central_tabs()->currentWidget() == w.compare_view());
  CHECK(w.memory_view()->model()->rowCount() > 0);
  CHECK(w.memory_view()->chart()->title_text().contains("peak"));
  REQUIRE(w.compare_view()->comparison());

  // A new profile: the Compare view forgets B (no comparison across unrelated runs).
  open_and_wait(w, other);
  CHECK_FALSE(w.compare_view()->comparison().has_value());
  CHECK(w.compare_view()->path_b().isEmpty());
  CHECK(w.compare_view()->model()->rowCount() == 0);
  CHECK(w.compare_view()->timeline_b()->controller() == nullptr);
  CHECK(w.compare_view()->path_a() == other);

  // Back to A on the Timeline tab: a click on the memory chart centres the timeline on that time,
  // and the chart follows the timeline's window.
  open_and_wait(w, a);
  w.central_tabs()->setCurrentWidget(w.timeline());
  w.memory_dock()->show();
  w.memory_dock()->raise();
  for (int i = 0; i < 200 && w.memory_view()->model()->rowCount() == 0; ++i) QTest::qWait(20);
  QApplication::processEvents();
  auto* chart = w.memory_view()->chart();
  REQUIRE(chart->x_axis());
  const TimeNs t = w.profile()->time_begin + 1'500'000'000;
  const auto& before = w.timeline()->controller()->viewport();
  const double width = before.end_ns() - before.start_ns;
  emit chart->timeClicked(t);  // what a click at t does (the click's mapping is test_view_models')
  const auto& v = w.timeline()->controller()->viewport();
  CHECK((v.start_ns + v.end_ns()) / 2 == Approx(static_cast<double>(t)).margin(width * 0.01));
  CHECK(v.end_ns() - v.start_ns == Approx(width).epsilon(0.02));
  // showRange emitted viewportChanged: the chart shows the timeline's window (once input pauses).
  const double start_ms = (v.start_ns - static_cast<double>(w.profile()->time_begin)) / 1e6;
  CHECK(QTest::qWaitFor([&] { return std::abs(chart->x_axis()->min() - start_ms) < 1e-3; }, 3000));
  CHECK(chart->x_axis()->min() == Approx((v.start_ns - static_cast<double>(w.profile()->time_begin)) / 1e6).margin(1e-3));
  CHECK(chart->x_axis()->max() == Approx((v.end_ns() - static_cast<double>(w.profile()->time_begin)) / 1e6).margin(1e-3));
}

namespace {
// Where each of the panel's controls is, relative to the panel, after its layouts have settled.
std::map<QString, QPoint> control_positions(unshard::UnshardPanel& panel) {
  for (int i = 0; i < 5; ++i) QApplication::processEvents();
  std::map<QString, QPoint> at;
  for (QPushButton* b : panel.findChildren<QPushButton*>()) at["button " + b->text()] = b->mapTo(&panel, QPoint(0, 0));
  at["tp"] = panel.tp_box()->mapTo(&panel, QPoint(0, 0));
  at["pp"] = panel.pp_box()->mapTo(&panel, QPoint(0, 0));
  at["offload"] = panel.offload_box()->mapTo(&panel, QPoint(0, 0));
  at["budget"] = panel.budget_box()->mapTo(&panel, QPoint(0, 0));
  at["world"] = panel.world_box()->mapTo(&panel, QPoint(0, 0));
  at["preset"] = panel.preset_box()->mapTo(&panel, QPoint(0, 0));
  at["per node"] = panel.gpus_per_node_box()->mapTo(&panel, QPoint(0, 0));
  at["overrides"] = panel.bucket_overrides()->mapTo(&panel, QPoint(0, 0));
  return at;
}
// The controls that moved since `before`: "name: (x,y) -> (x,y)".
std::string moved(const std::map<QString, QPoint>& before, const std::map<QString, QPoint>& now) {
  std::string out;
  for (const auto& [name, p] : before)
    if (auto it = now.find(name); it == now.end() || it->second != p)
      out += name.toStdString() + ": (" + std::to_string(p.x()) + "," + std::to_string(p.y()) + ") -> (" +
             (it == now.end() ? std::string("gone") : std::to_string(it->second.x()) + "," + std::to_string(it->second.y())) + "); ";
  return out;
}
}  // namespace

TEST_CASE("the what-if panel's controls stay where they are through a refused change, its undo and a tp change", "[unshard][gui]") {
  // In the main window at 1600x1000, shown: the settings column scrolls as a user sees it.
  app();
  gui::MainWindow w;
  w.set_interactive(false);
  w.resize(1600, 1000);
  w.show();
  REQUIRE(QTest::qWaitForWindowExposed(&w));
  w.show_unshard_tab();
  unshard::UnshardPanel& panel = *w.unshard_panel();
  REQUIRE(panel.open_model_description(QString::fromStdString(test::source_dir() + "/resources/models/llama3-8b.json"), 64));
  control_positions(panel);  // a first pass settles what the first layout left pending
  const auto before = control_positions(panel);
  REQUIRE(before.count("button Undo"));
  REQUIRE(before.count("button Export plan…"));
  // pp 2, then offload to the CPU: refused ("offload together with pipeline parallelism is not
  // modelled"); the red line shows below the last control.
  panel.pp_box()->setValue(2);
  panel.offload_box()->setCurrentIndex(panel.offload_box()->findData(QStringLiteral("cpu")));
  CHECK(panel.error_text().contains("offload together with pipeline"));
  CHECK(moved(before, control_positions(panel)) == "");
  // Undo back to the baseline: the refusal's line and its status go, nothing moves.
  panel.undo();
  panel.undo();
  CHECK(panel.error_text().isEmpty());
  CHECK_FALSE(panel.status_text().startsWith("Not simulated"));
  CHECK(moved(before, control_positions(panel)) == "");
  if (const char* shots = std::getenv("SHARDSCOPE_SCREENSHOT_DIR")) {  // for docs/screenshots
    for (auto* dock : w.findChildren<QDockWidget*>()) dock->hide();  // the tab gets the window, as gui --model shows it
    for (int i = 0; i < 5; ++i) QApplication::processEvents();
    CHECK(w.grab().save(QString::fromUtf8(shots) + "/whatif-panel-after-undo.png"));
    for (auto* dock : w.findChildren<QDockWidget*>()) dock->show();
  }
  // tp 8 with sequence parallelism: longer summaries, the controls stay.
  panel.tp_box()->setValue(8);
  CHECK(panel.whatif_text().contains("TP"));
  CHECK(moved(before, control_positions(panel)) == "");
}
