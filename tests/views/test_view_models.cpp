// The item models under QAbstractItemModelTester, sorting and filtering through the proxy, and the
// aggregate table model.
#include <catch2/catch.hpp>

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QLineEdit>
#include <QSortFilterProxyModel>
#include <QTreeView>

#include "profiler/synthetic/synthetic_profile.h"
#include "storage/profile_reader.h"
#include "tests/support/test_paths.h"
#include "tests/views/qt_test_app.h"
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
  // Missing figures show as a dash.
  const QModelIndex root = model.index(0, 1 + memview::kOptimizerStates);
  CHECK(model.data(root).toString() == QString::fromUtf8("\u2014"));
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
