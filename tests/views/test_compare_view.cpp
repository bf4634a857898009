// The minimal Compare dock: its table model under QAbstractItemModelTester, and the rows shown
// for A vs B being compare_profiles' rows (the numbers `shardscope diff --by module` prints).
#include <catch2/catch.hpp>

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QTableView>

#include "profiler/compare/comparison.h"
#include "profiler/synthetic/synthetic_profile.h"
#include "storage/profile_reader.h"
#include "tests/support/test_paths.h"
#include "tests/views/qt_test_app.h"
#include "views/compare/compare_dock.h"
#include "views/compare/compare_table_model.h"

using namespace ss;
using namespace ss::compareview;

namespace {
QApplication& app() { return test::qt_app(); }
}  // namespace

TEST_CASE("compare dock shows compare_profiles' per-module rows for A vs B", "[compare][gui]") {
  app();
  test::TempDir dir;
  SyntheticSpec sa;
  sa.layers = 4;
  SyntheticSpec sb = sa;
  sb.seed = 7;  // same model, different kernel durations: every module's time moves
  write_synthetic_profile(dir.file("a.ssdb"), sa);
  write_synthetic_profile(dir.file("b.ssdb"), sb);
  auto a = std::make_shared<const Profile>(load_profile(dir.file("a.ssdb")));

  CompareDock dock;
  QAbstractItemModelTester tester(dock.model(), QAbstractItemModelTester::FailureReportingMode::Fatal);
  dock.set_profile(a, QString::fromStdString(dir.file("a.ssdb")));
  CHECK(dock.model()->rowCount() == 0);
  REQUIRE(dock.compare_with(QString::fromStdString(dir.file("b.ssdb"))));

  const Profile b = load_profile(dir.file("b.ssdb"));
  const compare::Comparison c = compare::compare_profiles(*a, b, compare::Alignment{});
  REQUIRE(!c.modules.empty());
  REQUIRE(dock.model()->rowCount() == static_cast<int>(c.modules.size()));
  for (std::size_t i = 0; i < c.modules.size(); ++i) {
    const auto& r = dock.model()->rows()[i];
    CHECK(r.fqn == c.modules[i].fqn);
    CHECK(r.time.a == c.modules[i].time.a);
    CHECK(r.time.b == c.modules[i].time.b);
  }
  // The view sorts by |delta|, largest first, like the command line.
  auto* view = dock.table();
  const auto first = view->model()->index(0, CompareTableModel::ColDelta).data(CompareTableModel::SortRole).toLongLong();
  const auto last = view->model()->index(view->model()->rowCount() - 1, CompareTableModel::ColDelta).data(CompareTableModel::SortRole).toLongLong();
  CHECK(first >= last);
  CHECK(first == std::llabs(c.modules.front().time.delta()));
  CHECK(dock.headline_text().contains("step time"));

  // A profile compared with itself: every delta is 0.
  REQUIRE(dock.compare_with(QString::fromStdString(dir.file("a.ssdb"))));
  for (const auto& r : dock.model()->rows()) CHECK(r.time.delta() == 0);

  // A file that is not a profile: refused with a message, the table kept.
  test::write_file(dir.file("bad.ssdb"), "not a database");
  CHECK_FALSE(dock.compare_with(QString::fromStdString(dir.file("bad.ssdb"))));
  CHECK_FALSE(dock.last_error().isEmpty());
}
