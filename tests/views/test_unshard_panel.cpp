// The Unshard panel: its unit model under QAbstractItemModelTester, a toggle through the model
// showing the prediction that `shardscope simulate --plan` computes for the same plan, and
// undo/redo giving back exactly the earlier numbers.
#include <catch2/catch.hpp>

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QTreeView>

#include "profiler/sim/sim_inputs.h"
#include "profiler/sim/step_simulator.h"
#include "storage/units.h"
#include "tests/support/test_paths.h"
#include "tests/views/qt_test_app.h"
#include "views/unshard/unshard_panel.h"
#include "views/unshard/unshard_session.h"
#include "views/unshard/unshard_unit_model.h"

using namespace ss;
using namespace ss::unshard;

namespace {
QApplication& app() { return test::qt_app(); }
std::string sample() { return test::source_dir() + "/resources/samples/synthetic-fsdp-4rank.ssdb"; }
QString ms_text(TimeNs ns) { return QString::number(static_cast<double>(ns) / 1e6, 'f', 3) + " ms"; }
}  // namespace

TEST_CASE("unshard unit model passes QAbstractItemModelTester through toggles", "[unshard][gui]") {
  app();
  UnshardSession s = UnshardSession::from_profile(sample());
  UnshardUnitModel m(&s);
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  CHECK(m.rowCount() > 0);
  CHECK(m.columnCount() == UnshardUnitModel::ColCount);
  // Every unit has exactly one row, and its check box mirrors the session.
  for (int u = 0; u < s.unit_count(); ++u) {
    const QModelIndex i = m.index_of_unit(u);
    REQUIRE(i.isValid());
    CHECK(m.unit_of(i) == u);
    CHECK((m.data(i, Qt::CheckStateRole).toInt() == Qt::Checked) == (s.state().keep[static_cast<std::size_t>(u)] != 0));
    CHECK(m.flags(i).testFlag(Qt::ItemIsUserCheckable) == !s.unit_fixed(u));
  }
  const QModelIndex l3 = m.index_of_unit(s.inputs().model.find_unit("layers.3"));
  REQUIRE(m.setData(l3, Qt::Checked, Qt::CheckStateRole));
  CHECK(m.data(l3, Qt::CheckStateRole).toInt() == Qt::Checked);
  const QModelIndex root = m.index_of_unit(s.inputs().model.find_unit(""));
  CHECK_FALSE(m.setData(root, Qt::Unchecked, Qt::CheckStateRole));
  s.undo();
  m.refresh();
  CHECK(m.data(l3, Qt::CheckStateRole).toInt() == Qt::Unchecked);
}

TEST_CASE("a toggle in the panel shows what simulate computes for the same plan; undo/redo restore it", "[unshard][gui]") {
  app();
  UnshardPanel panel;
  REQUIRE(panel.open_profile(QString::fromStdString(sample())));
  panel.resize(1000, 700);
  auto* m = panel.model();
  auto* s = panel.session();
  const QString step0 = panel.step_text(), peak0 = panel.peak_text();
  const Prediction p0 = s->prediction();
  CHECK(step0 == ms_text(p0.step_ns));

  int updates = 0;
  QObject::connect(&panel, &UnshardPanel::predictionUpdated, [&] { ++updates; });
  const QModelIndex l7 = m->index_of_unit(s->inputs().model.find_unit("layers.7"));
  REQUIRE(m->setData(l7, Qt::Checked, Qt::CheckStateRole));
  CHECK(updates == 1);

  // The same plan, exported and simulated the way `shardscope simulate IN --plan P.json` does.
  test::TempDir dir;
  REQUIRE(panel.export_plan(QString::fromStdString(dir.file("plan.json"))));
  sim::SimInputRequest req;
  req.profile_path = sample();
  req.plan_path = dir.file("plan.json");
  sim::SimInputs in = sim::load_sim_inputs(req);
  const sim::SimResult cli = sim::simulate(sim::compile_step(in.model, in.plan, in.cluster));
  CHECK(panel.step_text() == ms_text(cli.step_ns));
  CHECK(panel.step_text() != step0);
  CHECK(panel.peak_text().startsWith(QString::fromStdString(format_bytes(cli.peak_bytes)) + " of budget"));

  panel.undo();
  CHECK(panel.step_text() == step0);
  CHECK(panel.peak_text() == peak0);
  CHECK(s->prediction().step_ns == p0.step_ns);
  CHECK(m->data(l7, Qt::CheckStateRole).toInt() == Qt::Unchecked);
  panel.redo();
  CHECK(panel.step_text() == ms_text(cli.step_ns));
  CHECK(m->data(l7, Qt::CheckStateRole).toInt() == Qt::Checked);
}

TEST_CASE("the panel refuses a file it cannot simulate with a message", "[unshard][gui]") {
  app();
  UnshardPanel panel;
  CHECK_FALSE(panel.open_profile(QStringLiteral("/nonexistent/profile.ssdb")));
  CHECK_FALSE(panel.last_error().isEmpty());
  CHECK_FALSE(panel.isEnabled());
}
