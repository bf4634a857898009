// The what-if part of the Unshard panel (issue 15): checkpoint-every-unit, offload and the
// parallelism row, their summary lines, and how they follow the session's state. Kept apart from
// unshard_panel.cpp, which lays out the panel and owns its FSDP controls.
#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStringList>
#include <algorithm>
#include <set>

#include "storage/units.h"
#include "views/unshard/unshard_panel.h"
#include "views/unshard/unshard_session.h"
#include "views/unshard/panel_text.h"
#include "views/unshard/unshard_unit_model.h"

namespace ss::unshard {

namespace {
using text::bytes;
using text::ms;
const QString kNeedsShapes = QStringLiteral("Tensor, context and expert parallelism need a model description (layer shapes); a "
                                            "measured profile has none. Open one with \"Model description…\". Pipeline "
                                            "parallelism and micro-batches work on profiles too.");
const QString kWarningStyle = QStringLiteral("QLabel { background: #fbe3e3; color: #5a1010; border: 1px solid #c94a4a; "
                                             "border-radius: 3px; padding: 6px; }");

QSpinBox* degree_box(int max, const QString& tip) {
  auto* b = new QSpinBox;
  b->setRange(1, max);
  b->setKeyboardTracking(false);  // one re-simulation per value, not per digit typed
  b->setToolTip(tip);
  b->setProperty("ss_tip", tip);
  return b;
}
}  // namespace

void UnshardPanel::build_whatif_controls(QFormLayout* controls) {
  checkpoint_all_ = new QComboBox;
  checkpoint_all_->setToolTip(QStringLiteral("Set every unit that can take it to this activation checkpointing (one undoable "
                                             "change); single units in the tree's Checkpoint column"));
  controls->addRow(QStringLiteral("Checkpoint all"), checkpoint_all_);

  offload_ = new QComboBox;
  offload_->addItem(QStringLiteral("none"), QStringLiteral("none"));
  offload_->addItem(QStringLiteral("optimizer"), QStringLiteral("optimizer"));
  offload_->addItem(QStringLiteral("cpu"), QStringLiteral("cpu"));
  offload_->setToolTip(QStringLiteral("cpu (FSDP2 CPUOffloadPolicy): sharded parameters, gradients and optimizer states on the "
                                      "host, the optimizer step on the CPU; optimizer (ZeRO-Offload): only the optimizer states "
                                      "and step"));
  offload_prefetch_ = degree_box(64, QStringLiteral("Host copies issued this many units ahead (1 = FSDP2; more: OOGC's "
                                                    "multi-layer prefetch)"));
  offload_prefetch_->setPrefix(QStringLiteral("prefetch "));
  pipelined_opt_ = new QCheckBox(QStringLiteral("pipelined CPU step"));
  pipelined_opt_->setToolTip(QStringLiteral("The CPU update of a unit starts as soon as its gradients are down, overlapping "
                                            "the rest of the backward (OOGC)"));
  auto* offload_row = new QHBoxLayout;
  offload_row->addWidget(offload_, 1);
  offload_row->addWidget(offload_prefetch_);
  controls->addRow(QStringLiteral("Offload"), offload_row);
  controls->addRow(QString(), pipelined_opt_);

  // The parallelism row: a grid inside a group, since a single row would not fit the column.
  auto* group = new QGroupBox(QStringLiteral("Parallelism (world = pp × dp × cp × tp)"));
  group->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);  // never given the column's spare height
  auto* g = new QGridLayout(group);
  g->setContentsMargins(6, 6, 6, 6);
  tp_ = degree_box(1024, QStringLiteral("Megatron tensor parallel degree (inside a node when it fits)"));
  sp_ = new QCheckBox(QStringLiteral("SP"));
  sp_->setToolTip(QStringLiteral("Sequence parallel: TP's all-reduces become all-gather + reduce-scatter pairs"));
  sp_->setProperty("ss_tip", sp_->toolTip());
  cp_ = degree_box(1024, QStringLiteral("Context parallel degree"));
  cp_kind_ = new QComboBox;
  cp_kind_->addItem(QStringLiteral("ulysses"));
  cp_kind_->addItem(QStringLiteral("ring"));
  cp_kind_->setToolTip(QStringLiteral("ulysses: all-to-all of q, k, v and the output; ring: K/V passed around, beside the scores"));
  cp_kind_->setProperty("ss_tip", cp_kind_->toolTip());
  pp_ = degree_box(1024, QStringLiteral("Pipeline stages (works on profiles too)"));
  pp_schedule_ = new QComboBox;
  for (const char* s : {"1f1b", "gpipe", "interleaved"}) pp_schedule_->addItem(QString::fromLatin1(s));
  pp_schedule_->setToolTip(QStringLiteral("Pipeline schedule; interleaved needs micro-batches divisible by pp"));
  pp_chunks_ = degree_box(64, QStringLiteral("Model chunks per stage (interleaved 1F1B)"));
  ep_ = degree_box(1024, QStringLiteral("Expert parallel degree (MoE expert units)"));
  micro_batches_ = degree_box(4096, QStringLiteral("Micro-batches per optimizer step (gradient accumulation; the pipeline's micro-batches)"));
  // Two degrees per row (name, degree, its option), so the group stays short and narrow.
  auto label = [](const char* t) { return new QLabel(QString::fromLatin1(t)); };
  for (QSpinBox* b : {tp_, cp_, pp_, pp_chunks_, ep_, micro_batches_}) b->setMaximumWidth(72);
  auto add = [&](int row, int col, const char* name, QWidget* degree, QWidget* option) {
    g->addWidget(label(name), row, col);
    g->addWidget(degree, row, col + 1);
    if (option) g->addWidget(option, row, col + 2);
  };
  add(0, 0, "tp", tp_, sp_);
  add(0, 3, "ep", ep_, nullptr);
  add(1, 0, "cp", cp_, cp_kind_);
  add(1, 3, "chunks", pp_chunks_, nullptr);
  add(2, 0, "pp", pp_, pp_schedule_);
  add(2, 3, "micro-b.", micro_batches_, nullptr);
  g->setColumnStretch(2, 1);
  controls->addRow(group);
  error_line_ = new QLabel;
  error_line_->setWordWrap(true);
  error_line_->setStyleSheet(kWarningStyle);
  error_line_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  error_line_->hide();  // UnshardPanel::build puts it below the last control
}

void UnshardPanel::change_parallelism(const std::function<void(sim::Parallelism&)>& edit) {
  if (!session_) return;
  sim::Parallelism par = session_->state().parallel;
  edit(par);
  run_change([&] { session_->set_parallelism(par); });
}

void UnshardPanel::connect_whatif_controls() {
  connect(checkpoint_all_, &QComboBox::activated, this, [this](int i) {
    if (i <= 0) return;  // the first entry is the prompt, not a mode
    const std::string mode = checkpoint_all_->itemData(i).toString().toStdString();
    run_change([&] { session_->set_checkpoint_all(mode); });
  });
  connect(offload_, &QComboBox::currentIndexChanged, this,
          [this](int) { run_change([&] { session_->set_offload(offload_->currentData().toString().toStdString()); }); });
  connect(offload_prefetch_, &QSpinBox::valueChanged, this, [this](int v) { run_change([&] { session_->set_offload_prefetch_depth(v); }); });
  connect(pipelined_opt_, &QCheckBox::toggled, this, [this](bool on) { run_change([&] { session_->set_pipelined_optimizer(on); }); });
  connect(tp_, &QSpinBox::valueChanged, this, [this](int v) { change_parallelism([v](sim::Parallelism& p) { p.tp = v; }); });
  connect(sp_, &QCheckBox::toggled, this, [this](bool on) { change_parallelism([on](sim::Parallelism& p) { p.sequence_parallel = on; }); });
  connect(cp_, &QSpinBox::valueChanged, this, [this](int v) { change_parallelism([v](sim::Parallelism& p) { p.cp = v; }); });
  connect(cp_kind_, &QComboBox::currentTextChanged, this,
          [this](const QString& k) { change_parallelism([k](sim::Parallelism& p) { p.cp_kind = k.toStdString(); }); });
  connect(pp_, &QSpinBox::valueChanged, this, [this](int v) { change_parallelism([v](sim::Parallelism& p) { p.pp = v; }); });
  connect(pp_schedule_, &QComboBox::currentTextChanged, this,
          [this](const QString& k) { change_parallelism([k](sim::Parallelism& p) { p.pp_schedule = k.toStdString(); }); });
  connect(pp_chunks_, &QSpinBox::valueChanged, this, [this](int v) { change_parallelism([v](sim::Parallelism& p) { p.pp_virtual = v; }); });
  connect(ep_, &QSpinBox::valueChanged, this, [this](int v) { change_parallelism([v](sim::Parallelism& p) { p.ep = v; }); });
  connect(micro_batches_, &QSpinBox::valueChanged, this, [this](int v) { run_change([&] { session_->set_micro_batches(v); }); });
}

void UnshardPanel::show_whatif_state() {
  const UnshardState& s = session_->state();
  const Prediction& p = session_->prediction();
  const sim::SimResult& r = p.result;
  {
    const QSignalBlocker b1(offload_), b2(offload_prefetch_), b3(pipelined_opt_), b4(tp_), b5(sp_), b6(cp_), b7(cp_kind_), b8(pp_),
        b9(pp_schedule_), b10(pp_chunks_), b11(ep_), b12(micro_batches_), b13(checkpoint_all_);
    offload_->setCurrentIndex(std::max(0, offload_->findData(QString::fromStdString(s.offload))));
    offload_prefetch_->setValue(s.offload_prefetch_depth);
    pipelined_opt_->setChecked(s.pipelined_optimizer);
    const bool offloading = s.offload != "none";
    offload_prefetch_->setEnabled(s.offload == "cpu");  // the prefetch moves the parameter shards only "cpu" keeps on the host
    pipelined_opt_->setEnabled(offloading);
    const sim::Parallelism& par = s.parallel;
    tp_->setValue(par.tp);
    sp_->setChecked(par.sequence_parallel);
    cp_->setValue(par.cp);
    cp_kind_->setCurrentText(QString::fromStdString(par.cp_kind));
    pp_->setValue(par.pp);
    pp_schedule_->setCurrentText(QString::fromStdString(par.pp_schedule));
    pp_chunks_->setValue(par.pp_virtual);
    ep_->setValue(par.ep);
    micro_batches_->setValue(s.micro_batches);
    // A measured profile has no layer shapes: tp, cp and ep are refused there; say so on the box
    // rather than letting the user find out from an error.
    const bool shapes = session_->takes_model_parallelism();
    for (QWidget* w : std::initializer_list<QWidget*>{tp_, sp_, cp_, cp_kind_, ep_}) {
      w->setEnabled(shapes);
      w->setToolTip(shapes ? w->property("ss_tip").toString() : kNeedsShapes);
    }
    sp_->setEnabled(shapes && par.tp > 1);
    cp_kind_->setEnabled(shapes && par.cp > 1);
    pp_schedule_->setEnabled(par.pp > 1);
    pp_chunks_->setEnabled(par.pp > 1 && par.pp_schedule == "interleaved");
    // The checkpoint-all choices: every mode some unit can take.
    QStringList modes;
    std::set<std::string> seen;
    for (int u = 0; u < session_->unit_count(); ++u)
      for (const auto& c : session_->checkpoint_choices(u))
        if (seen.insert(c).second) modes << QString::fromStdString(c);
    QStringList shown;
    for (int i = 1; i < checkpoint_all_->count(); ++i) shown << checkpoint_all_->itemData(i).toString();
    if (shown != modes || checkpoint_all_->count() == 0) {
      checkpoint_all_->clear();
      checkpoint_all_->addItem(modes.isEmpty() ? QStringLiteral("(no unit can be checkpointed)") : QStringLiteral("choose…"));
      checkpoint_all_->setToolTip(modes.isEmpty() ? QStringLiteral("No unit keeps activations for backward that recomputing "
                                                                   "would free (or the model records none)")
                                                  : QStringLiteral("Set every unit's activation checkpointing at once"));
      for (const QString& m : modes) checkpoint_all_->addItem(UnshardUnitModel::checkpoint_label(m), m);
    }
    checkpoint_all_->setCurrentIndex(0);
    checkpoint_all_->setEnabled(!modes.isEmpty());
  }
  const auto checkpointed = std::count_if(s.checkpoint.begin(), s.checkpoint.end(), [](const std::string& c) { return c != "none"; });
  // With a pipeline the result's ops are the shown stage's: its reruns, not the whole model's.
  const QString where = r.stages.empty() ? QString() : QStringLiteral(" in the stage shown");
  recompute_->setText(r.recomputes == 0 && checkpointed == 0
                          ? QStringLiteral("none")
                          : QStringLiteral("%1 checkpointed; %2%3, %4")
                                .arg(QString::fromStdString(count_of(checkpointed, "unit")),
                                     QString::fromStdString(count_of(r.recomputes, "forward rerun")), where, ms(r.recompute_ns)));
  if (s.offload == "none") offload_sum_->setText(QStringLiteral("none"));
  else
    offload_sum_->setText(QStringLiteral("%1: host copies %2 (%3), CPU optimizer %4")
                              .arg(QString::fromStdString(s.offload), ms(r.host_copy_ns), bytes(r.host_copy_bytes), ms(r.cpu_optimizer_ns)));
  QStringList mp;
  if (r.tp_collectives > 0) mp << QStringLiteral("TP %1 (%2)").arg(r.tp_collectives).arg(bytes(r.tp_bytes));
  if (r.cp_collectives > 0) mp << QStringLiteral("CP %1 (%2)").arg(r.cp_collectives).arg(bytes(r.cp_bytes));
  if (r.ep_collectives > 0) mp << QStringLiteral("EP %1 (%2)").arg(r.ep_collectives).arg(bytes(r.ep_bytes));
  model_parallel_->setText(mp.isEmpty() ? QStringLiteral("none")
                                        : mp.join(QStringLiteral(", ")) +
                                              QStringLiteral("; busy %1, exposed %2%3").arg(ms(r.model_parallel_ns), ms(r.model_parallel_exposed_ns), where));
  if (r.stages.empty()) {
    pipeline_->setText(s.micro_batches > 1 ? QStringLiteral("none (%1 micro-batches)").arg(s.micro_batches) : QStringLiteral("none"));
  } else {
    const int shown = std::clamp(r.shown_stage, 0, static_cast<int>(r.stages.size()) - 1);
    const auto& st = r.stages[static_cast<std::size_t>(shown)];
    std::int64_t max_peak = 0;
    for (const auto& x : r.stages) max_peak = std::max(max_peak, x.peak_bytes);
    pipeline_->setText(QStringLiteral("%1 stages × %2 micro-batches (%3); bubble %4; shown: stage %5 (%6), peak %7, "
                                      "%8 in flight, %9 sends")
                           .arg(r.stages.size())
                           .arg(s.micro_batches)
                           .arg(QString::fromStdString(s.parallel.pp_schedule))
                           .arg(ms(r.bubble_ns))
                           .arg(shown)
                           .arg(QString::fromStdString(st.units))
                           .arg(bytes(st.peak_bytes))
                           .arg(st.max_in_flight)
                           .arg(r.p2p_sends));
    pipeline_->setToolTip(QStringLiteral("The timeline and memory show this stage (the one with the highest peak); the step "
                                         "ends with the slowest stage. Highest stage peak %1.")
                              .arg(bytes(max_peak)));
  }
}

}  // namespace ss::unshard
