// The Analyses dock (issue 8): the result table model under QAbstractItemModelTester; the dock
// lists the discovered plugins and the refused libraries, runs a built-in analysis on a worker
// thread with the same result as a direct PluginHost::run, passes the selection to the plugin,
// shows a throwing plugin's error and keeps working, and a double-clicked finding asks for a jump
// to its time range and rank.
#include <catch2/catch.hpp>

#include <QAbstractItemModelTester>
#include <QHeaderView>
#include <QApplication>
#include <QCheckBox>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTabWidget>
#include <QTableView>
#include <QTest>
#include <algorithm>
#include <climits>

#include "plugins/host/plugin_host.h"
#include "profiler/synthetic/synthetic_profile.h"
#include "storage/profile_reader.h"
#include "tests/support/test_paths.h"
#include "tests/views/qt_test_app.h"
#include "views/analyses/analyses_dock.h"
#include "views/analyses/result_table_model.h"
#include "views/timeline/timeline_widget.h"
#include "views/timeline/timeline_controller.h"

using namespace ss;
using analyses::AnalysesDock;
using analyses::ResultTableModel;

namespace {
QApplication& app() { return test::qt_app(); }

std::shared_ptr<const Profile> profile() { return test::small_synthetic_profile(); }

const std::vector<std::string> kDirs = {SS_BUILTIN_PLUGIN_DIR, SS_TEST_PLUGIN_DIR};

// Runs `name` through the dock and waits for the worker thread to hand back the result.
void run_and_wait(AnalysesDock& dock, const QString& name) {
  QSignalSpy done(&dock, &AnalysesDock::finished);
  REQUIRE(dock.run(name));
  CHECK(dock.busy());
  CHECK_FALSE(dock.run_button()->isEnabled());  // no second run while one is going
  REQUIRE(done.wait(30000));
  CHECK_FALSE(dock.busy());
}

int find_item(const QListWidget* list, const QString& prefix) {
  for (int i = 0; i < list->count(); ++i)
    if (list->item(i)->text().startsWith(prefix)) return i;
  return -1;
}
}  // namespace

TEST_CASE("result table model passes QAbstractItemModelTester and sorts numbers numerically", "[views][gui]") {
  app();
  ResultTableModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  CHECK(model.rowCount() == 0);
  plugins::ResultTable t;
  t.name = "t";
  t.columns = {"name", "count", "share"};
  t.rows = {{std::string("b"), std::int64_t{9}, 0.25},
            {std::string("a"), std::int64_t{10}, 0.5},
            {SqlValue{}, std::int64_t{2}}};  // a short row with a null: empty cells
  model.set_table(t);
  REQUIRE(model.rowCount() == 3);
  REQUIRE(model.columnCount() == 3);
  CHECK(model.headerData(1, Qt::Horizontal).toString() == "count");
  CHECK(model.data(model.index(0, 0)).toString() == "b");
  CHECK(model.data(model.index(1, 1)).toLongLong() == 10);
  CHECK(model.data(model.index(0, 2)).toDouble() == 0.25);
  CHECK(model.data(model.index(2, 0)).isNull());
  CHECK(model.data(model.index(2, 2)).isNull());

  // Through a proxy, "count" sorts as numbers (2 < 9 < 10), not as text ("10" < "2" < "9").
  QSortFilterProxyModel proxy;
  proxy.setSourceModel(&model);
  proxy.sort(1, Qt::AscendingOrder);
  CHECK(proxy.data(proxy.index(0, 1)).toLongLong() == 2);
  CHECK(proxy.data(proxy.index(1, 1)).toLongLong() == 9);
  CHECK(proxy.data(proxy.index(2, 1)).toLongLong() == 10);

  model.set_table({});
  CHECK(model.rowCount() == 0);
  CHECK(model.columnCount() == 0);
}

TEST_CASE("the dock lists the plugins and the refused libraries", "[views][gui]") {
  app();
  AnalysesDock dock;
  dock.discover(kDirs);
  const auto& host = dock.host();
  REQUIRE(!host.plugins().empty());
  REQUIRE(!host.problems().empty());  // the test folder holds a wrong-version plugin
  CHECK(dock.plugin_list()->count() == static_cast<int>(host.plugins().size() + host.problems().size()));
  CHECK(find_item(dock.plugin_list(), "top-kernels") >= 0);
  CHECK(find_item(dock.plugin_list(), "not loaded: ss_test_wrong_version_plugin.so") >= 0);
  // No profile yet: nothing to run.
  CHECK_FALSE(dock.run_button()->isEnabled());
  CHECK_FALSE(dock.run("top-kernels"));
}

TEST_CASE("running a built-in analysis in the dock gives the tables of a direct run", "[views][gui]") {
  app();
  const auto p = profile();
  AnalysesDock dock;
  dock.discover(kDirs);
  dock.set_profile(p);
  dock.plugin_list()->setCurrentRow(find_item(dock.plugin_list(), "top-kernels"));
  CHECK(dock.run_button()->isEnabled());
  QSignalSpy done(&dock, &AnalysesDock::finished);
  QTest::mouseClick(dock.run_button(), Qt::LeftButton);  // as a user would
  REQUIRE(done.wait(30000));

  plugins::PluginHost direct;
  direct.discover({SS_BUILTIN_PLUGIN_DIR});
  const plugins::AnalysisResult expected = direct.run("top-kernels", *p);
  REQUIRE(expected.ok);
  REQUIRE(!expected.tables.empty());
  const auto& got = dock.result();
  REQUIRE(got.ok);
  REQUIRE(dock.table_tabs()->count() == static_cast<int>(expected.tables.size()));
  for (std::size_t t = 0; t < expected.tables.size(); ++t) {
    const auto& want = expected.tables[t];
    CHECK(dock.table_tabs()->tabText(static_cast<int>(t)).toStdString() == want.name);
    ResultTableModel* model = dock.table_model(static_cast<int>(t));
    REQUIRE(model);
    REQUIRE(model->rowCount() == static_cast<int>(want.rows.size()));
    REQUIRE(model->columnCount() == static_cast<int>(want.columns.size()));
    REQUIRE(!want.rows.empty());
    for (int c = 0; c < model->columnCount(); ++c)
      CHECK(model->table().columns[static_cast<std::size_t>(c)] == want.columns[static_cast<std::size_t>(c)]);
    for (int r = 0; r < model->rowCount(); ++r)
      for (int c = 0; c < model->columnCount(); ++c)
        CHECK(model->data(model->index(r, c), ResultTableModel::SortRole) ==
              ResultTableModel::to_variant(want.rows[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)]));
    // The view shows the same rows and is sortable.
    auto* view = qobject_cast<QTableView*>(dock.table_tabs()->widget(static_cast<int>(t)));
    REQUIRE(view);
    CHECK(view->isSortingEnabled());
    CHECK(view->model()->rowCount() == model->rowCount());
  }
  CHECK(dock.findings()->count() == static_cast<int>(expected.findings.size()));
}

TEST_CASE("the dock passes the selection and a double-clicked finding jumps to its range", "[views][gui]") {
  app();
  const auto p = profile();
  AnalysesDock dock;
  dock.discover(kDirs);
  dock.set_profile(p);
  const TimeNs from = p->time_begin + (p->time_end - p->time_begin) / 4;
  const TimeNs to = p->time_begin + (p->time_end - p->time_begin) / 2;
  dock.selection_source = [&] {
    plugins::Selection s;
    s.from = from;
    s.to = to;
    return s;
  };
  run_and_wait(dock, "test-echo");
  const auto& r = dock.result();
  REQUIRE(r.ok);
  // The echo plugin writes back the window it was given.
  const auto* echo = r.table("echo");
  REQUIRE(echo);
  const auto col = [&](const char* name) {
    for (std::size_t i = 0; i < echo->columns.size(); ++i)
      if (echo->columns[i] == name) return echo->rows.at(0).at(i);
    FAIL("no column " << name);
    return SqlValue{};
  };
  CHECK(std::get<std::int64_t>(col("from")) == from);
  CHECK(std::get<std::int64_t>(col("to")) == to);
  CHECK(dock.status()->text().contains("ms"));

  // Its finding (Problem, 10..20 ns on rank 1) is listed; a double-click asks for the jump.
  REQUIRE(dock.findings()->count() == 1);
  CHECK(dock.findings()->item(0)->text().contains("echo finding"));
  dock.show();
  QSignalSpy jump(&dock, &AnalysesDock::jumpRequested);
  QListWidget* list = dock.findings();
  const QPoint at = list->visualItemRect(list->item(0)).center();
  REQUIRE(QTest::qWaitForWindowExposed(&dock));
  QTest::mouseClick(list->viewport(), Qt::LeftButton, {}, at);  // the press a real double-click starts with
  CHECK(jump.isEmpty());                                         // a single click does not jump
  QTest::mouseDClick(list->viewport(), Qt::LeftButton, {}, at);
  REQUIRE(jump.count() == 1);
  CHECK(jump.first().at(0).toLongLong() == 10);
  CHECK(jump.first().at(1).toLongLong() == 20);
  CHECK(jump.first().at(2).toInt() == 1);
}

// A recording's time line holds its start-up before the first step (torchtitan: 57 % of the
// window); "Steps only" cuts the run's window to the recorded steps, inside a selection if any.
TEST_CASE("Steps only runs on the recorded steps, within the selection; disabled without steps", "[views][gui]") {
  app();
  const auto p = profile();  // 2 ranks, 2 steps each
  TimeNs first = INT64_MAX, last = INT64_MIN;
  for (const auto& r : p->ranks)
    for (const auto& st : r.steps) first = std::min(first, st.start), last = std::max(last, st.end);
  REQUIRE(first < last);
  AnalysesDock dock;
  dock.discover(kDirs);
  dock.set_profile(p);
  REQUIRE(dock.steps_only()->isEnabled());
  CHECK_FALSE(dock.steps_only()->isChecked());  // as `analyze` without --steps: the whole profile
  dock.steps_only()->setChecked(true);
  run_and_wait(dock, "test-echo");
  CHECK(dock.last_selection().from == first);
  CHECK(dock.last_selection().to == last);
  CHECK(dock.status()->text().contains("(recorded steps)"));
  // With a selection reaching past the last step: its start, the steps' end.
  const TimeNs mid = first + (last - first) / 2;
  dock.selection_source = [&] {
    plugins::Selection s;
    s.from = mid;
    s.to = last + 1'000'000'000;
    return s;
  };
  run_and_wait(dock, "test-echo");
  CHECK(dock.last_selection().from == mid);
  CHECK(dock.last_selection().to == last);
  // A selection after every step: refused with the reason, nothing runs.
  dock.selection_source = [&] {
    plugins::Selection s;
    s.from = last + 1;
    s.to = last + 2;
    return s;
  };
  CHECK_FALSE(dock.run("test-echo"));
  CHECK(dock.status()->text().contains("holds no recorded step"));

  // A profile without steps: the box is off and cannot be ticked.
  test::TempDir dir;
  dock.set_profile(test::edited_synthetic_profile(dir.file("nosteps.ssdb"), 1, 2, {"DELETE FROM steps"}));
  CHECK_FALSE(dock.steps_only()->isEnabled());
  CHECK_FALSE(dock.steps_only()->isChecked());
}

TEST_CASE("a throwing plugin's error is shown and the dock keeps working", "[views][gui]") {
  app();
  AnalysesDock dock;
  dock.discover(kDirs);
  dock.set_profile(profile());
  run_and_wait(dock, "test-throws");
  CHECK_FALSE(dock.result().ok);
  CHECK(dock.status()->text().contains("boom from the throwing plugin"));
  CHECK(dock.table_tabs()->count() == 0);
  run_and_wait(dock, "temporal");
  CHECK(dock.result().ok);
  CHECK(dock.table_tabs()->count() > 0);
  CHECK_FALSE(dock.run("no-such-analysis"));
}

TEST_CASE("the timeline's show_range (a finding's jump) shows the range and scrolls to the rank", "[views]") {
  const auto p = profile();
  timeline::TimelineController c(*p);
  c.set_size(1200, 150);  // short, so rank 1's tracks start below the fold
  c.fit_all();
  const TimeNs t0 = p->time_begin + (p->time_end - p->time_begin) / 3, t1 = t0 + 50'000;
  int last_rank = -1;
  for (const auto& t : c.tracks()) last_rank = std::max(last_rank, t.rank);
  REQUIRE(last_rank >= 1);
  std::int32_t first = -1;
  for (std::size_t i = 0; i < c.tracks().size() && first < 0; ++i)
    if (c.tracks()[i].rank == last_rank) first = static_cast<std::int32_t>(i);
  REQUIRE(c.track_y(first) > 150);  // below the fold before the jump
  c.show_range(t1, t0, last_rank);  // reversed bounds are accepted
  const auto& vp = c.viewport();
  CHECK(vp.start_ns < static_cast<double>(t0));
  CHECK(vp.end_ns() > static_cast<double>(t1));
  CHECK(vp.end_ns() - vp.start_ns < 2.0 * static_cast<double>(t1 - t0));  // zoomed in, a small margin
  // The rank's first track is now on screen (at the top, or as high as the scroll range allows).
  CHECK(c.scroll_y() > 0);
  CHECK(c.track_y(first) >= timeline::kRulerHeight);
  CHECK(c.track_y(first) < 150 - timeline::kRowHeight);
}

TEST_CASE("show_range of an instant centres it in a readable window", "[views]") {
  const auto p = profile();
  timeline::TimelineController c(*p);
  c.set_size(1200, 400);
  c.fit_all();
  const TimeNs t = p->time_begin + (p->time_end - p->time_begin) / 2;
  c.show_range(t, t);  // a memory peak's finding
  const auto& vp = c.viewport();
  const double mid = (vp.start_ns + vp.end_ns()) / 2;
  CHECK(std::abs(mid - static_cast<double>(t)) < vp.ns_per_px);  // centred, to the pixel
  CHECK(vp.end_ns() - vp.start_ns >= 20'000.0);
  CHECK(vp.end_ns() - vp.start_ns == Approx(std::max(20'000.0, 0.005 * double(p->time_end - p->time_begin))));
}

TEST_CASE("a finished run's markers and counter tracks are drawn on the connected timeline", "[views][gui]") {
  app();
  const auto p = profile();
  AnalysesDock dock;
  dock.discover(kDirs);
  dock.set_profile(p);
  timeline::TimelineWidget timeline;
  timeline.set_profile(p);
  analyses::connect_to_timeline(&dock, &timeline);
  const std::size_t rows = timeline.controller()->tracks().size();

  for (const char* name : {"temporal", "overlap"}) {
    INFO(name);
    run_and_wait(dock, name);
    const auto& r = dock.result();
    REQUIRE(r.ok);
    const auto* c = timeline.controller();
    CHECK(c->markers().size() == r.markers.size());
    REQUIRE(c->overlay_counters().size() == r.counters.size());
    // The previous run's tracks replaced: its counter rows, and one marker lane per rank with markers.
    CHECK(c->marker_lanes().size() <= p->ranks.size());
    CHECK(c->marker_lanes().empty() == r.markers.empty());
    CHECK(c->tracks().size() == rows + r.counters.size() + c->marker_lanes().size());
    for (std::size_t i = 0; i < r.counters.size(); ++i) {
      const auto& oc = c->overlay_counters()[i];
      CHECK(oc.rank == r.counters[i].rank);
      REQUIRE(oc.points.size() == r.counters[i].points.size());
      for (std::size_t k = 0; k < oc.points.size(); ++k)  // values back within the integer rounding
        CHECK(static_cast<double>(oc.points[k].value) / oc.value_scale == Approx(r.counters[i].points[k].second).margin(1e-6));
    }
    for (std::size_t i = 0; i < r.markers.size(); ++i) {
      CHECK(c->markers()[i].start == r.markers[i].start);
      CHECK(c->markers()[i].label == r.markers[i].label);
    }
  }
  // temporal makes one counter track per rank; overlap marks time ranges.
  run_and_wait(dock, "temporal");
  CHECK(timeline.controller()->overlay_counters().size() == p->ranks.size());
  run_and_wait(dock, "overlap");
  CHECK(!timeline.controller()->markers().empty());
}

TEST_CASE("result table: readable headers, cells with units, exact tooltips, sorting by value", "[views][gui]") {
  app();
  ResultTableModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  plugins::ResultTable t;
  t.name = "gaps";
  t.columns = {"name", "idle_ns", "peak_bytes", "start_ns", "share_pct", "count"};
  const TimeNs origin = 1'000'000'000;  // the profile's start: timestamps count from here
  t.rows = {{std::string("a"), std::int64_t{1'582'714}, std::int64_t{2'281'766'912}, origin + 2'500'000, 12.5, std::int64_t{3}},
            {std::string("b"), std::int64_t{900'000}, std::int64_t{512}, origin + 40'000, 100.0, std::int64_t{10}},
            {std::string("c"), std::int64_t{25'000'000}, SqlValue{}, origin, 0.25, std::int64_t{2}}};
  model.set_table(t, origin);
  REQUIRE(model.columnCount() == 6);
  // Headers without the unit suffix; the raw name (and what it counts) in the tooltip.
  CHECK(model.headerData(0, Qt::Horizontal).toString() == "name");
  CHECK(model.headerData(1, Qt::Horizontal).toString() == "idle");
  CHECK(model.headerData(2, Qt::Horizontal).toString() == "peak");
  CHECK(model.headerData(3, Qt::Horizontal).toString() == "start");
  CHECK(model.headerData(4, Qt::Horizontal).toString() == "share %");
  CHECK(model.headerData(1, Qt::Horizontal, Qt::ToolTipRole).toString().startsWith("idle_ns"));
  CHECK(model.headerData(3, Qt::Horizontal, Qt::ToolTipRole).toString().contains("since the profile's start"));
  // Cells read with units; a timestamp is time since the profile's start.
  CHECK(model.data(model.index(0, 1)).toString() == "1.583 ms");
  CHECK(model.data(model.index(0, 2)).toString() == "2.13 GiB");
  CHECK(model.data(model.index(0, 3)).toString() == "2.500 ms");
  CHECK(model.data(model.index(1, 1)).toString() == "900 us");
  CHECK(model.data(model.index(0, 4)).toString() == "12.5 %");
  CHECK(model.data(model.index(0, 5)).toLongLong() == 3);
  CHECK(model.data(model.index(2, 2)).isNull());
  // The exact value in the tooltip (and ExactRole).
  CHECK(model.data(model.index(0, 1), Qt::ToolTipRole).toString() == "1582714 ns");
  CHECK(model.data(model.index(0, 2), Qt::ToolTipRole).toString() == "2281766912 bytes");
  CHECK(model.data(model.index(0, 3), ResultTableModel::ExactRole).toString() == "2500000 ns since the profile's start");
  // Sorting by value: 900 us < 1.583 ms < 25.000 ms (as text "1.583 ms" < "25.000 ms" < "900 us").
  QSortFilterProxyModel proxy;
  proxy.setSourceModel(&model);
  proxy.setSortRole(ResultTableModel::SortRole);
  proxy.sort(1, Qt::AscendingOrder);
  CHECK(proxy.data(proxy.index(0, 0)).toString() == "b");
  CHECK(proxy.data(proxy.index(1, 0)).toString() == "a");
  CHECK(proxy.data(proxy.index(2, 0)).toString() == "c");
  proxy.sort(3, Qt::AscendingOrder);  // start: c (0) < b (40 us) < a (2.5 ms)
  CHECK(proxy.data(proxy.index(0, 0)).toString() == "c");
  CHECK(proxy.data(proxy.index(2, 0)).toString() == "a");
  // The copy keeps exact, raw values (absolute ns, bytes), as `analyze --format json` has them.
  const QStringList lines = model.to_tsv().split('\n', Qt::SkipEmptyParts);
  REQUIRE(lines.size() == 4);
  CHECK(lines[0] == "name\tidle_ns\tpeak_bytes\tstart_ns\tshare_pct\tcount");
  CHECK(lines[1] == "a\t1582714\t2281766912\t1002500000\t12.5\t3");
  CHECK(model.to_tsv({2}).split('\n', Qt::SkipEmptyParts).value(1) == "c\t25000000\t\t1000000000\t0.25\t2");
}

TEST_CASE("the dock shows formatted results sorted by value, table tall and headers visible", "[views][gui]") {
  app();
  const auto p = profile();
  AnalysesDock dock;
  dock.discover(kDirs);
  dock.set_profile(p);
  dock.resize(480, 800);
  dock.show();
  run_and_wait(dock, "top-kernels");
  REQUIRE(dock.result().ok);
  auto* view = qobject_cast<QTableView*>(dock.table_tabs()->widget(0));
  REQUIRE(view);
  ResultTableModel* model = dock.table_model(0);
  REQUIRE(model);
  const int total = model->table().columns.size() > 3 ? 3 : -1;  // "total_ns"
  REQUIRE(total == 3);
  CHECK(view->model()->headerData(total, Qt::Horizontal).toString() == "total");
  // Every column's header text fits in its section (top-kernels' header looked blank when a long
  // kernel name made column 0 thousands of pixels wide) and no column is wider than the cap.
  for (int c = 0; c < model->columnCount(); ++c) CHECK(view->horizontalHeader()->sectionSize(c) <= 400);
  // The view sorts by value: clicking "total" twice gives descending totals.
  view->sortByColumn(total, Qt::DescendingOrder);
  for (int r = 1; r < view->model()->rowCount(); ++r)
    CHECK(view->model()->data(view->model()->index(r - 1, total), ResultTableModel::SortRole).toLongLong() >=
          view->model()->data(view->model()->index(r, total), ResultTableModel::SortRole).toLongLong());
  CHECK(view->model()->data(view->model()->index(0, total)).toString().endsWith("s"));  // "... us" / "... ms"
  // The results take most of the dock: the table shows at least 8 rows, the list up to six plugins.
  QApplication::processEvents();
  CHECK(view->height() >= 8 * view->verticalHeader()->defaultSectionSize());
  CHECK(view->height() > dock.plugin_list()->height());
  CHECK(dock.plugin_list()->height() >= std::min(dock.plugin_list()->count(), 6) * dock.plugin_list()->sizeHintForRow(0));
  // Copy table: exact values, rows in the view's order.
  REQUIRE(dock.copy_button()->isEnabled());
  const QStringList lines = dock.table_text(0).split('\n', Qt::SkipEmptyParts);
  REQUIRE(lines.size() == view->model()->rowCount() + 1);
  CHECK(lines[1].section('\t', 3, 3).toLongLong() ==
        view->model()->data(view->model()->index(0, total), ResultTableModel::SortRole).toLongLong());
}
