// The Unshard panel: its unit model under QAbstractItemModelTester, a toggle through the model
// showing the prediction that `shardscope simulate --plan` computes for the same plan, undo/redo
// giving back exactly the earlier numbers, per-bucket cap overrides (tree column and table), and
// the timeline of the simulated step refreshed on every change; the fitted preset chosen by
// default, the "as profiled" baseline following the preset, world size and GPUs per node, the
// replay warning with its reasons, and a profile without FSDP units leaving the panel disabled with
// the reason shown. The panel is never shown (the offscreen platform has no OpenGL), so the
// timeline's profile and view are checked, not pixels.
#include <catch2/catch.hpp>

#include <QThread>

#include <QAbstractItemModelTester>
#include <functional>
#include <QApplication>
#include <QCheckBox>
#include <QSignalSpy>
#include <QComboBox>
#include <QPushButton>
#include <QResizeEvent>
#include <QSpinBox>
#include <QTableWidget>
#include <QTest>
#include <QTreeView>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <cmath>

#include "profiler/sim/fsdp_plan.h"
#include "tests/views/unshard_test_inputs.h"
#include "profiler/sim/sim_inputs.h"
#include "profiler/sim/simulated_profile.h"
#include "profiler/sim/step_simulator.h"
#include "profiler/synthetic/synthetic_profile.h"
#include "storage/sqlite_handle.h"
#include "storage/units.h"
#include "tests/support/test_paths.h"
#include "tests/views/qt_test_app.h"
#include "views/timeline/timeline_widget.h"
#include "views/unshard/byte_spin_box.h"
#include "views/unshard/unshard_panel.h"
#include "views/unshard/unshard_session.h"
#include "views/unshard/unshard_unit_model.h"

using namespace ss;
using namespace ss::unshard;
using ss::test::simulate_cli_way;

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
  // layers.15, the first gathered in backward: on the default (fitted) preset the other layers'
  // all-gathers hide behind compute, so keeping them saves no time.
  const QModelIndex l7 = m->index_of_unit(s->inputs().model.find_unit("layers.15"));
  REQUIRE(m->setData(l7, Qt::Checked, Qt::CheckStateRole));
  CHECK(updates == 1);

  // The same plan, exported and simulated the way `shardscope simulate IN --plan P.json` does.
  test::TempDir dir;
  REQUIRE(panel.export_plan(QString::fromStdString(dir.file("plan.json"))));
  sim::SimInputRequest req;
  req.profile_path = sample();
  req.plan_path = dir.file("plan.json");
  req.fit_if_available = true;  // simulate's default
  sim::SimInputs in = sim::load_sim_inputs(req);
  const sim::SimResult cli = sim::simulate(sim::compile_step(in.model, in.plan, in.cluster));
  CHECK(panel.step_text() == ms_text(cli.step_ns));
  CHECK(panel.step_text() != step0);
  CHECK(panel.peak_text().startsWith(QString::fromStdString(format_bytes(cli.peak_bytes)) + " of budget"));
  // Next to the JSON: the FSDP2 Python that applies the same plan (what the JSON's fsdp2_python holds).
  const std::string py = test::read_file(dir.file("plan.py"));
  CHECK(py == sim::plan_to_python(in.plan));
  CHECK(py.find("fully_shard(model.get_submodule(\"layers.15\"), reshard_after_forward=False") != std::string::npos);

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
  CHECK_FALSE(panel.isEnabled());
  CHECK(panel.unavailable_text().startsWith("No profile loaded"));  // never blank
  CHECK_FALSE(panel.open_profile(QStringLiteral("/nonexistent/profile.ssdb")));
  CHECK_FALSE(panel.last_error().isEmpty());
  CHECK_FALSE(panel.isEnabled());
  CHECK(panel.unavailable_text().contains("cannot be simulated"));
  CHECK(panel.unavailable_text().contains(panel.last_error()));
}

namespace {
int nccl_all_gathers(const Profile& p) {
  int n = 0;
  for (const auto& t : p.stream_tracks) {
    if (t.kind != StreamKind::Nccl) continue;
    for (const auto& e : t.events) n += p.strings[e.name].starts_with("ncclDevKernel_AllGather");
  }
  return n;
}
}  // namespace

TEST_CASE("after a toggle the panel's timeline shows the new simulated step and keeps the user's zoom", "[unshard][gui]") {
  app();
  UnshardPanel panel;
  REQUIRE(panel.open_profile(QString::fromStdString(sample())));
  panel.resize(1000, 700);
  auto* s = panel.session();
  auto* tl = panel.timeline();
  REQUIRE(panel.timeline_profile());
  REQUIRE(tl->controller());
  CHECK(&tl->controller()->profile() == panel.timeline_profile().get());
  const auto p0 = panel.timeline_profile();
  CHECK(p0->time_end - p0->time_begin == s->prediction().step_ns);
  const int ag0 = nccl_all_gathers(*p0);
  CHECK(ag0 == s->prediction().result.all_gathers);

  // Resized while showing the whole step (as when the panel is first shown): still the whole step,
  // across the new width.
  QResizeEvent resize(QSize(1000, 300), tl->size());
  QApplication::sendEvent(tl, &resize);
  {
    const auto& v = tl->controller()->viewport();
    const double span = static_cast<double>(s->prediction().step_ns);
    CHECK(v.width_px == 1000 - timeline::kLabelWidth);
    CHECK(v.start_ns == Approx(-0.01 * span));
    CHECK(v.end_ns() == Approx(1.01 * span));
  }
  tl->controller()->set_size(1000, 300);

  // The user zooms into the middle of the step.
  tl->controller()->viewport().zoom_around(400, 0.25);
  const timeline::Viewport zoomed = tl->controller()->viewport();

  int timeline_updates = 0, prediction_updates = 0;
  QObject::connect(&panel, &UnshardPanel::timelineUpdated, [&] {
    ++timeline_updates;
    CHECK(prediction_updates == timeline_updates - 1);  // the timeline is current before the numbers are announced
  });
  QObject::connect(&panel, &UnshardPanel::predictionUpdated, [&] { ++prediction_updates; });
  // Scrolled down to the last lanes: the refresh keeps the scroll (the lanes are the same).
  tl->resize(tl->width(), 70);  // shorter than the lanes, so they scroll
  tl->controller()->set_size(static_cast<float>(tl->width()), 70.0f);
  tl->controller()->set_scroll_y(1e6f);
  const float scrolled = tl->controller()->scroll_y();
  const QModelIndex l5 = panel.model()->index_of_unit(s->inputs().model.find_unit("layers.5"));
  REQUIRE(panel.model()->setData(l5, Qt::Checked, Qt::CheckStateRole));
  CHECK(timeline_updates == 1);
  CHECK(scrolled > 0);
  const float kept = tl->controller()->scroll_y();
  tl->controller()->set_scroll_y(1e6f);  // the new step's lanes may scroll less far
  const float max_now = tl->controller()->scroll_y();
  tl->controller()->set_scroll_y(kept);
  CHECK(kept > 0);
  CHECK(kept == std::min(scrolled, max_now));
  CHECK(prediction_updates == 1);
  const auto p1 = panel.timeline_profile();
  REQUIRE(p1 != p0);
  CHECK(&tl->controller()->profile() == p1.get());
  // Keeping layers.5 unsharded skips its backward all-gather: one fewer on the NCCL lane, and the
  // timeline spans exactly the predicted step.
  CHECK(nccl_all_gathers(*p1) == ag0 - 1);
  CHECK(nccl_all_gathers(*p1) == s->prediction().result.all_gathers);
  CHECK(p1->time_end - p1->time_begin == s->prediction().step_ns);
  CHECK(panel.step_text() == ms_text(p1->time_end - p1->time_begin));
  // The step's length barely changed, so the zoom stays.
  CHECK(tl->controller()->viewport().start_ns == zoomed.start_ns);
  CHECK(tl->controller()->viewport().ns_per_px == zoomed.ns_per_px);

  panel.undo();
  CHECK(nccl_all_gathers(*panel.timeline_profile()) == ag0);
  CHECK(timeline_updates == 2);

  // A change that makes the step more than 2x longer: the new step is shown whole (fit all).
  const TimeNs before = s->prediction().step_ns;
  int slow_world = 0;
  for (int world : {64, 1024, 16384, 131072}) {
    s->set_world_size(world);
    const bool slow = static_cast<double>(s->prediction().step_ns) > 2.0 * static_cast<double>(before);
    s->undo();
    if (slow) {
      slow_world = world;
      break;
    }
  }
  REQUIRE(slow_world > 0);
  s->set_world_size(slow_world);  // on the session only, so that the panel's undo/redo show it
  panel.undo();
  CHECK(tl->controller()->viewport().ns_per_px == zoomed.ns_per_px);  // the original step: zoom kept
  panel.redo();
  const double span = static_cast<double>(s->prediction().step_ns);
  CHECK(panel.timeline_profile()->time_end - panel.timeline_profile()->time_begin == s->prediction().step_ns);
  const auto& v = tl->controller()->viewport();
  CHECK(v.start_ns == Approx(-0.01 * span));
  CHECK(v.end_ns() == Approx(1.01 * span));
}

TEST_CASE("bucket caps in the panel: the tree's cap column and the overrides table, undoable and exported", "[unshard][gui]") {
  app();
  UnshardPanel panel;
  REQUIRE(panel.open_profile(QString::fromStdString(sample())));
  auto* s = panel.session();
  auto* m = panel.model();
  QAbstractItemModelTester tester(m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  const int l2 = s->inputs().model.find_unit("layers.2");
  const QModelIndex cap2 = m->index_of_unit(l2).siblingAtColumn(UnshardUnitModel::ColBucketCap);
  // Without auto-bucketing there is no bucket to give a cap.
  CHECK_FALSE(m->flags(cap2).testFlag(Qt::ItemIsEditable));
  CHECK_FALSE(m->setData(cap2, 100.0, Qt::EditRole));

  const double layer = static_cast<double>(s->inputs().model.param_bytes(l2)) / (1024.0 * 1024.0);
  s->set_bucket_cap_mb(2.5 * layer);  // two layers per bucket
  m->refresh();
  REQUIRE(m->flags(cap2).testFlag(Qt::ItemIsEditable));
  const int bucket = s->prediction().bucket_of_unit[static_cast<std::size_t>(l2)];
  REQUIRE(bucket >= 0);
  CHECK(m->data(cap2.siblingAtColumn(UnshardUnitModel::ColBucket)).toString() == QStringLiteral("#%1").arg(bucket));
  CHECK(m->data(cap2, Qt::EditRole).toDouble() == 2.5 * layer);
  const Prediction by_default = s->prediction();

  int updates = 0;
  QObject::connect(&panel, &UnshardPanel::predictionUpdated, [&] { ++updates; });
  // Per layer: the cap of the bucket holding layers.2 becomes one layer's worth.
  REQUIRE(m->setData(cap2, 1.2 * layer, Qt::EditRole));
  CHECK(updates == 1);
  CHECK(s->state().bucket_cap_overrides_mb.at(bucket) == 1.2 * layer);
  CHECK(m->data(cap2).toString().endsWith("(override)"));
  REQUIRE(panel.bucket_overrides()->rowCount() == 1);
  CHECK(panel.bucket_overrides()->item(0, 0)->text() == QStringLiteral("#%1").arg(bucket));

  // What the simulator computes for FsdpPlan with the same map, through the exported plan file.
  test::TempDir dir;
  REQUIRE(panel.export_plan(QString::fromStdString(dir.file("plan.json"))));
  sim::SimInputRequest req;
  req.profile_path = sample();
  req.plan_path = dir.file("plan.json");
  req.fit_if_available = true;  // simulate's default
  sim::SimInputs in = sim::load_sim_inputs(req);
  CHECK(in.plan.bucket_cap_mb.at(std::to_string(bucket)) == 1.2 * layer);
  CHECK(in.plan.bucket_cap_mb.at("default") == 2.5 * layer);
  const sim::SimResult cli = sim::simulate(sim::compile_step(in.model, in.plan, in.cluster));
  CHECK(panel.step_text() == ms_text(cli.step_ns));
  CHECK(cli.all_gathers == s->prediction().result.all_gathers);
  CHECK(cli.all_gathers != by_default.result.all_gathers);
  CHECK(nccl_all_gathers(*panel.timeline_profile()) == cli.all_gathers);

  // The table edits the same override; a bad number is refused with a message.
  panel.bucket_overrides()->item(0, 1)->setText(QString::number(2.5 * layer, 'g', 17));
  CHECK(s->state().bucket_cap_overrides_mb.at(bucket) == 2.5 * layer);
  CHECK(s->prediction().step_ns == by_default.step_ns);
  panel.bucket_overrides()->item(0, 1)->setText("lots");
  CHECK(s->state().bucket_cap_overrides_mb.at(bucket) == 2.5 * layer);
  CHECK(panel.bucket_overrides()->item(0, 1)->text() == QString::number(2.5 * layer, 'g', 10));

  // Undo walks back through both edits to no override; redo gives the per-layer cap again.
  panel.undo();
  CHECK(s->state().bucket_cap_overrides_mb.at(bucket) == 1.2 * layer);
  CHECK(panel.step_text() == ms_text(cli.step_ns));
  panel.undo();
  CHECK(s->state().bucket_cap_overrides_mb.empty());
  CHECK(panel.bucket_overrides()->rowCount() == 0);
  CHECK(s->prediction().step_ns == by_default.step_ns);
  CHECK_FALSE(m->data(cap2).toString().endsWith("(override)"));
  panel.redo();
  CHECK(s->state().bucket_cap_overrides_mb.at(bucket) == 1.2 * layer);
  CHECK(panel.step_text() == ms_text(cli.step_ns));

  // Remove through the table: the override goes, the default's buckets come back.
  panel.bucket_overrides()->setCurrentCell(0, 0);
  for (auto* b : panel.findChildren<QPushButton*>())
    if (b->text() == "Remove") b->click();
  CHECK(s->state().bucket_cap_overrides_mb.empty());
  CHECK(s->prediction().step_ns == by_default.step_ns);
  // Add: an override for the first bucket without one, at its current cap (no change in time).
  for (auto* b : panel.findChildren<QPushButton*>())
    if (b->text() == "Add") b->click();
  CHECK(s->state().bucket_cap_overrides_mb.at(0) == 2.5 * layer);
  CHECK(s->prediction().step_ns == by_default.step_ns);
}

TEST_CASE("the panel applies a saved plan's text and refuses one for another model", "[unshard][gui]") {
  app();
  UnshardPanel source;
  REQUIRE(source.open_profile(QString::fromStdString(sample())));
  auto* s = source.session();
  s->set_keep(s->inputs().model.find_unit("layers.6"), true);
  s->set_bucket_cap_override(1, 500);
  const std::string saved = s->plan_file_json();

  UnshardPanel panel;
  CHECK_FALSE(panel.apply_plan_json(QString::fromStdString(saved)));  // no profile yet
  panel.set_profile_path(QString::fromStdString(sample()));            // hidden: loaded on demand
  REQUIRE(panel.apply_plan_json(QString::fromStdString(saved)));
  REQUIRE(panel.session());
  CHECK(panel.session()->state() == s->state());
  CHECK(panel.step_text() == ms_text(s->prediction().step_ns));
  CHECK(panel.bucket_overrides()->rowCount() == 1);
  CHECK(nccl_all_gathers(*panel.timeline_profile()) == s->prediction().result.all_gathers);
  CHECK_FALSE(panel.apply_plan_json(R"({"unsharded": ["encoder.blocks.0"]})"));
  CHECK(panel.last_error().contains("encoder.blocks.0"));
  CHECK(panel.session()->state() == s->state());
}

// Open plan… and `gui FILE --plan`: a plan file from disk (the CLI's `plan -o`, or one exported
// here) is one undoable change; a file that cannot be read, or is for another model, leaves the
// state as it was and says why in the status line.
TEST_CASE("the panel opens a plan file as one undoable change", "[unshard][gui]") {
  app();
  test::TempDir dir;
  const std::string written = dir.file("plan.json");
  UnshardPanel source;
  REQUIRE(source.open_profile(QString::fromStdString(sample())));
  auto* s = source.session();
  s->set_keep(s->inputs().model.find_unit("layers.2"), true);
  UnshardState paired = s->state();
  paired.buckets = {{"layers.0", "layers.1"}};
  s->apply(paired, "a pair");
  REQUIRE(source.export_plan(QString::fromStdString(written)));

  UnshardPanel panel;
  REQUIRE(panel.open_profile(QString::fromStdString(sample())));
  const auto before = panel.session()->state();
  const std::int64_t before_step = panel.session()->prediction().step_ns;
  CHECK_FALSE(panel.apply_plan_file(QString::fromStdString(dir.file("missing.json"))));
  CHECK(panel.last_error().contains("missing.json"));
  CHECK(panel.status_text().startsWith("Plan not applied: "));
  CHECK(panel.session()->state() == before);

  REQUIRE(panel.apply_plan_file(QString::fromStdString(written)));
  CHECK(panel.session()->state() == s->state());
  CHECK(panel.session()->prediction().step_ns == s->prediction().step_ns);
  CHECK(panel.step_text() == ms_text(s->prediction().step_ns));
  panel.undo();  // the whole plan, in one step
  CHECK(panel.session()->state() == before);
  CHECK(panel.session()->prediction().step_ns == before_step);

  test::write_file(dir.file("other.json"), R"({"unsharded": ["encoder.blocks.0"]})");
  CHECK_FALSE(panel.apply_plan_file(QString::fromStdString(dir.file("other.json"))));
  CHECK(panel.status_text().contains("encoder.blocks.0"));
  CHECK(panel.session()->state() == before);
}

// Reading a big profile for the simulator takes seconds: a visible panel reads it on a worker
// thread, says so, and installs the session when it arrives (issue 13, big profiles).
TEST_CASE("the panel reads a profile in the background when shown", "[unshard][gui]") {
  app();
  UnshardPanel panel;  // not shown: its timeline needs OpenGL, which the offscreen platform lacks
  panel.open_profile_in_background(QString::fromStdString(sample()));  // what showing it does
  CHECK(panel.loading());
  CHECK(panel.unavailable_text().startsWith("Reading "));
  for (int i = 0; i < 2000 && panel.loading(); ++i) {  // the poll timer installs it
    QApplication::processEvents();
    QThread::msleep(5);
  }
  CHECK_FALSE(panel.loading());
  REQUIRE(panel.session());
  CHECK(panel.unavailable_text().isEmpty());
  CHECK(panel.model()->rowCount() > 0);

  // session() waits for a read still in flight (the callers that need it at once).
  panel.open_profile_in_background(QString::fromStdString(sample()));
  REQUIRE(panel.session());
  CHECK_FALSE(panel.loading());
  CHECK(panel.step_text() == ms_text(panel.session()->prediction().step_ns));
}

TEST_CASE("plan automatically uses the planner chosen in the strategy box", "[unshard][gui]") {
  app();
  UnshardPanel panel;
  REQUIRE(panel.open_profile(QString::fromStdString(sample())));
  auto* s = panel.session();
  s->set_budget_bytes(s->prediction().peak_bytes + (std::int64_t{3} << 30));  // room for a few units
  std::map<std::string, TimeNs> step_of;
  for (const char* name : {"greedy", "cost", "exact"}) {
    const int i = panel.strategy_box()->findText(QString::fromUtf8(name));
    REQUIRE(i >= 0);
    panel.strategy_box()->setCurrentIndex(i);
    panel.plan_automatically();
    INFO(name);
    CHECK(s->state().strategy == name);
    CHECK(s->prediction().fits_budget);
    step_of[name] = s->prediction().step_ns;
    panel.undo();
  }
  // The exact solver is never worse than the heuristics on the same instance.
  CHECK(step_of["exact"] <= step_of["greedy"]);
  CHECK(step_of["exact"] <= step_of["cost"]);
}

TEST_CASE("the panel starts on the fitted preset and re-simulates the baseline when the preset, world or GPUs per node change",
          "[unshard][gui]") {
  app();
  UnshardPanel panel;
  REQUIRE(panel.open_profile(QString::fromStdString(sample())));
  auto* s = panel.session();
  QAbstractItemModelTester tester(panel.model(), QAbstractItemModelTester::FailureReportingMode::Fatal);
  auto* presets = panel.preset_box();
  REQUIRE(presets->count() >= 2);
  CHECK(presets->currentIndex() == 1);
  CHECK(presets->currentText().contains("fitted"));
  // What `shardscope simulate IN` shows (it fits by default), and nothing to undo yet.
  CHECK(panel.step_text() == ms_text(simulate_cli_way(sample(), "").step_ns));
  CHECK_FALSE(s->can_undo());
  // The numbers of the delta line: "measured M (x%);  simulated as profiled B (+0.00%)".
  auto baseline_shown = [&] { return panel.delta_text().contains("simulated as profiled " + ms_text(s->prediction().baseline_step_ns)); };
  auto as_profiled = [&] { return sim::simulate(sim::compile_step(s->inputs().model, s->inputs().plan, s->cluster())).step_ns; };
  CHECK(baseline_shown());
  CHECK(panel.delta_text().contains("(+0.00%)"));  // nothing changed: the prediction is the baseline
  const TimeNs fitted_baseline = s->prediction().baseline_step_ns;

  // The preset box: the profile's preset as is, `simulate --no-fit`.
  presets->setCurrentIndex(0);
  CHECK(s->state().preset == 0);
  const TimeNs unfitted = simulate_cli_way(sample(), "", /*no_fit=*/true).step_ns;
  CHECK(panel.step_text() == ms_text(unfitted));
  CHECK(s->prediction().baseline_step_ns == unfitted);
  CHECK(baseline_shown());
  CHECK(panel.delta_text().contains("(+0.00%)"));
  CHECK(panel.delta_text().contains("measured " + ms_text(s->inputs().measured_step_ns)));

  // A kept unit: the difference from the baseline is the plan's alone.
  const QModelIndex l15 = panel.model()->index_of_unit(s->inputs().model.find_unit("layers.15"));
  REQUIRE(panel.model()->setData(l15, Qt::Checked, Qt::CheckStateRole));
  CHECK(s->prediction().baseline_step_ns == unfitted);
  CHECK(s->prediction().step_ns != unfitted);
  CHECK(baseline_shown());
  CHECK_FALSE(panel.delta_text().contains("(+0.00%)"));

  // World size and GPUs per node: the baseline is that of the new configuration.
  panel.world_box()->setValue(32);
  CHECK(s->state().world_size == 32);
  CHECK(s->prediction().baseline_step_ns == as_profiled());
  CHECK(s->prediction().baseline_step_ns != unfitted);
  CHECK(baseline_shown());
  panel.gpus_per_node_box()->setValue(4);
  CHECK(s->state().gpus_per_node == 4);
  CHECK(s->prediction().baseline_step_ns == as_profiled());
  CHECK(baseline_shown());
  // Back to the fitted preset at this configuration.
  presets->setCurrentIndex(1);
  CHECK(s->prediction().baseline_step_ns == as_profiled());
  CHECK(baseline_shown());

  // Undo walks back through the baselines exactly.
  panel.undo();
  panel.undo();
  panel.undo();
  CHECK(s->prediction().baseline_step_ns == unfitted);
  CHECK(baseline_shown());
  CHECK(presets->currentIndex() == 0);
  panel.undo();
  panel.undo();
  CHECK(presets->currentIndex() == 1);
  CHECK(s->prediction().baseline_step_ns == fitted_baseline);
  CHECK(baseline_shown());
}

// record --steps A:B: the profile's unobserved steps are the job without the profiler; the panel
// judges its prediction against them (as simulate does) and says how much the profiler cost.
TEST_CASE("a profile recorded with a capture window: the panel shows the unprofiled step and the profiler's cost",
          "[unshard][gui]") {
  app();
  test::TempDir dir;
  const std::string path = dir.file("window.ssdb");
  std::filesystem::copy_file(sample(), path);
  TimeNs measured = 0;
  {
    UnshardPanel plain;  // no unobserved steps: the measured step, no Profiler cost row
    REQUIRE(plain.open_profile(QString::fromStdString(path)));
    measured = plain.session()->inputs().measured_step_ns;
    CHECK(plain.delta_text().startsWith("measured " + ms_text(measured)));
    CHECK(plain.profiler_cost_text().isEmpty());
  }
  REQUIRE(measured > 0);
  // Six steps after the profiled ones: three of the training step alone at 4/5 of the profiled
  // step, three holding an evaluation (two model calls) at 6/5.
  const TimeNs unprofiled = measured / 5 * 4;
  {
    sql::Db db(path, SQLITE_OPEN_READWRITE);
    db.exec("CREATE TABLE IF NOT EXISTS unobserved_steps (id INTEGER PRIMARY KEY, rank INTEGER NOT NULL, number INTEGER "
            "NOT NULL, start_ns INTEGER NOT NULL, duration_ns INTEGER NOT NULL, model_calls INTEGER)");
    for (int i = 0; i < 6; ++i)
      db.exec("INSERT INTO unobserved_steps (rank, number, start_ns, duration_ns, model_calls) VALUES (0, " +
              std::to_string(1000 + i) + ", 0, " + std::to_string(i % 2 ? unprofiled / 2 * 3 : unprofiled) + ", " +
              std::to_string(1 + i % 2) + ")");
  }
  UnshardPanel panel;
  REQUIRE(panel.open_profile(QString::fromStdString(path)));
  const sim::SimInputs& in = panel.session()->inputs();
  REQUIRE(in.calibrated);
  CHECK(in.unobserved_step_ns == unprofiled);
  CHECK(panel.delta_text().startsWith("unprofiled " + ms_text(unprofiled)));
  CHECK(panel.profiler_cost_text() ==
        QStringLiteral("+25.0% on the profiled step; unprofiled: median of 3 steps, 3 holding an evaluation left out"));
  CHECK(panel.status_text().contains("calibrated to the job without the profiler: " + ms_text(unprofiled)));
}

TEST_CASE("the panel warns when the replay is more than 10% from the measured step, and says why", "[unshard][gui]") {
  app();
  UnshardPanel panel;
  REQUIRE(panel.open_profile(QString::fromStdString(sample())));
  auto* s = panel.session();
  // The bundled sample is synthetic: even on the fitted preset its replay is far from its "measured" step.
  REQUIRE(s->prediction().replay.far);
  const QString fitted = panel.warning_text();
  CHECK(fitted.contains("more than 10%"));
  CHECK(fitted.contains("measured " + ms_text(s->prediction().replay.measured_ns)));
  CHECK(fitted.contains(ms_text(s->prediction().replay.replay_ns)));
  CHECK(fitted.contains("synthetic"));
  CHECK_FALSE(fitted.contains("not fitted"));
  // On the unfitted preset the cluster is one more reason.
  panel.preset_box()->setCurrentIndex(0);
  const QString unfitted = panel.warning_text();
  CHECK(unfitted.contains("synthetic"));
  CHECK(unfitted.contains("not fitted to this profile's"));
  CHECK(unfitted.contains(ms_text(s->prediction().baseline_step_ns)));
  // The warning judges the profile as recorded: a kept unit or another world size does not move it.
  panel.world_box()->setValue(64);
  CHECK(panel.warning_text() == unfitted);
  panel.undo();
  panel.undo();
  CHECK(panel.warning_text() == fitted);

  // A profile whose replay is within 10 %: no warning. A simulation of the sample, read back.
  test::TempDir dir;
  sim::SimInputRequest req;
  req.profile_path = sample();
  req.fit = true;
  const sim::SimInputs in = sim::load_sim_inputs(req);
  const sim::CompiledStep step = sim::compile_step(in.model, in.plan, in.cluster);
  sim::write_simulated_profile(dir.file("sim.ssdb"), in.model, step, sim::simulate(step, true), {sample(), in.gpu_name, "{}"});
  REQUIRE(panel.open_profile(QString::fromStdString(dir.file("sim.ssdb"))));
  CHECK_FALSE(panel.session()->prediction().replay.far);
  CHECK(panel.warning_text().isEmpty());
}


TEST_CASE("a profile without FSDP units leaves the panel disabled and says why in it", "[unshard][gui]") {
  app();
  test::TempDir dir;
  const std::string none = profile_without_units(dir);
  UnshardPanel panel;
  // A simulated profile first, so that there are numbers that must not stay behind.
  REQUIRE(panel.open_profile(QString::fromStdString(sample())));
  CHECK(panel.isEnabled());
  CHECK(panel.unavailable_text().isEmpty());
  CHECK_FALSE(panel.step_text().isEmpty());

  CHECK_FALSE(panel.open_profile(QString::fromStdString(none)));
  CHECK_FALSE(panel.isEnabled());
  const QString why = panel.unavailable_text();
  CHECK(why.contains("no FSDP units found"));
  CHECK(why.contains("no-units.ssdb"));
  CHECK(why.contains("fully_shard"));
  CHECK(why.contains("shardscope record"));
  CHECK(why.contains("FSDP::"));
  CHECK(panel.last_error().contains("no module is marked as an FSDP unit"));
  // Nothing of the previous profile is left to act on.
  CHECK(panel.session() == nullptr);
  CHECK(panel.model() == nullptr);
  CHECK(panel.timeline_profile() == nullptr);
  CHECK(panel.step_text().isEmpty());
  CHECK(panel.delta_text().isEmpty());
  CHECK(panel.warning_text().isEmpty());
  CHECK(panel.preset_box()->count() == 0);
  CHECK_FALSE(panel.apply_plan_json(R"({"unsharded": []})"));

  // Loaded on demand (the main window's way), the same; a good profile afterwards clears it.
  UnshardPanel lazy;
  lazy.set_profile_path(QString::fromStdString(none));
  CHECK_FALSE(lazy.apply_plan_json(R"({"unsharded": []})"));
  CHECK(lazy.unavailable_text().contains("no FSDP units found"));
  REQUIRE(panel.open_profile(QString::fromStdString(sample())));
  CHECK(panel.isEnabled());
  CHECK(panel.unavailable_text().isEmpty());
  CHECK(panel.step_text() == ms_text(panel.session()->prediction().step_ns));
  QAbstractItemModelTester tester(panel.model(), QAbstractItemModelTester::FailureReportingMode::Fatal);
  CHECK(panel.model()->rowCount() > 0);
}

// ---- The what-if panel (issue 15 item 7). ----

namespace {
std::string model_path(const char* name) { return test::source_dir() + "/resources/models/" + name; }

bool has_stream(const Profile& p, const std::string& name) {
  for (const auto& t : p.stream_tracks)
    if (t.name == name && !t.events.empty()) return true;
  return false;
}
}  // namespace

TEST_CASE("the unit model's Checkpoint and Offload columns pass QAbstractItemModelTester through changes", "[unshard][gui][whatif]") {
  app();
  UnshardSession s = UnshardSession::from_model(model_path("llama3-8b.json"), 8);
  UnshardUnitModel m(&s);
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  const int layer = s.inputs().model.find_unit("layers.5");
  const int root = s.inputs().model.find_unit("");
  const QModelIndex ck = m.index_of_unit(layer).siblingAtColumn(UnshardUnitModel::ColCheckpoint);
  const QModelIndex off = m.index_of_unit(layer).siblingAtColumn(UnshardUnitModel::ColOffload);
  CHECK(m.headerData(UnshardUnitModel::ColCheckpoint, Qt::Horizontal).toString() == "Checkpoint");
  CHECK(m.data(ck).toString() == "none");
  CHECK(m.data(ck, UnshardUnitModel::ChoicesRole).toStringList() == QStringList{"none", "full", "attention", "feed_forward"});
  CHECK(m.flags(ck).testFlag(Qt::ItemIsEditable));
  const QModelIndex root_ck = m.index_of_unit(root).siblingAtColumn(UnshardUnitModel::ColCheckpoint);
  CHECK_FALSE(m.flags(root_ck).testFlag(Qt::ItemIsEditable));
  CHECK_FALSE(m.setData(root_ck, "full", Qt::EditRole));
  CHECK_FALSE(m.flags(off).testFlag(Qt::ItemIsEditable));

  QSignalSpy changed(&m, &UnshardUnitModel::sessionChanged);
  REQUIRE(m.setData(ck, "attention", Qt::EditRole));
  CHECK(changed.count() == 1);
  CHECK(m.data(ck).toString() == "selective: attention");
  CHECK(s.state().checkpoint[static_cast<std::size_t>(layer)] == "attention");
  CHECK(s.prediction().result.recomputes == 1);
  CHECK_FALSE(m.setData(ck, "no_such_part", Qt::EditRole));  // not one of the unit's choices
  CHECK(changed.count() == 1);
  REQUIRE(m.setData(ck, "full", Qt::EditRole));
  CHECK(m.data(ck).toString() == "full");

  // Offload is global: the column shows the mode and this unit's copies from the prediction.
  CHECK(m.data(off).toString() == "none");
  s.set_offload("cpu");
  m.refresh();
  const TimeNs copies = s.prediction().host_copy_ns[static_cast<std::size_t>(layer)];
  CHECK(copies > 0);
  CHECK(m.data(off).toString() == QStringLiteral("cpu · %1 ms").arg(static_cast<double>(copies) / 1e6, 0, 'f', 3));
  s.undo();
  s.undo();
  m.refresh();
  CHECK(m.data(ck).toString() == "selective: attention");
  CHECK(m.data(off).toString() == "none");
}

TEST_CASE("on a profile the panel disables tp / cp / ep with the reason; pp re-simulates; a refused change keeps the prediction",
          "[unshard][gui][whatif]") {
  app();
  UnshardPanel panel;
  REQUIRE(panel.open_profile(QString::fromStdString(sample())));
  panel.resize(1200, 800);
  auto* s = panel.session();
  for (QWidget* w : std::initializer_list<QWidget*>{panel.tp_box(), panel.sp_box(), panel.cp_box(), panel.cp_kind_box(), panel.ep_box()}) {
    CHECK_FALSE(w->isEnabled());
    CHECK(w->toolTip().contains("model description"));
  }
  CHECK(panel.pp_box()->isEnabled());
  CHECK(panel.micro_batches_box()->isEnabled());
  const QString step0 = panel.step_text();

  // pp 3 does not divide the profile's world of 4: the error is shown, the numbers and the box stay.
  panel.pp_box()->setValue(3);
  CHECK(panel.error_text().contains("does not divide the world size 4"));
  CHECK(panel.step_text() == step0);
  CHECK(panel.pp_box()->value() == 1);
  CHECK(s->state().parallel.pp == 1);

  panel.pp_box()->setValue(2);
  CHECK(panel.error_text().isEmpty());
  panel.micro_batches_box()->setValue(4);
  const sim::SimResult& r = s->prediction().result;
  REQUIRE(r.stages.size() == 2);
  CHECK(panel.step_text() == ms_text(r.step_ns));
  CHECK(panel.whatif_text().contains(QStringLiteral("2 stages × 4 micro-batches (1f1b); bubble %1").arg(ms_text(r.bubble_ns))));
  CHECK(panel.pp_schedule_box()->isEnabled());
  REQUIRE(panel.timeline_profile());
  CHECK(has_stream(*panel.timeline_profile(), "nccl PP send/recv"));

  // Offload: the summary's figures are the simulator's, and the timeline gains the host lanes.
  panel.pp_box()->setValue(1);  // offload with a pipeline is not modelled
  panel.offload_box()->setCurrentIndex(panel.offload_box()->findData("cpu"));
  REQUIRE(s->state().offload == "cpu");
  const sim::SimResult& o = s->prediction().result;
  CHECK(panel.whatif_text().contains(QStringLiteral("cpu: host copies %1").arg(ms_text(o.host_copy_ns))));
  CHECK(panel.whatif_text().contains(QStringLiteral("CPU optimizer %1").arg(ms_text(o.cpu_optimizer_ns))));
  CHECK(has_stream(*panel.timeline_profile(), "host-to-device copies (offload)"));
  CHECK(has_stream(*panel.timeline_profile(), "device-to-host copies (offload)"));
  CHECK(has_stream(*panel.timeline_profile(), "CPU optimizer (offload)"));
  CHECK(panel.pipelined_optimizer_box()->isEnabled());
  panel.undo();
  CHECK(s->state().offload == "none");
  CHECK(panel.offload_box()->currentData().toString() == "none");
  CHECK_FALSE(has_stream(*panel.timeline_profile(), "host-to-device copies (offload)"));
}

TEST_CASE("on a model description the parallelism row drives tp, sp, cp, pp and the timeline shows their lanes", "[unshard][gui][whatif]") {
  app();
  UnshardPanel panel;
  REQUIRE(panel.open_model_description(QString::fromStdString(model_path("llama3-8b.json")), 64));
  panel.resize(1200, 800);
  auto* s = panel.session();
  REQUIRE(s);
  CHECK(panel.world_box()->value() == 64);
  CHECK(panel.tp_box()->isEnabled());
  CHECK_FALSE(panel.sp_box()->isEnabled());  // SP needs tp > 1
  CHECK(panel.whatif_text().contains("none"));

  panel.tp_box()->setValue(8);
  CHECK(panel.sp_box()->isEnabled());
  panel.sp_box()->setChecked(true);
  const sim::SimResult& r = s->prediction().result;
  CHECK(s->state().parallel.tp == 8);
  CHECK(s->state().parallel.sequence_parallel);
  REQUIRE(r.tp_collectives > 0);
  CHECK(panel.whatif_text().contains(QStringLiteral("TP %1 (%2)").arg(r.tp_collectives).arg(QString::fromStdString(format_bytes(r.tp_bytes)))));
  CHECK(has_stream(*panel.timeline_profile(), "nccl TP / CP / EP"));

  panel.cp_box()->setValue(2);
  panel.cp_kind_box()->setCurrentText("ring");
  CHECK(s->state().parallel.cp_kind == "ring");
  CHECK(s->prediction().result.cp_collectives > 0);
  CHECK(panel.whatif_text().contains("CP "));

  panel.pp_box()->setValue(2);
  panel.micro_batches_box()->setValue(8);
  CHECK(s->prediction().result.stages.size() == 2);
  CHECK(has_stream(*panel.timeline_profile(), "nccl PP send/recv"));
  // interleaved needs micro-batches divisible by pp: 8 is; chunks then become editable.
  panel.pp_schedule_box()->setCurrentText("interleaved");
  CHECK(panel.pp_chunks_box()->isEnabled());
  panel.pp_chunks_box()->setValue(2);
  CHECK(s->state().parallel.pp_virtual == 2);
  CHECK(panel.error_text().isEmpty());

  // Undo walks back through the row, one change at a time, and the boxes follow.
  for (int i = 0; i < 8; ++i) panel.undo();
  CHECK(s->state().parallel == sim::Parallelism{});
  CHECK(panel.tp_box()->value() == 1);
  CHECK_FALSE(panel.sp_box()->isChecked());
  CHECK(panel.micro_batches_box()->value() == 1);

  // Checkpoint every unit from the settings column.
  auto* all = panel.checkpoint_all_box();
  const int full = all->findData("full");
  REQUIRE(full > 0);
  all->setCurrentIndex(full);
  emit all->activated(full);
  CHECK(s->prediction().result.recomputes == 32);
  CHECK(panel.whatif_text().contains("32 units checkpointed; 32 forward reruns"));
  CHECK(all->currentIndex() == 0);  // back to the prompt
  CHECK_FALSE(panel.open_model_description(QStringLiteral("/nonexistent/model.json")));
  CHECK_FALSE(panel.last_error().isEmpty());
}

TEST_CASE("a large step's timeline is built in the background: the numbers follow at once, the timeline the latest state",
          "[unshard][gui][whatif]") {
  app();
  UnshardPanel panel;
  REQUIRE(panel.open_model_description(QString::fromStdString(model_path("llama3-70b.json")), 1024));
  panel.resize(1200, 800);
  auto* s = panel.session();
  panel.tp_box()->setValue(8);
  panel.micro_batches_box()->setValue(16);
  panel.pp_box()->setValue(4);
  const auto& r = s->prediction().result;
  REQUIRE(r.ops.size() + r.memory.size() > UnshardPanel::kSyncTimelineRows);
  CHECK(panel.step_text() == ms_text(r.step_ns));  // the numbers did not wait for the timeline
  int updates = 0;
  QObject::connect(&panel, &UnshardPanel::timelineUpdated, [&] { ++updates; });
  // Two more changes while a build may still run: the timeline ends on the last state.
  panel.sp_box()->setChecked(true);
  panel.micro_batches_box()->setValue(8);
  const TimeNs last = s->prediction().step_ns;
  panel.wait_for_timeline();
  CHECK_FALSE(panel.timeline_pending());
  CHECK(updates >= 1);
  REQUIRE(panel.timeline_profile());
  const auto& tl = *panel.timeline_profile();
  CHECK(tl.time_end - tl.time_begin == last);
  CHECK(has_stream(tl, "nccl PP send/recv"));
  CHECK(has_stream(tl, "nccl TP / CP / EP"));
  // Back to a small step: built at once, and no older background build lands over it.
  panel.pp_box()->setValue(1);
  panel.micro_batches_box()->setValue(1);
  panel.tp_box()->setValue(1);
  CHECK_FALSE(panel.timeline_pending());
  for (int i = 0; i < 10; ++i) QApplication::processEvents();
  CHECK(panel.timeline_profile()->time_end - panel.timeline_profile()->time_begin == s->prediction().step_ns);
  CHECK_FALSE(has_stream(*panel.timeline_profile(), "nccl PP send/recv"));
}

TEST_CASE("the memory budget reads and takes sizes by the same unit rules as the peak beside it", "[unshard][gui]") {
  app();
  UnshardPanel panel;
  REQUIRE(panel.open_profile(QString::fromStdString(sample())));
  auto* s = panel.session();
  auto* box = panel.budget_box();
  box->set_bytes(std::int64_t{124} << 20);  // as a user's edit: the panel re-predicts
  CHECK(s->state().budget_bytes == (std::int64_t{124} << 20));
  CHECK(box->text() == "124 MiB");  // not "0.121 GiB"
  CHECK(panel.peak_text().contains(" of budget 124 MiB"));
  // Typed with a unit: the session's budget follows, in bytes.
  box->selectAll();
  QTest::keyClicks(box, "0.5 GiB");
  QTest::keyClick(box, Qt::Key_Enter);
  CHECK(s->state().budget_bytes == (std::int64_t{1} << 29));
  CHECK(box->text() == "512 MiB");
  // A step is an eighth of the power of two below the value: 512 MiB -> 576 MiB.
  box->stepBy(1);
  CHECK(s->state().budget_bytes == (std::int64_t{576} << 20));
  // Text that is not a size does not change it.
  int pos = 0;
  QString junk = "lots";
  CHECK(box->validate(junk, pos) != QValidator::Acceptable);
}

TEST_CASE("Plan buckets: the button applies the bucket planner's lists, the tree shows them, Undo takes them back", "[unshard][gui]") {
  app();
  UnshardPanel panel;
  REQUIRE(panel.open_model_description(QString::fromStdString(model_path("fsdp-sample-tiny.json")), 64));
  auto* s = panel.session();
  const TimeNs before = s->prediction().step_ns;
  QPushButton* button = nullptr;
  for (auto* b : panel.findChildren<QPushButton*>())
    if (b->text() == "Plan buckets") button = b;
  REQUIRE(button);
  button->click();
  CHECK(s->state().buckets == std::vector<std::vector<std::string>>{{"layers.0", "layers.1"}});
  CHECK(s->prediction().step_ns < before);
  CHECK(panel.step_text() == ms_text(s->prediction().step_ns));
  CHECK(panel.status_text().contains("layers.0+layers.1"));
  CHECK(panel.status_text().contains("no measured FSDP per-unit cost"));  // the preset has none (gui --cluster)
  // The tree's Bucket column names the list (under QAbstractItemModelTester, as the panel's model).
  auto* m = panel.model();
  QAbstractItemModelTester tester(m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  QStringList shown;
  std::function<void(const QModelIndex&)> walk = [&](const QModelIndex& parent) {
    for (int r = 0; r < m->rowCount(parent); ++r) {
      const QModelIndex name = m->index(r, UnshardUnitModel::ColModule, parent);
      const QString bucket = m->index(r, UnshardUnitModel::ColBucket, parent).data().toString();
      if (bucket.startsWith("list")) shown << name.data().toString() + "=" + bucket;
      walk(name);
    }
  };
  walk({});
  CHECK(shown == QStringList{"layers.0=list 1", "layers.1=list 1"});
  panel.undo();
  CHECK(s->state().buckets.empty());
  CHECK(s->prediction().step_ns == before);

  // With a measured per-unit cost (gui --cluster units.json) on the CPU sample: the preset has it,
  // the planner merges, and the status line has no such note.
  test::TempDir dir;
  const std::string units = dir.file("units.json");
  std::ofstream(units) << R"({"fsdp_unit_forward_us": 500, "fsdp_unit_backward_us": 1000})";
  UnshardPanel measured;
  measured.set_measured_cluster(QString::fromStdString(units));
  REQUIRE(measured.open_profile(QString::fromStdString(test::source_dir() + "/resources/samples/cpu-fsdp2-llama-2rank.ssdb")));
  CHECK(measured.preset_box()->currentText().endsWith("+ units.json"));
  for (auto* b : measured.findChildren<QPushButton*>())
    if (b->text() == "Plan buckets") b->click();
  CHECK_FALSE(measured.session()->state().buckets.empty());
  CHECK_FALSE(measured.status_text().contains("no measured FSDP per-unit cost"));
}
