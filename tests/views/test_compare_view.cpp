// The Compare view and the Comparisons dock: the table models under QAbstractItemModelTester;
// the rows shown being compare_profiles' rows (the numbers `shardscope diff --by module` prints);
// the step and rank boxes re-aligning; the two timelines staying linked under zoom and pan; a row
// click moving both to the module; and saved comparisons reopened exactly as saved.
#include <catch2/catch.hpp>

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QLayout>
#include <QCheckBox>
#include <QComboBox>
#include <QFileInfo>
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QTableView>
#include <QTest>
#include <QWheelEvent>
#include <cmath>
#include <set>

#include "profiler/compare/comparison.h"
#include "profiler/synthetic/synthetic_profile.h"
#include "storage/profile_reader.h"
#include "tests/support/test_paths.h"
#include "tests/views/qt_test_app.h"
#include "views/compare/compare_filter_proxy.h"
#include "views/compare/compare_table_model.h"
#include "views/compare/compare_view.h"
#include "views/compare/comparisons_dock.h"
#include "views/compare/lane_folding.h"
#include "views/compare/saved_comparison_model.h"
#include "views/compare/sort_arrow_header.h"
#include "views/timeline/timeline_widget.h"

using namespace ss;
using namespace ss::compareview;

namespace {

QApplication& app() { return test::qt_app(); }

// Two synthetic runs of the same model (different kernel durations: every module's time moves),
// three steps each.
struct TwoRuns {
  test::TempDir dir;
  std::string a = dir.file("a.ssdb"), b = dir.file("b.ssdb");
  std::shared_ptr<const Profile> pa;
  TwoRuns() {
    SyntheticSpec sa;
    sa.layers = 4;
    sa.steps = 3;
    SyntheticSpec sb = sa;
    sb.seed = 7;
    write_synthetic_profile(a, sa);
    write_synthetic_profile(b, sb);
    pa = std::make_shared<const Profile>(load_profile(a));
  }
  QString qa() const { return QString::fromStdString(a); }
  QString qb() const { return QString::fromStdString(b); }
};

const timeline::Viewport& viewport(timeline::TimelineWidget* w) { return w->controller()->viewport(); }

bool shows_time(timeline::TimelineWidget* w, TimeNs t) {
  return viewport(w).start_ns <= static_cast<double>(t) && viewport(w).end_ns() > static_cast<double>(t);
}

// B's view is A's view moved by the link offset, at the same scale.
void check_linked(CompareView& view) {
  const auto& va = viewport(view.timeline_a());
  const auto& vb = viewport(view.timeline_b());
  CHECK(vb.ns_per_px == va.ns_per_px);
  CHECK(std::abs((va.start_ns - vb.start_ns) - static_cast<double>(view.link_offset())) < 1e-3);
}

}  // namespace

TEST_CASE("compare view shows compare_profiles' per-module rows for A vs B", "[compare][gui]") {
  app();
  TwoRuns runs;
  CompareView view;
  QAbstractItemModelTester tester(view.model(), QAbstractItemModelTester::FailureReportingMode::Fatal);
  view.set_profile(runs.pa, runs.qa());
  CHECK(view.model()->rowCount() == 0);
  REQUIRE(view.compare_with(runs.qb()));

  const Profile b = load_profile(runs.b);
  const compare::Comparison c = compare::compare_profiles(*runs.pa, b, compare::Alignment{});
  REQUIRE(!c.modules.empty());
  REQUIRE(view.model()->rowCount() == static_cast<int>(c.modules.size()));
  for (std::size_t i = 0; i < c.modules.size(); ++i) {
    const auto& r = view.model()->rows()[i];
    CHECK(r.fqn == c.modules[i].fqn);
    CHECK(r.time.a == c.modules[i].time.a);
    CHECK(r.time.b == c.modules[i].time.b);
  }
  // The view sorts by |delta|, largest first, like the command line.
  auto* table = view.table();
  const auto first = table->model()->index(0, CompareTableModel::ColDelta).data(CompareTableModel::SortRole).toLongLong();
  const auto last = table->model()->index(table->model()->rowCount() - 1, CompareTableModel::ColDelta).data(CompareTableModel::SortRole).toLongLong();
  CHECK(first >= last);
  CHECK(first == std::llabs(c.modules.front().time.delta()));
  CHECK(view.headline_text().contains("step time"));

  // Both timelines show their profile; B's is linked to A's at the step alignment.
  REQUIRE(view.timeline_a()->controller());
  REQUIRE(view.timeline_b()->controller());
  CHECK(&view.timeline_b()->controller()->profile() != &view.timeline_a()->controller()->profile());
  CHECK(view.link_offset() == c.alignment.b_to_a_offset());
  check_linked(view);

  // A profile compared with itself: every delta is 0.
  REQUIRE(view.compare_with(runs.qa()));
  for (const auto& r : view.model()->rows()) CHECK(r.time.delta() == 0);

  // A file that is not a profile: refused with a message, the table kept.
  const int rows = view.model()->rowCount();
  test::write_file(runs.dir.file("bad.ssdb"), "not a database");
  CHECK_FALSE(view.compare_with(QString::fromStdString(runs.dir.file("bad.ssdb"))));
  CHECK_FALSE(view.last_error().isEmpty());
  CHECK(view.model()->rowCount() == rows);
}

TEST_CASE("compare view: step and rank boxes re-align; a missing step is refused", "[compare][gui]") {
  app();
  TwoRuns runs;
  CompareView view;
  view.set_profile(runs.pa, runs.qa());
  REQUIRE(view.compare_with(runs.qb()));
  const Profile b = load_profile(runs.b);
  const RankModel* ra = runs.pa->rank(1);
  REQUIRE(ra);
  REQUIRE(ra->steps.size() >= 3);
  // The boxes list the ranks and each rank's steps (after "auto").
  CHECK(view.rank_box(false)->count() == static_cast<int>(runs.pa->ranks.size()));
  CHECK(view.step_box(false)->count() == static_cast<int>(runs.pa->rank(0)->steps.size()) + 1);

  // Rank 1, step (second) on A against rank 0, step (third) on B: the table is compare_profiles'
  // for that alignment, and the boxes show it.
  compare::Alignment al;
  al.rank_a = 1;
  al.rank_b = 0;
  al.step_a = ra->steps[1].number;
  al.step_b = b.rank(0)->steps[2].number;
  REQUIRE(view.set_alignment(al));
  const compare::Comparison c = compare::compare_profiles(*runs.pa, b, al);
  CHECK(view.alignment() == al);
  CHECK(view.comparison()->alignment.a.start == ra->steps[1].start);
  CHECK(view.comparison()->alignment.b.start == b.rank(0)->steps[2].start);
  REQUIRE(view.model()->rowCount() == static_cast<int>(c.modules.size()));
  for (std::size_t i = 0; i < c.modules.size(); ++i) CHECK(view.model()->rows()[i].time.b == c.modules[i].time.b);
  CHECK(view.rank_box(false)->currentData().toInt() == 1);
  CHECK(view.step_box(false)->currentData().toLongLong() == *al.step_a);
  CHECK(view.step_box(true)->currentData().toLongLong() == *al.step_b);
  CHECK(view.link_offset() == ra->steps[1].start - b.rank(0)->steps[2].start);
  check_linked(view);

  // A step that B lacks: refused, the previous alignment and rows kept.
  compare::Alignment bad = al;
  bad.step_b = 9999;
  CHECK_FALSE(view.set_alignment(bad));
  CHECK(view.last_error().contains("9999"));
  CHECK(view.alignment() == al);
  CHECK(view.model()->rowCount() == static_cast<int>(c.modules.size()));
}

TEST_CASE("compare view: zoom and pan on either timeline move the other; a row click moves both to the module", "[compare][gui]") {
  app();
  TwoRuns runs;
  CompareView view;
  view.resize(1200, 900);
  view.set_profile(runs.pa, runs.qa());
  REQUIRE(view.compare_with(runs.qb()));
  auto* ta = view.timeline_a();
  auto* tb = view.timeline_b();

  // Ctrl+wheel on A zooms A, and B follows.
  const double before = viewport(ta).ns_per_px;
  QWheelEvent zoom(QPointF(600, 60), QPointF(600, 60), QPoint(), QPoint(0, 240), Qt::NoButton, Qt::ControlModifier, Qt::NoScrollPhase, false);
  QApplication::sendEvent(ta, &zoom);
  CHECK(viewport(ta).ns_per_px != before);
  check_linked(view);
  // Shift+wheel on B pans B, and A follows.
  const double start_a = viewport(ta).start_ns;
  QWheelEvent pan(QPointF(600, 60), QPointF(600, 60), QPoint(), QPoint(0, -240), Qt::NoButton, Qt::ShiftModifier, Qt::NoScrollPhase, false);
  QApplication::sendEvent(tb, &pan);
  CHECK(viewport(ta).start_ns != start_a);
  check_linked(view);

  // The top row (largest |delta|), clicked: both timelines show that module's first range on
  // their side, and are now aligned at its start.
  view.click_table_row(0);
  const auto& rows = view.model()->rows();
  const QModelIndex top = view.table()->model()->index(0, 0);
  const QString fqn = top.data().toString();
  const auto it = std::find_if(rows.begin(), rows.end(), [&](const compare::ModuleDiff& m) {
    return (m.fqn.empty() ? QStringLiteral("(root)") : QString::fromStdString(m.fqn)) == fqn;
  });
  REQUIRE(it != rows.end());
  REQUIRE(it->first_a);
  REQUIRE(it->first_b);
  CHECK(view.link_offset() == *it->first_a - *it->first_b);
  for (auto [w, t] : {std::pair{ta, *it->first_a}, std::pair{tb, *it->first_b}}) {
    const auto& v = viewport(w);
    CHECK(shows_time(w, t));
    // Zoomed to the module, not left at the step: the view spans less than the compared window.
    CHECK(v.end_ns() - v.start_ns < static_cast<double>(view.comparison()->alignment.a.length()));
  }
  check_linked(view);
}

TEST_CASE("comparisons dock: save, list, reopen exactly as saved, notes, changed profiles refused", "[compare][gui]") {
  app();
  TwoRuns runs;
  ComparisonsDock dock;
  QAbstractItemModelTester tester(dock.model(), QAbstractItemModelTester::FailureReportingMode::Fatal);
  const QString ws = QString::fromStdString(runs.dir.file("w.sscw"));
  REQUIRE(dock.open_workspace(ws));
  CHECK(dock.model()->rowCount() == 0);

  compare::Alignment al;
  al.rank_a = 1;
  al.step_a = runs.pa->rank(1)->steps[1].number;
  const QString plan = R"({"unsharded": ["layers.1"], "step_time_ms": 1.5})";
  REQUIRE(dock.save("b run", runs.qa(), runs.qb(), al, plan, "first line\nsecond line"));
  REQUIRE(dock.save("a self", runs.qa(), runs.qa(), compare::Alignment{}, QString(), QString()));
  REQUIRE(dock.model()->rowCount() == 2);
  CHECK(dock.model()->rows()[0].name == "a self");  // by name
  const int row = dock.model()->row_of("b run");
  REQUIRE(row == 1);
  CHECK(dock.model()->index(row, SavedComparisonModel::ColPlan).data().toString() == "yes");
  CHECK(dock.model()->index(row, SavedComparisonModel::ColNotes).data().toString() == "first line");

  // Reopen hands back exactly what was saved.
  QSignalSpy spy(&dock, &ComparisonsDock::reopenRequested);
  REQUIRE(dock.reopen(row));
  REQUIRE(spy.count() == 1);
  const auto c = spy.takeFirst().at(0).value<compare::SavedComparison>();
  CHECK(c.alignment == al);
  CHECK(c.plan_json == plan.toStdString());
  CHECK(c.notes == "first line\nsecond line");
  CHECK(c.a.path == QFileInfo(runs.qa()).absoluteFilePath().toStdString());
  CHECK(c.b.path == QFileInfo(runs.qb()).absoluteFilePath().toStdString());

  // Notes edited in the dock are saved under the same name; a second dock on the same file sees them.
  REQUIRE(dock.save_notes(row, "edited"));
  ComparisonsDock other;
  REQUIRE(other.open_workspace(ws));
  CHECK(other.model()->rows()[static_cast<std::size_t>(other.model()->row_of("b run"))].notes == "edited");

  // B rewritten since it was saved: reopen refused, naming the file; nothing emitted.
  SyntheticSpec changed;
  changed.layers = 2;
  write_synthetic_profile(runs.b, changed);
  CHECK_FALSE(dock.reopen(dock.model()->row_of("b run")));
  CHECK(dock.last_error().contains("b.ssdb"));
  CHECK(spy.count() == 0);

  // Invalid input: an empty name and a plan that is not JSON are refused; a profile is not a workspace.
  CHECK_FALSE(dock.save("  ", runs.qa(), runs.qa(), {}, {}, {}));
  CHECK_FALSE(dock.save("x", runs.qa(), runs.qa(), {}, "{not json", {}));
  CHECK_FALSE(dock.open_workspace(runs.qa()));
  CHECK_FALSE(dock.last_error().isEmpty());
  CHECK(dock.workspace_path() == ws);  // still the workspace that was open

  REQUIRE(dock.remove(dock.model()->row_of("a self")));
  CHECK(dock.model()->rowCount() == 1);
}

TEST_CASE("compare view: a module only B has moves B there and A follows on the same axis", "[compare][gui]") {
  app();
  test::TempDir dir;
  SyntheticSpec sa;
  sa.layers = 2;
  SyntheticSpec sb = sa;
  sb.layers = 4;  // layers.2 and layers.3 exist only in B
  write_synthetic_profile(dir.file("a.ssdb"), sa);
  write_synthetic_profile(dir.file("b.ssdb"), sb);
  CompareView view;
  view.resize(1200, 900);
  view.set_profile(std::make_shared<const Profile>(load_profile(dir.file("a.ssdb"))), QString::fromStdString(dir.file("a.ssdb")));
  REQUIRE(view.compare_with(QString::fromStdString(dir.file("b.ssdb"))));
  const auto& rows = view.model()->rows();
  const auto it = std::find_if(rows.begin(), rows.end(), [](const compare::ModuleDiff& m) { return m.fqn == "layers.3" && !m.first_a; });
  REQUIRE(it != rows.end());
  REQUIRE(it->first_b);
  const TimeNs offset = view.link_offset();
  view.show_module_row(static_cast<int>(it - rows.begin()));
  CHECK(shows_time(view.timeline_b(), *it->first_b));
  CHECK(view.link_offset() == offset);  // still the step alignment
  check_linked(view);
}

TEST_CASE("compare view: B read in the background gives the same comparison; a new A drops it", "[compare][gui]") {
  app();
  TwoRuns runs;
  CompareView view;
  view.set_profile(runs.pa, runs.qa());
  QSignalSpy changed(&view, &CompareView::comparisonChanged);
  QSignalSpy failed(&view, &CompareView::compareFailed);
  view.compare_with_in_background(runs.qb());
  CHECK(view.reading());
  view.compare_with_in_background(runs.qb());  // a second request while reading is refused
  CHECK(failed.count() == 1);
  REQUIRE(changed.wait(30000));
  CHECK_FALSE(view.reading());
  const compare::Comparison c = compare::compare_profiles(*runs.pa, load_profile(runs.b), compare::Alignment{});
  REQUIRE(view.model()->rowCount() == static_cast<int>(c.modules.size()));
  for (std::size_t i = 0; i < c.modules.size(); ++i) CHECK(view.model()->rows()[i].time.b == c.modules[i].time.b);

  // A file that is not a profile: compareFailed with the reader's message, the comparison kept.
  test::write_file(runs.dir.file("bad.ssdb"), "not a database");
  view.compare_with_in_background(QString::fromStdString(runs.dir.file("bad.ssdb")));
  REQUIRE(failed.wait(30000));
  CHECK(failed.count() == 2);
  CHECK_FALSE(failed.last().at(0).toString().isEmpty());
  CHECK(view.model()->rowCount() == static_cast<int>(c.modules.size()));

  // Another A opened while B is read: the late result is not applied to it.
  view.compare_with_in_background(runs.qb());
  view.set_profile(runs.pa, runs.qa());
  for (int i = 0; i < 300 && view.reading(); ++i) QTest::qWait(10);
  CHECK_FALSE(view.reading());
  QApplication::processEvents();
  CHECK(view.model()->rowCount() == 0);
  CHECK_FALSE(view.comparison().has_value());
}

TEST_CASE("compare view: one-sided modules show a dash, are counted in a warning and hidden until 'Show all'", "[compare][gui]") {
  app();
  test::TempDir dir;
  SyntheticSpec sa;
  sa.layers = 2;
  SyntheticSpec sb = sa;
  sb.layers = 4;  // layers.2 and layers.3 (and their children) exist only in B
  write_synthetic_profile(dir.file("a.ssdb"), sa);
  write_synthetic_profile(dir.file("b.ssdb"), sb);
  const auto pa = std::make_shared<const Profile>(load_profile(dir.file("a.ssdb")));
  CompareView view;
  QAbstractItemModelTester tester(view.proxy(), QAbstractItemModelTester::FailureReportingMode::Fatal);
  view.set_profile(pa, QString::fromStdString(dir.file("a.ssdb")));
  REQUIRE(view.compare_with(QString::fromStdString(dir.file("b.ssdb"))));
  const auto& rows = view.model()->rows();
  // Modules of B's rows that A's module table does not have: what the warning must count.
  std::set<std::string> only_b;
  int one_sided_rows = 0;
  for (const auto& r : rows) {
    if (pa->find_module(r.fqn) < 0) only_b.insert(r.fqn);
    one_sided_rows += r.count_a == 0 || r.count_b == 0;
  }
  REQUIRE(only_b.size() >= 2);  // layers.2, layers.3, ...
  CHECK(view.mismatch_text().contains(QStringLiteral("0 modules only in A, %1 only in B").arg(only_b.size())));

  // By default the table lists the modules on both sides only.
  CHECK_FALSE(view.show_all_box()->isChecked());
  auto* table = view.table()->model();
  CHECK(table->rowCount() == static_cast<int>(rows.size()) - one_sided_rows);
  for (int r = 0; r < table->rowCount(); ++r) {
    CHECK(table->index(r, CompareTableModel::ColA).data().toString() != QString::fromUtf8("\u2014"));
    CHECK(pa->find_module(table->index(r, CompareTableModel::ColModule).data(CompareTableModel::SortRole).toString().toStdString()) >= 0);
  }
  // "Show all": every row; a B-only row reads "—" for A and the delta, not 0.000.
  view.show_all_box()->setChecked(true);
  REQUIRE(table->rowCount() == static_cast<int>(rows.size()));
  int dashes = 0;
  for (int r = 0; r < table->rowCount(); ++r) {
    const std::string fqn = table->index(r, CompareTableModel::ColModule).data(CompareTableModel::SortRole).toString().toStdString();
    if (!only_b.count(fqn)) continue;
    ++dashes;
    CHECK(table->index(r, CompareTableModel::ColA).data().toString() == QString::fromUtf8("\u2014"));
    CHECK(table->index(r, CompareTableModel::ColDelta).data().toString() == QString::fromUtf8("\u2014"));
    CHECK(table->index(r, CompareTableModel::ColError).data().toString() == "only in B");
    CHECK(table->index(r, CompareTableModel::ColB).data().toString() != QString::fromUtf8("\u2014"));
  }
  CHECK(dashes > 0);
  // Sorted by |delta|, the one-sided rows (no delta) come last, not first.
  const int last = table->rowCount() - 1;
  CHECK(table->index(0, CompareTableModel::ColA).data().toString() != QString::fromUtf8("\u2014"));
  CHECK(table->index(last, CompareTableModel::ColDelta).data().toString() == QString::fromUtf8("\u2014"));
  view.show_all_box()->setChecked(false);
  CHECK(table->rowCount() == static_cast<int>(rows.size()) - one_sided_rows);

  // The same profile on both sides: no warning.
  REQUIRE(view.compare_with(QString::fromStdString(dir.file("a.ssdb"))));
  CHECK(view.mismatch_text().isEmpty());
  CHECK(table->rowCount() == view.model()->rowCount());
}

TEST_CASE("compare view: the sort arrow points the way the rows run", "[compare][gui]") {
  app();
  TwoRuns runs;
  CompareView view;
  view.set_profile(runs.pa, runs.qa());
  REQUIRE(view.compare_with(runs.qb()));
  auto* header = qobject_cast<SortArrowHeader*>(view.table()->horizontalHeader());
  REQUIRE(header);
  auto* table = view.table()->model();
  REQUIRE(table->rowCount() > 2);
  auto column = [&](int c) {
    std::vector<double> v;
    for (int r = 0; r < table->rowCount(); ++r) v.push_back(table->index(r, c).data(CompareTableModel::SortRole).toDouble());
    return v;
  };
  // Default: largest |delta| at the top, and the arrow points down (▼).
  CHECK(header->sortIndicatorOrder() == Qt::DescendingOrder);
  const auto delta = column(CompareTableModel::ColDelta);
  CHECK(std::is_sorted(delta.rbegin(), delta.rend()));
  CHECK(delta.front() > delta.back());
  CHECK(header->arrow(CompareTableModel::ColDelta) == QStyleOptionHeader::SortDown);
  CHECK(header->arrow(CompareTableModel::ColA) == QStyleOptionHeader::None);
  // A click on the header: smallest at the top, the arrow points up (▲).
  view.table()->sortByColumn(CompareTableModel::ColA, Qt::AscendingOrder);
  const auto a = column(CompareTableModel::ColA);
  CHECK(std::is_sorted(a.begin(), a.end()));
  CHECK(a.front() < a.back());
  CHECK(header->arrow(CompareTableModel::ColA) == QStyleOptionHeader::SortUp);
}

TEST_CASE("compare view: arrow keys in the table move both timelines like a click", "[compare][gui]") {
  app();
  TwoRuns runs;
  CompareView view;
  view.resize(1200, 900);
  view.set_profile(runs.pa, runs.qa());
  REQUIRE(view.compare_with(runs.qb()));
  auto* table = view.table();
  REQUIRE(table->model()->rowCount() > 3);
  view.click_table_row(0);
  table->setFocus();
  auto row_of = [&](int view_row) {
    const QString fqn = table->model()->index(view_row, CompareTableModel::ColModule).data(CompareTableModel::SortRole).toString();
    const int phase = table->model()->index(view_row, CompareTableModel::ColPhase).data(CompareTableModel::SortRole).toInt();
    const auto& rows = view.model()->rows();
    const auto it = std::find_if(rows.begin(), rows.end(), [&](const compare::ModuleDiff& m) {
      return QString::fromStdString(m.fqn) == fqn && static_cast<int>(m.phase) == phase;
    });
    REQUIRE(it != rows.end());
    return *it;
  };
  for (int expected : {1, 2, 1}) {
    QTest::keyClick(table, expected == 1 && table->currentIndex().row() == 2 ? Qt::Key_Up : Qt::Key_Down);
    REQUIRE(table->currentIndex().row() == expected);
    const compare::ModuleDiff m = row_of(expected);
    REQUIRE(m.first_a);
    REQUIRE(m.first_b);
    CHECK(view.link_offset() == *m.first_a - *m.first_b);
    CHECK(shows_time(view.timeline_a(), *m.first_a));
    CHECK(shows_time(view.timeline_b(), *m.first_b));
    check_linked(view);
  }
}

TEST_CASE("compare view: reset and a new A drop B and the comparison", "[compare][gui]") {
  app();
  TwoRuns runs;
  CompareView view;
  view.set_profile(runs.pa, runs.qa());
  REQUIRE(view.compare_with(runs.qb()));
  REQUIRE(view.comparison());
  REQUIRE(view.timeline_b()->controller());
  // Another profile opened as A: nothing of the old B is left.
  view.set_profile(std::make_shared<const Profile>(load_profile(runs.b)), runs.qb());
  CHECK_FALSE(view.comparison().has_value());
  CHECK(view.path_b().isEmpty());
  CHECK(view.model()->rowCount() == 0);
  CHECK(view.timeline_b()->controller() == nullptr);
  CHECK(view.headline_text().contains("choose B"));
  CHECK_FALSE(view.set_alignment({}));  // no B to re-align with
  // reset() alone does the same and keeps A.
  REQUIRE(view.compare_with(runs.qa()));
  view.reset();
  CHECK_FALSE(view.comparison().has_value());
  CHECK(view.path_a() == runs.qb());
  CHECK(view.timeline_a()->controller() != nullptr);
  CHECK(view.timeline_b()->controller() == nullptr);
}

TEST_CASE("compare view: folded panes show every rank's communication and no row cut at the bottom; unfolded, every row", "[compare][gui]") {
  app();
  const QString sample = QString::fromStdString(test::source_dir() + "/resources/samples/cpu-fsdp2-llama-2rank.ssdb");
  CompareView view;
  view.resize(1400, 900);  // laid out, not shown: the offscreen platform has no OpenGL
  view.layout()->activate();
  view.set_profile(std::make_shared<const Profile>(load_profile(sample.toStdString())), sample);
  REQUIRE(view.compare_with(sample));
  const auto is_comm = [](const timeline::TimelineController& c, const timeline::Track& t) {
    return t.kind == timeline::TrackKind::Stream && c.profile().stream_tracks[static_cast<std::size_t>(t.index)].kind == StreamKind::Nccl;
  };
  for (auto* tl : {view.timeline_a(), view.timeline_b()}) {
    auto* c = tl->controller();
    REQUIRE(c);
    const float height = static_cast<float>(tl->height());
    REQUIRE(height > 50);
    int operator_lanes = 0, comm = 0;
    for (std::size_t i = 0; i < c->tracks().size(); ++i) {
      const auto& t = c->tracks()[i];
      if (is_cpu_operator_lane(c->profile(), t)) {
        ++operator_lanes;
        CHECK((t.collapsed || !t.laid_out()));
      }
      if (is_comm(*c, t)) {  // both ranks' gloo lanes: laid out, open, inside the pane
        ++comm;
        CHECK(t.laid_out());
        CHECK_FALSE(t.collapsed);
        CHECK(c->track_y(static_cast<std::int32_t>(i)) + t.height() <= height);
      }
    }
    CHECK(operator_lanes > 0);
    CHECK(comm == 4);
    CHECK(timeline::total_tracks_height(c->tracks()) <= height - timeline::kRulerHeight);  // no row cut at the bottom
    view.fold_cpu_box()->setChecked(false);
    for (const auto& t : c->tracks()) {
      CHECK_FALSE(t.collapsed);
      CHECK_FALSE(t.folded);
    }
    view.fold_cpu_box()->setChecked(true);
  }
  // "Compared ranks only": every row of the other rank folds as well; the compared rank's
  // communication stays open.
  REQUIRE(view.comparison()->alignment.a.rank == 0);
  view.only_rank_box()->setChecked(true);
  for (auto* tl : {view.timeline_a(), view.timeline_b()}) {
    int open_rows = 0;
    for (const auto& t : tl->controller()->tracks()) {
      if (t.rank != 0) CHECK((t.collapsed || !t.laid_out()));
      if (t.rank == 0 && is_comm(*tl->controller(), t)) CHECK_FALSE(t.collapsed);
      open_rows += !t.collapsed && t.laid_out();
    }
    CHECK(open_rows > 0);
  }
  // Re-aligned on rank 1: the folds follow.
  compare::Alignment al;
  al.rank_a = 1;
  al.rank_b = 1;
  REQUIRE(view.set_alignment(al));
  for (const auto& t : view.timeline_a()->controller()->tracks()) {
    if (t.rank != 1) CHECK((t.collapsed || !t.laid_out()));
    if (t.rank == 1 && is_comm(*view.timeline_a()->controller(), t)) CHECK_FALSE(t.collapsed);
  }
  view.only_rank_box()->setChecked(false);
  view.fold_cpu_box()->setChecked(false);
  for (const auto& t : view.timeline_b()->controller()->tracks()) CHECK_FALSE(t.collapsed);
}

TEST_CASE("compare view: the empty B pane points to Compare with..., not to File > Open (which replaces A)", "[compare][gui]") {
  app();
  CompareView view;
  CHECK(view.timeline_b()->placeholder().find("Compare with") != std::string::npos);
  CHECK(view.timeline_b()->placeholder().find("File > Open") == std::string::npos);
}
