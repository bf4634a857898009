// The item models under QAbstractItemModelTester, sorting and filtering through the proxy, and the
// aggregate table model.
#include <catch2/catch.hpp>

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QLineEdit>
#include <QAbstractSeries>
#include <QChart>
#include <QChartView>
#include <QMouseEvent>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTest>
#include <QTreeView>
#include <QValueAxis>
#include <QXYSeries>

#include "profiler/synthetic/synthetic_profile.h"
#include "storage/profile_reader.h"
#include "storage/units.h"
#include "tests/support/test_paths.h"
#include "tests/views/qt_test_app.h"
#include "views/memory/memory_axis.h"
#include "views/memory/memory_chart.h"
#include "views/memory/memory_view.h"
#include "views/memory/module_tree_model.h"
#include "views/timeline/aggregate_model.h"

using namespace ss;

namespace {
QApplication& app() { return test::qt_app(); }

std::shared_ptr<const Profile> profile() { return test::small_synthetic_profile(); }

int count_rows(const QAbstractItemModel& m, const QModelIndex& parent = {}) {
  int n = 0;
  for (int r = 0; r < m.rowCount(parent); ++r) n += 1 + count_rows(m, m.index(r, 0, parent));
  return n;
}
}  // namespace

TEST_CASE("module tree model passes QAbstractItemModelTester and mirrors the module tree", "[views][gui]") {
  app();
  const auto p = profile();
  memview::ModuleTreeModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  model.set_data(p, memview::compute_module_memory(*p, 0));
  CHECK(count_rows(model) == static_cast<int>(p->modules.size()));
  CHECK(model.columnCount() == 1 + memview::kColumnCount);
  // Every module maps to an index whose data names it, and parent() leads to its parent.
  for (std::size_t i = 0; i < p->modules.size(); ++i) {
    const QModelIndex idx = model.index_of_module(static_cast<int>(i));
    REQUIRE(idx.isValid());
    CHECK(model.data(idx, memview::ModuleTreeModel::kFqnRole).toString().toStdString() == p->modules[i].fqn);
    const QModelIndex parent = model.parent(idx);
    if (p->modules[i].parent < 0)
      CHECK(!parent.isValid());
    else
      CHECK(parent.data(memview::ModuleTreeModel::kModuleRole).toInt() == p->modules[i].parent);
  }
  // The full module path, as the chart and the timeline name it ("layers.2.attention", not "attention").
  const int attention = p->find_module("layers.2.attention");
  REQUIRE(attention >= 0);
  CHECK(model.data(model.index_of_module(attention)).toString().startsWith("layers.2.attention"));
  // Missing figures show as a dash.
  const QModelIndex root = model.index(0, 1 + memview::kOptimizerStates);
  CHECK(model.data(root).toString() == QString::fromUtf8("\u2014"));
}

// torchtitan's pipeline: a rank runs its stages only, the modules table is every rank's; the tree
// showed the other stages' modules with 0 B beside its own, as if they were empty.
TEST_CASE("module tree of a pipelined recording: other stages' modules are marked, not listed as empty", "[views][gui]") {
  app();
  test::TempDir dir;
  // Rank 0 holds layers 0 and 1: the other layers' ranges there go, and the pipeline is noted.
  const auto p = test::edited_synthetic_profile(
      dir.file("pp.ssdb"), 2, 4,
      {"INSERT INTO meta VALUES ('rank0.pipeline', 'Schedule1F1B stages=2 ranks=2 local=0 microbatches=2')",
       "DELETE FROM ranges WHERE rank = 0 AND module_id IN (SELECT id FROM modules WHERE fqn LIKE 'layers.2%' OR "
       "fqn LIKE 'layers.3%')"});
  memview::ModuleTreeModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  model.set_data(p, memview::compute_module_memory(*p, 0));
  CHECK(count_rows(model) == static_cast<int>(p->modules.size()));  // still every module, marked
  auto name_of = [&](const char* fqn) { return model.index_of_module(p->find_module(fqn)).data().toString(); };
  CHECK(name_of("layers.2").endsWith("(another stage)"));
  CHECK(name_of("layers.3.attention").endsWith("(another stage)"));
  CHECK_FALSE(name_of("layers.1").endsWith("(another stage)"));
  CHECK_FALSE(name_of("layers.1.attention").endsWith("(another stage)"));
  CHECK_FALSE(name_of("").endsWith("(another stage)"));  // the root runs its stage's part
  CHECK(model.index_of_module(p->find_module("layers.2")).data(Qt::ForegroundRole).isValid());
  CHECK_FALSE(model.index_of_module(p->find_module("layers.1")).data(Qt::ForegroundRole).isValid());
  // Rank 1 is not pipelined in this profile (no meta): nothing is marked.
  model.set_data(p, memview::compute_module_memory(*p, 1));
  CHECK_FALSE(name_of("layers.2").endsWith("(another stage)"));
}

TEST_CASE("memory view sorts and filters through the proxy; chart names the peak", "[views][gui]") {
  app();
  const auto p = profile();
  memview::MemoryView view;
  QAbstractItemModelTester tester(view.proxy(), QAbstractItemModelTester::FailureReportingMode::Fatal);
  view.set_profile(p);
  view.filter()->setText("attention");
  // Only attention modules and their ancestors remain: root, layers.K, layers.K.attention.
  int attention = 0;
  for (const auto& m : p->modules) attention += m.fqn.find("attention") != std::string::npos;
  REQUIRE(attention == 4);
  CHECK(count_rows(*view.proxy()) == 1 + 4 + 4);
  view.filter()->clear();
  CHECK(count_rows(*view.proxy()) == static_cast<int>(p->modules.size()));
  // Sorting the children of the root by gradient bytes, largest first.
  view.proxy()->sort(1 + memview::kGradients, Qt::DescendingOrder);
  const QModelIndex root = view.proxy()->index(0, 0);
  qlonglong last = std::numeric_limits<qlonglong>::max();
  for (int r = 0; r < view.proxy()->rowCount(root); ++r) {
    const qlonglong v = view.proxy()->index(r, 1 + memview::kGradients, root).data(Qt::UserRole).toLongLong();
    CHECK(v <= last);
    last = v;
  }
  // Selecting a module from outside does not echo the signal back.
  int echoed = 0;
  QObject::connect(&view, &memview::MemoryView::moduleSelected, [&](int) { ++echoed; });
  const int module = p->find_module("layers.2.feed_forward");
  view.selectModule(module);
  CHECK(view.selected_module() == module);
  CHECK(echoed == 0);
  const QString title = view.chart()->title_text();
  CHECK(title.contains("peak"));
  const auto& stats = view.model()->stats();
  REQUIRE(stats.series.peak_module >= 0);
  CHECK(title.contains(QString::fromStdString(p->modules[static_cast<std::size_t>(stats.series.peak_module)].fqn)));
}

TEST_CASE("aggregate table model", "[views][gui]") {
  app();
  timeline::AggregateModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  model.set_rows({{"a", 2, 300, 150, 0.75}, {"b", 1, 100, 100, 0.25}});
  REQUIRE(model.rowCount() == 2);
  CHECK(model.data(model.index(0, timeline::AggregateModel::Count), Qt::UserRole).toLongLong() == 2);
  CHECK(model.data(model.index(1, timeline::AggregateModel::Share), Qt::UserRole).toDouble() == Approx(0.25));
  CHECK(model.data(model.index(0, timeline::AggregateModel::Share)).toString() == "75.0 %");
}

namespace {
// A mouse event sent to the chart's viewport at `pos` (hover without buttons, or a left press).
void send_mouse(memview::MemoryChart* chart, QEvent::Type type, QPoint pos, Qt::MouseButton button = Qt::NoButton) {
  QWidget* vp = chart->view()->viewport();
  QMouseEvent e(type, QPointF(pos), vp->mapToGlobal(QPointF(pos)), button, button == Qt::NoButton ? Qt::NoButton : Qt::MouseButtons(button),
                Qt::NoModifier);
  QApplication::sendEvent(vp, &e);
}
}  // namespace

TEST_CASE("memory chart on the real CPU sample: names, units, hover readout, click to time, range and module", "[views][gui]") {
  app();
  const auto p = std::make_shared<const Profile>(load_profile(test::source_dir() + "/resources/samples/cpu-fsdp2-llama-2rank.ssdb"));
  memview::MemoryView view;
  view.resize(1400, 700);
  view.show();
  view.set_profile(p);
  QApplication::processEvents();
  auto* chart = view.chart();
  const auto& series = view.model()->stats().series;
  REQUIRE(series.times.size() > 100);

  // Legend: the categories' names, never the file's identifiers.
  const QStringList names = chart->legend_names();
  CHECK(names.contains("Gradients"));
  CHECK(names.contains("Activations"));
  CHECK(names.contains("Sharded parameters"));
  for (const QString& n : names) CHECK_FALSE(n.contains('_'));
  // Units from the range: the sample peaks at about 100 MiB, so the axis counts MiB; round ticks.
  CHECK(series.peak_bytes > (50LL << 20));
  CHECK(series.peak_bytes < (1LL << 30));
  CHECK(chart->y_axis()->titleText() == "memory (MiB)");
  CHECK(chart->x_axis()->titleText().contains("ms"));
  for (QValueAxis* axis : {chart->x_axis(), chart->y_axis()}) {
    const double step = axis->tickInterval();
    const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-12));
    CHECK((std::abs(mantissa - 1) < 1e-9 || std::abs(mantissa - 2) < 1e-9 || std::abs(mantissa - 5) < 1e-9));
    CHECK(axis->tickType() == QValueAxis::TicksDynamic);
  }
  CHECK(chart->y_axis()->max() * (1 << 20) >= static_cast<double>(series.peak_bytes));
  CHECK(std::abs(chart->y_axis()->max() / chart->y_axis()->tickInterval() - std::round(chart->y_axis()->max() / chart->y_axis()->tickInterval())) < 1e-6);
  // The time axis starts at the profile's start (the timeline ruler's 0) and runs to its end (or
  // the last memory event, which the recorder may log after the last traced event).
  CHECK(chart->x_axis()->min() == 0);
  CHECK(chart->x_axis()->max() == Approx(static_cast<double>(std::max(p->time_end, series.times.back()) - p->time_begin) / 1e6));

  // Hover over a sample's time: the readout gives that time and the totals there.
  const TimeNs t = series.times[series.times.size() / 2];
  send_mouse(chart, QEvent::MouseMove, chart->point_of(t));
  const auto at = chart->time_at(chart->point_of(t));
  REQUIRE(at);
  const memview::MemoryReadout r = memview::readout_at(series, *at);
  REQUIRE(r.valid);
  const QString text = chart->readout_text();
  CHECK(text.contains(QString::fromStdString(format_duration_ns(*at - p->time_begin))));
  CHECK(text.contains("total <b>" + memview::format_bytes(r.total) + "</b>"));
  CHECK(text.contains("Gradients " + memview::format_bytes(r.by_category[static_cast<std::size_t>(MemoryCategory::Gradient)])));
  // One pixel is a few ms here: the time under the cursor is within a pixel of t.
  const double ns_per_px = (chart->x_axis()->max() - chart->x_axis()->min()) * 1e6 / chart->view()->chart()->plotArea().width();
  CHECK(std::abs(static_cast<double>(*at - t)) <= ns_per_px);

  // A left click emits the profile time under the cursor (what the main window moves the timeline to).
  QSignalSpy clicked(&view, &memview::MemoryView::timeClicked);
  send_mouse(chart, QEvent::MouseButtonPress, chart->point_of(t), Qt::LeftButton);
  REQUIRE(clicked.count() == 1);
  CHECK(std::abs(static_cast<double>(clicked.first().at(0).toLongLong() - t)) <= ns_per_px);
  // Outside the plot: no time.
  send_mouse(chart, QEvent::MouseButtonPress, QPoint(1, 1), Qt::LeftButton);
  CHECK(clicked.count() == 1);

  // The timeline's visible range: the time axis shows it, with round ticks.
  const TimeNs t0 = p->time_begin + 1'200'000'000, t1 = p->time_begin + 1'350'000'000;
  view.setTimeRange(p->time_begin, p->time_end);  // a zoom gesture: many calls, the chart follows the last
  view.setTimeRange(t0, t1);
  CHECK(QTest::qWaitFor([&] { return chart->x_axis()->min() > 1.0; }, 2000));
  CHECK(chart->x_axis()->min() == Approx(1200.0));
  CHECK(chart->x_axis()->max() == Approx(1350.0));
  CHECK(chart->x_axis()->tickInterval() == Approx(20.0));
  QApplication::processEvents();
  // Zoomed to 150 ms of 2.6 s: the areas are re-sampled from the events, and the readout at an
  // event time inside the window is the exact sum of every event up to it.
  const auto& shown = chart->shown_series();
  REQUIRE(shown.times.size() > 20);
  CHECK(shown.times.front() == t0);
  CHECK(shown.times.back() == t1);
  const TimeNs inside = shown.times[shown.times.size() / 2];
  chart->hover_time(inside);
  std::int64_t exact = 0;
  for (const auto& e : *view.model()->stats().events)
    if (e.time <= inside) exact += e.bytes;
  CHECK(chart->readout_text().contains("total <b>" + memview::format_bytes(exact) + "</b>"));
  CHECK(memview::readout_at(shown, inside).total == exact);
  // A click now maps through the zoomed axis.
  send_mouse(chart, QEvent::MouseButtonPress, chart->point_of(p->time_begin + 1'300'000'000), Qt::LeftButton);
  REQUIRE(clicked.count() == 2);
  CHECK(std::abs(static_cast<double>(clicked.last().at(0).toLongLong() - (p->time_begin + 1'300'000'000))) < 1e6);

  // Selecting a module highlights it: a line named after it (its attributed bytes) and its ranges.
  const int module = p->find_module("layers.1");
  REQUIRE(module >= 0);
  view.selectModule(module);
  CHECK(chart->highlighted_module() == "layers.1");
  const memview::ModuleSeries m = memview::compute_module_series(*p, 0, module);
  bool line = false, band = false;
  for (QAbstractSeries* s : chart->view()->chart()->series()) {
    if (s->name() == "layers.1") {
      line = true;
      double top = 0;
      for (const QPointF& pt : static_cast<QXYSeries*>(s)->points()) top = std::max(top, pt.y());
      CHECK(top * chart->unit().bytes == Approx(static_cast<double>(m.peak_bytes)));
    }
    band = band || s->name() == "layers.1 running";
  }
  CHECK(line);
  CHECK(band);
  CHECK(chart->readout_text().contains("layers.1"));
  // Back to the whole profile: the whole-profile samples again.
  view.setTimeRange(p->time_begin, p->time_end);
  CHECK(QTest::qWaitFor([&] { return chart->x_axis()->min() < 1.0; }, 2000));
  CHECK(chart->shown_series().times == series.times);
  view.selectModule(p->find_module("norm"));
  CHECK(chart->highlighted_module() == "norm");
  int named = 0;
  for (QAbstractSeries* s : chart->view()->chart()->series()) named += s->name().startsWith("layers.1");
  CHECK(named == 0);  // the previous highlight is gone
}

TEST_CASE("memory chart: a deep zoom and back to the whole profile never lays out more ticks than the target", "[views][gui]") {
  app();
  const auto p = std::make_shared<const Profile>(load_profile(test::source_dir() + "/resources/samples/cpu-fsdp2-llama-2rank.ssdb"));
  memview::MemoryView view;
  view.resize(1400, 700);
  view.show();
  view.set_profile(p);
  QApplication::processEvents();
  auto* chart = view.chart();
  QValueAxis* ax = chart->x_axis();
  // Every state Qt Charts lays out (each range or step change) has at most this many ticks.
  double most = 0;
  const auto count = [&] {
    if (ax->tickInterval() > 0) most = std::max(most, (ax->max() - ax->min()) / ax->tickInterval());
  };
  QObject::connect(ax, &QValueAxis::rangeChanged, count);
  QObject::connect(ax, &QValueAxis::tickIntervalChanged, count);
  const TimeNs mid = p->time_begin + (p->time_end - p->time_begin) / 2;
  for (TimeNs window : {TimeNs{3'000'000}, TimeNs{130'000}, TimeNs{2'000}}) {
    chart->set_time_range(mid, mid + window);  // a deep zoom: a step of microseconds
    CHECK(ax->max() - ax->min() == Approx(static_cast<double>(window) / 1e6));
    chart->set_time_range(p->time_begin, p->time_end);  // Ctrl+0
    CHECK(ax->min() == Approx(0.0));
    CHECK(ax->max() == Approx(static_cast<double>(p->time_end - p->time_begin) / 1e6));
    chart->set_time_range(mid + window, mid + 2 * window);  // and in again
  }
  CHECK(most > 0);
  CHECK(most <= 9.0 + 1e-9);  // nice_ticks(target 8): at most 8 steps, plus rounding
}

TEST_CASE("memory chart on a long profile counts seconds on its time axis", "[views][gui]") {
  app();
  test::TempDir dir;
  SyntheticSpec spec;
  spec.ranks = 1;
  spec.layers = 2;
  spec.steps = 2600;  // about 12 s
  write_synthetic_profile(dir.file("long.ssdb"), spec);
  const auto p = std::make_shared<const Profile>(load_profile(dir.file("long.ssdb")));
  REQUIRE(p->time_end - p->time_begin > 10'000'000'000);
  memview::MemoryView view;
  view.resize(1400, 700);
  view.show();
  view.set_profile(p);
  QApplication::processEvents();
  auto* chart = view.chart();
  CHECK(chart->x_axis()->titleText() == "time since profile start (s)");
  CHECK(chart->x_axis()->max() == Approx(static_cast<double>(p->time_end - p->time_begin) / 1e9).epsilon(0.01));
  CHECK(chart->x_axis()->max() < 100);
  // Time and position still map to each other through the seconds axis.
  const TimeNs t = p->time_begin + (p->time_end - p->time_begin) / 3;
  const auto back = chart->time_at(chart->point_of(t));
  REQUIRE(back);
  const double ns_per_px = (chart->x_axis()->max() - chart->x_axis()->min()) * 1e9 / chart->view()->chart()->plotArea().width();
  CHECK(std::abs(static_cast<double>(*back - t)) <= ns_per_px);
  // The title and the readout use the one set of unit rules.
  const auto& peak = view.model()->stats().series;
  CHECK(chart->title_text().contains(" at " + QString::fromStdString(format_duration_ns(peak.peak_time - p->time_begin)) + " in "));
}

TEST_CASE("memory chart placeholder follows a palette set after it was made (no white box in the dark palette)", "[views][gui]") {
  app();
  memview::MemoryView view;  // made with the default (light) palette
  view.set_profile(nullptr);
  auto* chart = view.chart();
  CHECK(chart->view()->chart()->theme() != QChart::ChartThemeDark);
  QPalette dark = view.palette();
  dark.setColor(QPalette::Window, QColor(40, 40, 46));
  dark.setColor(QPalette::Base, QColor(30, 30, 34));
  view.setPalette(dark);  // as MainWindow::set_dark does for the whole app
  QApplication::processEvents();
  CHECK(chart->view()->chart()->theme() == QChart::ChartThemeDark);
  CHECK(chart->title_text().contains("open a profile"));
}
