#include "views/unshard/unshard_panel.h"

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QElapsedTimer>
#include <QGroupBox>
#include <QStyledItemDelegate>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QResizeEvent>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QTimer>
#include <QTreeView>
#include <QVBoxLayout>
#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <future>
#include <type_traits>
#include <optional>

#include "profiler/sim/fsdp_plan.h"
#include "profiler/sim/profile_extract.h"
#include "profiler/sim/sim_inputs.h"
#include "profiler/sim/sim_report.h"
#include "storage/errors.h"
#include "storage/units.h"
#include "views/timeline/timeline_widget.h"
#include "views/unshard/byte_spin_box.h"
#include "views/unshard/simulated_timeline.h"
#include "views/unshard/unshard_session.h"
#include "profiler/sim/json_input.h"
#include "views/unshard/panel_text.h"
#include "views/unshard/unshard_unit_model.h"

#ifndef SS_CLUSTERS_DIR
#define SS_CLUSTERS_DIR ""
#endif

namespace ss::unshard {

namespace {
using text::bytes;
using text::ms;

// Starts `timer` (made on first use, owned by `owner`) to call `on_ready` once `f` has its result,
// and `on_wait` at every poll before (e.g. to say for how long): the panel's background work
// (reading a profile, building a timeline) finishes on the GUI thread. The callbacks are those of
// the first call: they must read what changes from the owner, not capture it.
template <typename T, typename OnReady, typename OnWait = std::nullptr_t>
void poll_future(QObject* owner, QTimer*& timer, int interval_ms, const std::future<T>& f, OnReady on_ready, OnWait on_wait = nullptr) {
  if (!timer) {
    timer = new QTimer(owner);
    timer->setInterval(interval_ms);
    QObject::connect(timer, &QTimer::timeout, owner, [&f, on_ready, on_wait] {
      if (!f.valid()) return;
      if (f.wait_for(std::chrono::seconds(0)) == std::future_status::ready)
        on_ready();
      else if constexpr (!std::is_same_v<OnWait, std::nullptr_t>)
        on_wait();
    });
  }
  timer->start();
}
const QString kBucketingOff = QStringLiteral("off (one all-gather per unit)");
// Explicit colours: the notice stays readable while the panel around it is disabled, in either palette.
const QString kWarningStyle = QStringLiteral("QLabel { background: #fff1c2; color: #4a3500; border: 1px solid #d9a400; "
                                             "border-radius: 3px; padding: 6px; }");
const QString kUnavailableStyle = QStringLiteral("QLabel { background: #e8eef7; color: #1d2f4a; border: 1px solid #8aa2c4; "
                                                 "border-radius: 3px; padding: 8px; }");
const QString kNoProfile = QStringLiteral("No profile loaded: open a profile with FSDP units to plan which to keep unsharded.");

// fit_all()'s view of a profile: the whole profile and 1% either side.
void fit_whole(timeline::Viewport& v, const Profile& p) {
  const double span = static_cast<double>(p.time_end - p.time_begin);
  v.fit(static_cast<double>(p.time_begin) - span * 0.01, static_cast<double>(p.time_end) + span * 0.01);
}

bool shows_whole(const timeline::Viewport& v, const Profile& p) {
  return v.start_ns <= static_cast<double>(p.time_begin) + v.ns_per_px && v.end_ns() >= static_cast<double>(p.time_end) - v.ns_per_px;
}

// The view to keep when the timeline's profile is replaced: the user's own zoom and pan, when
// they look at a part of the step and the new step is of comparable length (within 2x);
// otherwise nothing, and the new step is shown whole, as the old one was.
std::optional<timeline::Viewport> viewport_to_keep(const timeline::TimelineController& c, const Profile& now, const Profile& next) {
  const timeline::Viewport& v = c.viewport();
  const double span = static_cast<double>(now.time_end - now.time_begin);
  const double next_span = static_cast<double>(next.time_end - next.time_begin);
  if (span <= 0 || next_span < span / 2 || next_span > span * 2 || shows_whole(v, now)) return std::nullopt;
  return v;
}
// The tree's Checkpoint column: a combo box of the values the unit can take (the model's
// ChoicesRole), committed as soon as one is picked.
class CheckpointDelegate : public QStyledItemDelegate {
 public:
  using QStyledItemDelegate::QStyledItemDelegate;
  QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem& option, const QModelIndex& index) const override {
    if (index.column() != UnshardUnitModel::ColCheckpoint) return QStyledItemDelegate::createEditor(parent, option, index);
    auto* box = new QComboBox(parent);
    for (const QString& v : index.data(UnshardUnitModel::ChoicesRole).toStringList()) box->addItem(UnshardUnitModel::checkpoint_label(v), v);
    connect(box, &QComboBox::activated, this, [this, box] {
      auto* self = const_cast<CheckpointDelegate*>(this);
      emit self->commitData(box);
      emit self->closeEditor(box);
    });
    return box;
  }
  void setEditorData(QWidget* editor, const QModelIndex& index) const override {
    auto* box = qobject_cast<QComboBox*>(editor);
    if (!box) return QStyledItemDelegate::setEditorData(editor, index);
    box->setCurrentIndex(std::max(0, box->findData(index.data(Qt::EditRole))));
  }
  void setModelData(QWidget* editor, QAbstractItemModel* model, const QModelIndex& index) const override {
    auto* box = qobject_cast<QComboBox*>(editor);
    if (!box) return QStyledItemDelegate::setModelData(editor, model, index);
    model->setData(index, box->currentData(), Qt::EditRole);
  }
};

}  // namespace

UnshardPanel::UnshardPanel(QWidget* parent) : QWidget(parent), scratch_path_(timeline_scratch_path()) { build(); }
UnshardPanel::~UnshardPanel() { drop_timeline_build(); }

void UnshardPanel::build() {
  // Two columns: the settings, numbers and buttons on the left (in a scroll area, so a short
  // window never cuts them off), and the unit tree over the simulated timeline on the right,
  // taking the full height: they are what the user works in.
  auto* content = new QWidget;
  auto* scroll = new QScrollArea;
  settings_ = content;
  content->installEventFilter(this);
  settings_scroll_ = scroll;
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setWidgetResizable(true);
  auto* root = new QVBoxLayout(this);
  root->setContentsMargins(0, 0, 0, 0);
  columns_ = new QSplitter(Qt::Horizontal);
  columns_->setChildrenCollapsible(false);
  columns_->addWidget(scroll);
  root->addWidget(columns_);
  auto* outer = new QVBoxLayout(content);
  unavailable_ = new QLabel(kNoProfile);
  unavailable_->setWordWrap(true);
  unavailable_->setStyleSheet(kUnavailableStyle);
  unavailable_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  outer->addWidget(unavailable_);
  warning_ = new QLabel;
  warning_->setWordWrap(true);
  warning_->setStyleSheet(kWarningStyle);
  warning_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  warning_->hide();
  auto* controls = new QFormLayout;
  world_ = new QSpinBox;
  world_->setRange(1, 10'000'000);
  per_node_ = new QSpinBox;
  per_node_->setRange(1, 1024);
  bucket_cap_ = new QDoubleSpinBox;
  bucket_cap_->setRange(0, 1e6);
  bucket_cap_->setDecimals(0);
  bucket_cap_->setSuffix(QStringLiteral(" MB"));
  bucket_cap_->setSpecialValueText(kBucketingOff);
  bucket_cap_->setToolTip(QStringLiteral("Default cap of the auto-buckets: consecutive units (forward order) share one all-gather "
                                         "while their parameters stay under the cap"));
  budget_ = new ByteSpinBox;
  preset_ = new QComboBox;
  for (auto* w : std::initializer_list<QWidget*>{world_, per_node_, bucket_cap_, budget_}) static_cast<QAbstractSpinBox*>(w)->setKeyboardTracking(false);
  controls->addRow(QStringLiteral("Cluster preset"), preset_);
  controls->addRow(QStringLiteral("World size"), world_);
  controls->addRow(QStringLiteral("GPUs per node"), per_node_);
  controls->addRow(QStringLiteral("Bucket cap (default)"), bucket_cap_);
  // Per-bucket overrides (FsdpPlan::bucket_cap_mb's numeric keys); also editable per layer in the
  // tree's "Bucket cap" column.
  overrides_ = new QTableWidget(0, 2);
  overrides_->setHorizontalHeaderLabels({QStringLiteral("Bucket"), QStringLiteral("Cap (MB)")});
  overrides_->verticalHeader()->hide();
  overrides_->horizontalHeader()->setStretchLastSection(true);
  overrides_->setSelectionBehavior(QAbstractItemView::SelectRows);
  overrides_->setSelectionMode(QAbstractItemView::SingleSelection);
  // A fixed height: a table that may grow takes whatever height the column has spare, so that
  // every text below changing length would move the controls under it.
  overrides_->setFixedHeight(84);
  overrides_->setToolTip(QStringLiteral("Caps for single buckets, by index in forward order; edit a cap to change it"));
  add_override_ = new QPushButton(QStringLiteral("Add"));
  remove_override_ = new QPushButton(QStringLiteral("Remove"));
  add_override_->setToolTip(QStringLiteral("Override the cap of the first bucket that has none"));
  auto* override_box = new QHBoxLayout;
  auto* override_buttons = new QVBoxLayout;
  override_buttons->addWidget(add_override_);
  override_buttons->addWidget(remove_override_);
  override_buttons->addStretch(1);
  override_box->addWidget(overrides_, 1);
  override_box->addLayout(override_buttons);
  controls->addRow(QStringLiteral("Per-bucket caps"), override_box);
  controls->addRow(QStringLiteral("Memory budget"), budget_);
  build_whatif_controls(controls);

  auto* numbers = new QGridLayout;
  step_ = new QLabel;
  delta_ = new QLabel;
  delta_->setWordWrap(true);  // "measured ... ; simulated as profiled ...": two lines in the settings column
  peak_ = new QLabel;
  exposed_ = new QLabel;
  memory_bar_ = new QProgressBar;
  memory_bar_->setRange(0, 1000);
  memory_bar_->setTextVisible(true);
  for (auto* l : {step_, delta_, peak_, exposed_}) l->setTextInteractionFlags(Qt::TextSelectableByMouse);
  QFont big = step_->font();
  big.setPointSizeF(big.pointSizeF() * 1.4);
  big.setBold(true);
  step_->setFont(big);
  numbers->addWidget(new QLabel(QStringLiteral("Predicted step")), 0, 0);
  numbers->addWidget(step_, 0, 1);
  numbers->addWidget(new QLabel(QStringLiteral("vs baseline")), 1, 0);
  numbers->addWidget(delta_, 1, 1);
  // Shown for a profile recorded with a capture window only (set once per session: it does not
  // move the rows below while the plan changes).
  profiler_cost_caption_ = new QLabel(QStringLiteral("Profiler cost"));
  profiler_cost_ = new QLabel;
  profiler_cost_->setWordWrap(true);
  profiler_cost_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  numbers->addWidget(profiler_cost_caption_, 2, 0);
  numbers->addWidget(profiler_cost_, 2, 1);
  profiler_cost_caption_->hide();
  profiler_cost_->hide();
  numbers->addWidget(new QLabel(QStringLiteral("Exposed comm.")), 3, 0);
  numbers->addWidget(exposed_, 3, 1);
  numbers->addWidget(new QLabel(QStringLiteral("Peak memory")), 4, 0);
  numbers->addWidget(peak_, 4, 1);
  numbers->addWidget(memory_bar_, 5, 0, 1, 2);
  // "measured ...; simulated as profiled ...": two lines whatever it says, so that nothing below moves.
  delta_->setMinimumHeight(2 * delta_->fontMetrics().lineSpacing());
  // What the plan's knobs add up to: below every control (their texts change length with the
  // knobs, and rows growing above a control would move it under the cursor).
  auto* details = new QGridLayout;
  recompute_ = new QLabel;
  offload_sum_ = new QLabel;
  model_parallel_ = new QLabel;
  pipeline_ = new QLabel;
  int row = 0;
  for (auto [name, l] : {std::pair<const char*, QLabel*>{"Recompute", recompute_}, {"Offload", offload_sum_},
                         {"TP / CP / EP", model_parallel_}, {"Pipeline", pipeline_}}) {
    l->setWordWrap(true);
    l->setTextInteractionFlags(Qt::TextSelectableByMouse);
    details->addWidget(new QLabel(QString::fromLatin1(name)), row, 0, Qt::AlignTop);
    details->addWidget(l, row++, 1);
  }
  details->setColumnStretch(1, 1);

  // The prediction first: with the what-if controls the column is taller than most windows, and
  // the numbers a change moves must stay in view while the controls below are used. Undo, Redo
  // and Export right under them; every message that comes and goes (a refused change, the replay
  // warning) and every text that changes length goes below the last control.
  outer->addLayout(numbers);
  // Right under the prediction it qualifies: at the column's foot it sat below the fold, unseen
  // unless the user scrolled the settings down.
  outer->addWidget(warning_);
  outer->addSpacing(6);

  auto* edit_buttons = new QHBoxLayout;
  auto* buttons = new QGridLayout;
  undo_button_ = new QPushButton(QStringLiteral("Undo"));
  redo_button_ = new QPushButton(QStringLiteral("Redo"));
  plan_button_ = new QPushButton(QStringLiteral("Plan automatically"));
  export_button_ = new QPushButton(QStringLiteral("Export plan…"));
  open_plan_button_ = new QPushButton(QStringLiteral("Open plan…"));
  open_plan_button_->setToolTip(QStringLiteral("Apply a plan file (shardscope plan -o plan.json, or one exported here): its "
                                               "kept units, buckets, checkpointing, offload and parallelism; Undo takes it back"));
  model_button_ = new QPushButton(QStringLiteral("Model description…"));
  model_button_->setToolTip(QStringLiteral("Plan on a model description (resources/models/*.json) instead of the profile: "
                                           "what tensor, context and expert parallelism need"));
  plan_button_->setToolTip(QStringLiteral("Choose the units to keep unsharded within the budget with the planner on the right"));
  buckets_button_ = new QPushButton(QStringLiteral("Plan buckets"));
  buckets_button_->setToolTip(QStringLiteral("Merge units gathered one after the other into one all-gather (FSDP2 "
                                             "fully_shard([m1, m2])) where the simulated step gets shorter, within the budget"));
  strategy_ = new QComboBox;
  strategy_->addItem(QStringLiteral("cost"), static_cast<int>(sim::Strategy::Cost));
  strategy_->addItem(QStringLiteral("greedy"), static_cast<int>(sim::Strategy::Greedy));
  strategy_->addItem(QStringLiteral("exact"), static_cast<int>(sim::Strategy::Exact));
  strategy_->setToolTip(QStringLiteral("cost: exposed all-gather time saved per byte; greedy: reverse forward order, "
                                       "splitting what does not fit; exact: every subset (up to 20 candidate units)"));
  edit_buttons->addWidget(undo_button_);
  edit_buttons->addWidget(redo_button_);
  edit_buttons->addWidget(open_plan_button_);
  edit_buttons->addWidget(export_button_);
  outer->addLayout(edit_buttons);
  outer->addSpacing(6);
  outer->addLayout(controls);
  outer->addSpacing(6);
  buttons->addWidget(plan_button_, 0, 0, 1, 2);
  buttons->addWidget(strategy_, 0, 2);
  buttons->addWidget(buckets_button_, 1, 0, 1, 3);
  buttons->addWidget(model_button_, 2, 0, 1, 3);
  outer->addLayout(buttons);
  outer->addSpacing(6);
  outer->addLayout(details);
  outer->addWidget(error_line_);

  tree_ = new QTreeView;
  tree_->setUniformRowHeights(true);
  tree_->setAlternatingRowColors(true);
  tree_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed | QAbstractItemView::SelectedClicked);
  tree_->setItemDelegateForColumn(UnshardUnitModel::ColCheckpoint, new CheckpointDelegate(tree_));
  timeline_ = new timeline::TimelineWidget;
  timeline_->set_fit_rows(false);  // replaced on every change: the user's rows and scroll stay
  timeline_->setMinimumHeight(160);
  timeline_->installEventFilter(this);
  split_ = new QSplitter(Qt::Vertical);
  split_->addWidget(tree_);
  split_->addWidget(timeline_);
  split_->setStretchFactor(0, 1);
  split_->setStretchFactor(1, 1);
  split_->setSizes({420, 300});  // in proportion: the tree a little taller than the timeline
  split_->hide();                // until a profile is simulated
  columns_->addWidget(split_);
  columns_->setStretchFactor(0, 0);
  columns_->setStretchFactor(1, 1);
  columns_->setSizes({430, 1000});
  filler_ = new QWidget;
  filler_->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Expanding);
  outer->addWidget(filler_, 1);
  outer->addStretch(1);  // spare height goes below the buttons, not between the settings' rows
  status_ = new QLabel;
  status_->setWordWrap(true);
  outer->addWidget(status_);
  scroll->setWidget(content);


  auto* undo_action = new QAction(QStringLiteral("Undo"), this);
  undo_action->setShortcut(QKeySequence::Undo);
  undo_action->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  auto* redo_action = new QAction(QStringLiteral("Redo"), this);
  redo_action->setShortcuts({QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Z), QKeySequence::Redo});
  redo_action->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  addAction(undo_action);
  addAction(redo_action);
  connect(undo_action, &QAction::triggered, this, &UnshardPanel::undo);
  connect(redo_action, &QAction::triggered, this, &UnshardPanel::redo);
  connect(undo_button_, &QPushButton::clicked, this, &UnshardPanel::undo);
  connect(redo_button_, &QPushButton::clicked, this, &UnshardPanel::redo);
  connect(plan_button_, &QPushButton::clicked, this, &UnshardPanel::plan_automatically);
  connect(buckets_button_, &QPushButton::clicked, this, &UnshardPanel::plan_buckets);
  connect(export_button_, &QPushButton::clicked, this, &UnshardPanel::on_export_clicked);
  connect(open_plan_button_, &QPushButton::clicked, this, &UnshardPanel::on_open_plan_clicked);
  connect(world_, &QSpinBox::valueChanged, this, [this](int v) { run_change([&] { session_->set_world_size(v); }); });
  connect(per_node_, &QSpinBox::valueChanged, this, [this](int v) { run_change([&] { session_->set_gpus_per_node(v); }); });
  connect(bucket_cap_, &QDoubleSpinBox::valueChanged, this, [this](double v) { run_change([&] { session_->set_bucket_cap_mb(v); }); });
  connect(budget_, &QDoubleSpinBox::valueChanged, this,
          [this](double v) { run_change([&] { session_->set_budget_bytes(static_cast<std::int64_t>(std::llround(v))); }); });
  connect(add_override_, &QPushButton::clicked, this, &UnshardPanel::add_override);
  connect(remove_override_, &QPushButton::clicked, this, &UnshardPanel::remove_override);
  connect(overrides_, &QTableWidget::itemChanged, this, [this](QTableWidgetItem* item) {
    if (item->column() != 1) return;
    const int bucket = overrides_->item(item->row(), 0)->data(Qt::UserRole).toInt();
    bool ok = false;
    const double mb = item->text().toDouble(&ok);
    if (!ok || !(mb >= 0) || mb > 1e9) {
      status_->setText(QStringLiteral("Bucket cap: \"%1\" is not a size in MB").arg(item->text()));
      show_overrides(true);
      return;
    }
    run_change([&] { session_->set_bucket_cap_override(bucket, mb); });
  });
  connect(preset_, &QComboBox::currentIndexChanged, this, [this](int i) { run_change([&] { session_->set_preset(i); }); });
  connect(model_button_, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("Model description"), QString(),
                                                      QStringLiteral("Model description (*.json)"));
    if (!path.isEmpty()) open_model_description(path, session_ ? session_->state().world_size : 0);
  });
  connect_whatif_controls();
  setEnabled(false);
}

void UnshardPanel::show_unavailable(const QString& why) {
  drop_timeline_build();
  timeline_revision_.reset();
  tree_->setModel(nullptr);
  model_.reset();
  session_.reset();
  timeline_profile_.reset();
  timeline_->set_profile(nullptr);
  {
    const QSignalBlocker block(preset_);
    preset_->clear();
  }
  {
    const QSignalBlocker block(overrides_);
    overrides_->setRowCount(0);
  }
  shown_overrides_.clear();
  shown_bucket_count_ = -1;
  for (auto* l : {step_, delta_, peak_, exposed_, recompute_, offload_sum_, model_parallel_, pipeline_, profiler_cost_}) l->clear();
  profiler_cost_caption_->hide();
  profiler_cost_->hide();
  error_line_->clear();
  error_line_->hide();
  memory_bar_->setValue(0);
  warning_->clear();
  warning_->hide();
  unavailable_->setText(why);
  unavailable_->show();
  split_->hide();  // an empty tree and an empty timeline ("open a profile") would only confuse
  filler_->show();
  setEnabled(false);
}

bool UnshardPanel::open_profile(const QString& path) {
  if (loading_.valid()) finish_loading();  // a background read of an older profile gives way
  return install_session(path, [&] {
    return std::make_unique<UnshardSession>(UnshardSession::from_profile(path.toStdString(), SS_CLUSTERS_DIR, nullptr, measured_cluster_));
  });
}

bool UnshardPanel::open_model_description(const QString& path, int world) {
  if (loading_.valid()) finish_loading();
  pending_path_.clear();  // the description replaces whatever profile waited to be read
  return install_session(path, [&] {
    return std::make_unique<UnshardSession>(UnshardSession::from_model(path.toStdString(), world, SS_CLUSTERS_DIR, measured_cluster_));
  });
}

void UnshardPanel::open_profile_in_background(const QString& path, std::shared_ptr<const Profile> loaded) {
  if (loading_.valid()) finish_loading();
  loading_message_ = (loaded ? QStringLiteral("Preparing %1 for re-simulation (FSDP units, compute per module, collectives)")
                             : QStringLiteral("Reading %1 for re-simulation"))
                         .arg(QFileInfo(path).fileName());
  show_unavailable(loading_message_ + QStringLiteral("…"));
  status_->setText(loading_message_ + QStringLiteral("…"));
  loading_path_ = path;
  loading_clock_.start();
  loading_ = std::async(std::launch::async, [p = path.toStdString(), loaded = std::move(loaded), measured = measured_cluster_] {
    return std::make_unique<UnshardSession>(UnshardSession::from_profile(p, SS_CLUSTERS_DIR, loaded, measured));
  });
  // Every poll that finds it still running says for how long: a wait of seconds with a frozen
  // message reads as a hang, and the disabled controls as clicks dropped.
  poll_future(this, loading_poll_, 30, loading_, [this] { finish_loading(); }, [this] {
    const qint64 s = loading_clock_.elapsed() / 1000;
    if (s < 1) return;
    const QString text = loading_message_ + QStringLiteral("… %1 s. The settings and the tree take input when it is done.").arg(s);
    if (unavailable_->text() != text) unavailable_->setText(text);
  });
}

void UnshardPanel::finish_loading() {
  if (!loading_.valid()) return;
  if (loading_poll_) loading_poll_->stop();
  auto future = std::move(loading_);
  install_session(loading_path_, [&] { return future.get(); });  // get() rethrows the worker's error
}

bool UnshardPanel::install_session(const QString& path, const std::function<std::unique_ptr<UnshardSession>()>& make) {
  try {
    auto s = make();
    drop_timeline_build();  // a build for the previous session must not land on this one
    timeline_revision_.reset();
    tree_->setModel(nullptr);
    model_.reset();
    session_ = std::move(s);
  } catch (const sim::NoFsdpUnitsError& e) {
    error_ = QString::fromStdString(e.what());
    show_unavailable(QStringLiteral("Unshard is not available for %1: no FSDP units found, so there is nothing to keep "
                                    "unsharded or to re-simulate.\n\nRecord the run with shardscope record (its Python hooks "
                                    "mark the modules wrapped with FSDP2 fully_shard as FSDP units), or import a trace that "
                                    "carries FSDP:: ranges (e.g. \"FSDP::pre_forward (layers.0)\", as FSDP2 records them).")
                         .arg(QFileInfo(path).fileName()));
    status_->setText(QStringLiteral("Cannot simulate this profile: ") + error_);
    return false;
  } catch (const std::exception& e) {  // ProfileError, or anything else the reading threw
    error_ = QString::fromStdString(e.what());
    show_unavailable(QStringLiteral("Unshard is not available for %1: the profile cannot be simulated.\n\n%2")
                         .arg(QFileInfo(path).fileName(), error_));
    status_->setText(QStringLiteral("Cannot simulate this profile: ") + error_);
    return false;
  }
  unavailable_->clear();
  unavailable_->hide();
  filler_->hide();
  split_->show();
  model_ = std::make_unique<UnshardUnitModel>(session_.get());
  tree_->setModel(model_.get());
  tree_->expandAll();
  // Every column as wide as its contents, the module names included: with the what-if columns a
  // stretched module column got only what the others left, often nothing, in a narrow tab. The
  // last column takes any spare width; a narrow tree scrolls sideways instead.
  tree_->header()->setStretchLastSection(true);
  for (int c = UnshardUnitModel::ColModule; c < UnshardUnitModel::ColCount; ++c)
    tree_->header()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
  connect(model_.get(), &UnshardUnitModel::sessionChanged, this, [this] {
    hide_error_line();
    show_state();
  });
  connect(model_.get(), &UnshardUnitModel::changeFailed, this, [this](const QString& m) { show_refused(m); });
  {
    const QSignalBlocker block(preset_);
    preset_->clear();
    for (const auto& p : session_->presets()) preset_->addItem(QString::fromStdString(p.name));
  }
  setEnabled(true);
  shown_bucket_count_ = -1;  // a new session: the overrides table is rebuilt
  status_->setText(QStringLiteral("Simulating %1 (%2 FSDP units)").arg(path).arg(session_->unit_count()));
  show_profiler_cost();
  show_state();
  return true;
}

// A profile recorded with a capture window: what the step is judged against and how much the
// profiler slowed it (as `simulate` says it in its Unobserved line), in the status line, the
// Profiler cost row and the tooltips of it and the measured step. Once per session.
void UnshardPanel::show_profiler_cost() {
  const sim::SimInputs& in = session_->inputs();
  const QString calibration = QString::fromStdString(sim::calibration_summary(in));
  const QString tip = calibration.isEmpty() ? QString() : calibration[0].toUpper() + calibration.mid(1);
  delta_->setToolTip(tip);
  profiler_cost_->setToolTip(tip);
  profiler_cost_caption_->setVisible(!calibration.isEmpty());
  profiler_cost_->setVisible(!calibration.isEmpty());
  if (calibration.isEmpty()) {
    profiler_cost_->clear();
    return;
  }
  profiler_cost_->setText(QStringLiteral("%1%2% on the profiled step; unprofiled: median of %3%4")
                              .arg(in.recording_slowdown_pct() >= 0 ? "+" : "")
                              .arg(in.recording_slowdown_pct(), 0, 'f', 1)
                              .arg(QString::fromStdString(count_of(in.unobserved_steps, "step")))
                              .arg(in.unobserved_steps_left_out > 0
                                       ? QStringLiteral(", %1 holding an evaluation left out").arg(in.unobserved_steps_left_out)
                                       : QString()));
  status_->setText(status_->text() + QStringLiteral("; ") + calibration);
}

void UnshardPanel::set_profile_path(const QString& path, std::shared_ptr<const Profile> loaded) {
  pending_path_ = path;
  pending_loaded_ = std::move(loaded);
  if (isVisible()) {
    pending_path_.clear();
    open_profile_in_background(path, std::move(pending_loaded_));
  }
}

void UnshardPanel::showEvent(QShowEvent* e) {
  QWidget::showEvent(e);
  fit_settings_column();
  if (!pending_path_.isEmpty()) {
    const QString path = pending_path_;
    pending_path_.clear();
    open_profile_in_background(path, std::move(pending_loaded_));
  }
}

void UnshardPanel::fit_settings_column() {
  // The settings column at least as wide as its widgets want (polished by now, so their hints
  // are right), up to 480 px (beyond that it scrolls); the tree and the simulated timeline get
  // the rest of the width.
  const int want = settings_->minimumSizeHint().width() + settings_scroll_->verticalScrollBar()->sizeHint().width() + 4;
  settings_scroll_->setMinimumWidth(std::min(want, 480));
}

void UnshardPanel::show_refused(const QString& why) {
  error_line_->setText(QStringLiteral("\u26A0 Not simulated (the prediction shown is the last one that worked): ") + why);
  error_line_->show();
  status_->setText(QStringLiteral("Not simulated: ") + why);
}

void UnshardPanel::run_change(const std::function<void()>& change) {
  if (!session_) return;
  QElapsedTimer t;
  t.start();
  try {
    change();
    hide_error_line();
    // A refusal's line goes with it once a change works again (an undo back to where it was).
    if (status_->text().startsWith(QStringLiteral("Not simulated"))) status_->clear();
  } catch (const std::exception& e) {
    // A ProfileError from the simulator (or anything else a change threw: never a crash). The
    // session kept its state and prediction; the controls snap back to it in show_state.
    show_refused(QString::fromStdString(e.what()));
  }
  last_simulate_ms_ = static_cast<double>(t.nsecsElapsed()) / 1e6;
  t.restart();
  model_->refresh();
  show_state();
  last_refresh_ms_ = static_cast<double>(t.nsecsElapsed()) / 1e6;
}

void UnshardPanel::hide_error_line() {
  // Only when shown: clearing a label re-lays out the whole settings column, on every change.
  if (error_line_->isHidden()) return;
  error_line_->clear();
  error_line_->hide();
}

void UnshardPanel::add_override() {
  if (!session_) return;
  const auto& taken = session_->state().bucket_cap_overrides_mb;
  int bucket = 0;
  while (taken.count(bucket)) ++bucket;
  // Starts at the cap the bucket has now, so adding changes nothing until the cap is edited (with
  // bucketing off, it turns auto-bucketing on at the simulator's default cap).
  const double mb = session_->bucketing_on() ? session_->bucket_cap_of(bucket) : kInductorBucketCapMb;
  run_change([&] { session_->set_bucket_cap_override(bucket, mb); });
}

void UnshardPanel::remove_override() {
  if (!session_) return;
  const int row = overrides_->currentRow();
  if (row < 0 || !overrides_->item(row, 0)) return;
  const int bucket = overrides_->item(row, 0)->data(Qt::UserRole).toInt();
  run_change([&] { session_->set_bucket_cap_override(bucket, 0); });
}

void UnshardPanel::show_overrides(bool force) {
  const auto& o = session_->state().bucket_cap_overrides_mb;
  // Rebuilt only when the overrides or the bucket count change (most changes are toggles).
  if (!force && o == shown_overrides_ && shown_bucket_count_ == session_->prediction().bucket_count) return;
  shown_overrides_ = o;
  shown_bucket_count_ = session_->prediction().bucket_count;
  const QSignalBlocker block(overrides_);
  overrides_->setRowCount(static_cast<int>(o.size()));
  int row = 0;
  for (const auto& [bucket, mb] : o) {
    auto* b = new QTableWidgetItem(QStringLiteral("#%1").arg(bucket));
    b->setData(Qt::UserRole, bucket);
    b->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
    if (bucket >= session_->prediction().bucket_count) b->setToolTip(QStringLiteral("No such bucket in this plan: the override has no effect"));
    overrides_->setItem(row, 0, b);
    overrides_->setItem(row, 1, new QTableWidgetItem(QString::number(mb, 'g', 10)));
    ++row;
  }
  remove_override_->setEnabled(!o.empty());
}

void UnshardPanel::refresh_timeline() {
  // A refused change, an empty undo or a change to the same state keeps the prediction: no new
  // profile to write and read (seconds for a big step).
  if (timeline_revision_ == session_->revision()) return;
  timeline_revision_ = session_->revision();
  const Prediction& p = session_->prediction();
  if (p.result.ops.size() + p.result.memory.size() > kSyncTimelineRows) {
    if (timeline_build_.valid()) timeline_stale_ = true;  // the running build's state is an older one
    else start_timeline_build();
    return;
  }
  drop_timeline_build();  // a build for an earlier, larger step must not land over this one
  std::shared_ptr<const Profile> next;
  try {
    next = simulated_timeline_profile(session_->inputs(), p.step, p.result, scratch_path_);
  } catch (const ProfileError& e) {
    status_->setText(QStringLiteral("Timeline not updated: ") + QString::fromStdString(e.what()));
    return;
  }
  show_timeline_profile(std::move(next));
}

void UnshardPanel::start_timeline_build() {
  // The worker gets its own copy of the prediction: the session may move on (and replace it)
  // while the profile is written and read. The inputs never change within a session, and every
  // path that ends the session waits for the build first (drop_timeline_build).
  struct Job {
    const sim::SimInputs* in;
    sim::CompiledStep step;
    sim::SimResult result;
  };
  auto job = std::make_shared<Job>(Job{&session_->inputs(), session_->prediction().step, session_->prediction().result});
  timeline_stale_ = false;
  timeline_build_ = std::async(std::launch::async, [job, path = timeline_scratch_path()] {
    return simulated_timeline_profile(*job->in, job->step, job->result, path);
  });
  poll_future(this, timeline_poll_, 5, timeline_build_, [this] { finish_timeline_build(); });
}

void UnshardPanel::finish_timeline_build() {
  if (!timeline_build_.valid()) return;
  if (timeline_poll_) timeline_poll_->stop();
  auto future = std::move(timeline_build_);
  std::shared_ptr<const Profile> next;
  try {
    next = future.get();
  } catch (const ProfileError& e) {
    status_->setText(QStringLiteral("Timeline not updated: ") + QString::fromStdString(e.what()));
  }
  if (next && session_) show_timeline_profile(std::move(next));
  if (timeline_stale_ && session_) start_timeline_build();  // the state moved on meanwhile
}

void UnshardPanel::wait_for_timeline() {
  while (timeline_build_.valid()) {
    timeline_build_.wait();
    finish_timeline_build();
  }
}

void UnshardPanel::drop_timeline_build() {
  if (timeline_poll_) timeline_poll_->stop();
  if (timeline_build_.valid()) timeline_build_.wait();  // its scratch file is removed by the worker
  timeline_build_ = {};
  timeline_stale_ = false;
}

void UnshardPanel::show_timeline_profile(std::shared_ptr<const Profile> next) {
  std::optional<timeline::Viewport> keep;
  const float scroll = timeline_->controller() ? timeline_->controller()->scroll_y() : 0.0f;
  if (timeline_->controller() && timeline_profile_) keep = viewport_to_keep(*timeline_->controller(), *timeline_profile_, *next);
  timeline_profile_ = std::move(next);
  timeline_->set_profile(timeline_profile_);
  timeline_->controller()->set_scroll_y(scroll);  // lanes come and go only with offload and parallelism
  if (keep) {
    timeline::Viewport& v = timeline_->controller()->viewport();
    v.start_ns = keep->start_ns;
    v.ns_per_px = keep->ns_per_px;
  }
  emit timelineUpdated();
}

bool UnshardPanel::eventFilter(QObject* watched, QEvent* e) {
  if (watched == settings_ && e->type() == QEvent::LayoutRequest) fit_settings_column();  // its texts changed
  // The timeline keeps its scale when resized; a view of the whole step (the usual one, and the
  // first, set while the panel is still hidden and small) is fitted to the new width instead.
  if (watched == timeline_ && e->type() == QEvent::Resize && timeline_->controller() && timeline_profile_) {
    timeline::Viewport& v = timeline_->controller()->viewport();
    if (shows_whole(v, *timeline_profile_)) {
      const float w = static_cast<float>(static_cast<QResizeEvent*>(e)->size().width());
      v.width_px = std::max(w, timeline::kLabelWidth + 10) - timeline::kLabelWidth;  // as TimelineController::set_size
      fit_whole(v, *timeline_profile_);
    }
  }
  return QWidget::eventFilter(watched, e);
}

void UnshardPanel::undo() { run_change([this] { session_->undo(); }); }
void UnshardPanel::redo() { run_change([this] { session_->redo(); }); }

void UnshardPanel::plan_automatically() {
  run_change([this] {
    const auto strategy = static_cast<sim::Strategy>(strategy_->currentData().toInt());
    const auto o = session_->plan_automatically(strategy);
    status_->setText(QStringLiteral("%1 planner: %2 kept unsharded after %3%4")
                         .arg(strategy_->currentText(),
                              QString::fromStdString(count_of(static_cast<std::int64_t>(o.unsharded.size()), "unit")),
                              QString::fromStdString(count_of(o.simulations, "simulation")))
                         .arg(o.fits ? QString() : QStringLiteral(" — does NOT fit the budget")));
  });
}

void UnshardPanel::plan_buckets() {
  run_change([this] {
    const auto o = session_->plan_buckets_automatically();
    QStringList lists;
    for (const auto& b : o.buckets) {
      QStringList names;
      for (const auto& n : b) names << QString::fromStdString(n);
      lists << names.join(QLatin1Char('+'));
    }
    status_->setText(QStringLiteral("bucket planner: %1 after %2%3")
                         .arg(o.buckets.empty() ? QStringLiteral("no merge shortens the step")
                                                : QString::fromStdString(count_of(static_cast<std::int64_t>(o.buckets.size()), "bucket")) +
                                                      QStringLiteral(" (") + lists.join(QStringLiteral("; ")) + QStringLiteral(")"),
                              QString::fromStdString(count_of(o.simulations, "simulation")),
                              QString::fromStdString(" (" + format_duration_ns(o.before.step_ns) + " -> " + format_duration_ns(o.after.step_ns) + ")")));
    // As `plan --buckets` says it: without a measured per-unit cost a merge saves collective
    // latency only, and on a host-bound step (every CPU run) that is most of what it saves.
    const sim::ClusterModel c = session_->cluster();
    if (c.fsdp_unit_forward_us <= 0 && c.fsdp_unit_backward_us <= 0)
      status_->setText(status_->text() + QStringLiteral("; the cluster has no measured FSDP per-unit cost, so merges save only "
                                                        "collective latency here (measure it: torchrun -m shardscope.measure_fsdp_units; "
                                                        "then shardscope gui FILE --cluster units.json)"));
  });
}

bool UnshardPanel::apply_plan_file(const QString& path) {
  std::string text;
  try {
    text = sim::read_text_file(path.toStdString());
  } catch (const ProfileError& e) {
    error_ = QString::fromStdString(e.what());
    status_->setText(QStringLiteral("Plan not applied: ") + error_);
    return false;
  }
  return apply_plan_json(QString::fromStdString(text), path);
}

bool UnshardPanel::apply_plan_json(const QString& json, const QString& where) {
  // A profile set while the panel was hidden (a tab not shown) is opened now: the plan is for
  // it, not for the session of the profile before.
  if (!pending_path_.isEmpty()) {
    const QString path = pending_path_;
    pending_path_.clear();
    open_profile(path);
  }
  finish_loading();
  if (!session_) {
    if (error_.isEmpty()) error_ = QStringLiteral("no profile is open in the Unshard panel");
    return false;
  }
  try {
    session_->apply_plan_file_json(json.toStdString(), where.toStdString());
  } catch (const ProfileError& e) {
    error_ = QString::fromStdString(e.what());
    status_->setText(QStringLiteral("Plan not applied: ") + error_);
    return false;
  }
  model_->refresh();
  show_state();
  return true;
}

bool UnshardPanel::export_plan(const QString& path) {
  if (!session_) return false;
  const QFileInfo json(path);
  const QString python = json.absolutePath() + QLatin1Char('/') + json.completeBaseName() + QStringLiteral(".py");
  try {
    session_->export_plan(path.toStdString());
    sim::write_file_atomically(python.toStdString(), sim::plan_to_python(session_->plan_for_export(), session_->inputs().model.second_model_roots()));
  } catch (const ProfileError& e) {
    error_ = QString::fromStdString(e.what());
    status_->setText(error_);
    return false;
  }
  status_->setText(QStringLiteral("Wrote %1 and %2").arg(path, python));
  return true;
}

void UnshardPanel::on_export_clicked() {
  const QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Export plan"), QStringLiteral("plan.json"),
                                                    QStringLiteral("Plan (*.json)"));
  if (!path.isEmpty()) export_plan(path);
}

void UnshardPanel::on_open_plan_clicked() {
  const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("Open plan"), QString(), QStringLiteral("Plan (*.json)"));
  if (!path.isEmpty()) apply_plan_file(path);
}

QString UnshardPanel::step_text() const { return step_->text(); }
QString UnshardPanel::peak_text() const { return peak_->text(); }
QString UnshardPanel::delta_text() const { return delta_->text(); }
QString UnshardPanel::profiler_cost_text() const { return profiler_cost_->text(); }
QString UnshardPanel::warning_text() const { return warning_->isHidden() ? QString() : warning_->text(); }
QString UnshardPanel::status_text() const { return status_->text(); }
QString UnshardPanel::error_text() const { return error_line_->isHidden() ? QString() : error_line_->text(); }
QString UnshardPanel::whatif_text() const {
  return QStringList{recompute_->text(), offload_sum_->text(), model_parallel_->text(), pipeline_->text()}.join(QLatin1Char('\n'));
}
QString UnshardPanel::unavailable_text() const { return unavailable_->isHidden() ? QString() : unavailable_->text(); }

void UnshardPanel::show_state() {
  if (!session_) return;
  const UnshardState& s = session_->state();
  const Prediction& p = session_->prediction();
  {
    const QSignalBlocker b1(world_), b2(per_node_), b3(bucket_cap_), b4(budget_), b5(preset_);
    world_->setValue(s.world_size);
    per_node_->setValue(s.gpus_per_node);
    // With overrides but no default cap, the other buckets take the simulator's default.
    const QString off_text = s.bucket_cap_overrides_mb.empty() ? kBucketingOff
                                                               : QStringLiteral("simulator default (%1 MB)").arg(kInductorBucketCapMb, 0, 'f', 0);
    if (bucket_cap_->specialValueText() != off_text) bucket_cap_->setSpecialValueText(off_text);
    bucket_cap_->setValue(s.bucket_cap_mb);
    budget_->set_bytes(s.budget_bytes);
    preset_->setCurrentIndex(s.preset);
  }
  step_->setText(ms(p.step_ns));
  QString delta;
  auto pct = [](TimeNs a, TimeNs b) { return 100.0 * (static_cast<double>(a) - static_cast<double>(b)) / static_cast<double>(b); };
  // Calibrated to the unobserved step (record --steps A:B): the job measured without the profiler.
  if (p.measured_step_ns > 0)
    delta += QStringLiteral("%1 %2 (%3%4%)")
                 .arg(session_->inputs().calibrated ? QStringLiteral("unprofiled") : QStringLiteral("measured"), ms(p.measured_step_ns))
                 .arg(p.step_ns >= p.measured_step_ns ? "+" : "")
                 .arg(pct(p.step_ns, p.measured_step_ns), 0, 'f', 2);
  if (p.baseline_step_ns > 0)
    delta += QStringLiteral("%1simulated as profiled %2 (%3%4%)").arg(delta.isEmpty() ? "" : ";  ").arg(ms(p.baseline_step_ns))
                 .arg(p.step_ns >= p.baseline_step_ns ? "+" : "").arg(pct(p.step_ns, p.baseline_step_ns), 0, 'f', 2);
  delta_->setText(delta);
  // The replay (the profile's own plan at its recorded configuration, on the chosen preset) against
  // the measured step: a number the user should not trust without knowing why it is off.
  const sim::ReplayCheck& replay = p.replay;
  if (replay.far || !replay.collectives.match) {
    QString text;
    if (replay.far) {
      text = QStringLiteral("\u26A0 The replay is far from the measurement: the profile as recorded simulates to %1 on \"%2\", measured %3 (%4%5%, more than %6%).")
                 .arg(ms(replay.replay_ns), QString::fromStdString(session_->presets()[static_cast<std::size_t>(s.preset)].name),
                      ms(replay.measured_ns), replay.error_pct >= 0 ? QStringLiteral("+") : QString())
                 .arg(replay.error_pct, 0, 'f', 1)
                 .arg(sim::kReplayWarnPct, 0, 'f', 0);
      text += QStringLiteral(" Predictions here inherit that error. Why:");
      for (const auto& why : replay.reasons) text += QStringLiteral("\n  \u2022 ") + QString::fromStdString(why);
    }
    // Collectives the replay does not issue as the job did: the loop is not modelled, whatever the time says.
    if (!replay.collectives.match) {
      QString sentence = QString::fromStdString(replay.collectives.warning);
      if (!sentence.isEmpty()) sentence[0] = sentence[0].toUpper();
      text += (text.isEmpty() ? QStringLiteral("\u26A0 ") : QStringLiteral("\n\u26A0 ")) + sentence + QStringLiteral(".");
    }
    if (warning_->text() != text) warning_->setText(text);
    warning_->show();
  } else {
    warning_->clear();
    warning_->hide();
  }
  exposed_->setText(QStringLiteral("%1 of %2 compute").arg(ms(p.exposed_comm_ns), ms(p.compute_ns)));
  QString peak = bytes(p.peak_bytes) + QStringLiteral(" of budget ") + bytes(p.budget_bytes);
  if (p.gpu_capacity_bytes > 0) peak += QStringLiteral(", GPU ") + bytes(p.gpu_capacity_bytes);
  if (!p.fits_budget) peak += QStringLiteral("  — OVER BUDGET");
  else if (!p.fits_gpu) peak += QStringLiteral("  — OVER GPU CAPACITY");
  peak_->setText(peak);
  const double frac = p.budget_bytes > 0 ? static_cast<double>(p.peak_bytes) / static_cast<double>(p.budget_bytes) : 0.0;
  memory_bar_->setValue(static_cast<int>(std::min(1.0, frac) * 1000));
  memory_bar_->setFormat(QStringLiteral("%1% of budget").arg(frac * 100.0, 0, 'f', 1));
  // A style sheet change re-polishes the widget: only when the colour changes.
  const QString bar_style = p.fits_budget ? QString() : QStringLiteral("QProgressBar::chunk { background: #d04040; }");
  if (memory_bar_->styleSheet() != bar_style) memory_bar_->setStyleSheet(bar_style);
  undo_button_->setEnabled(session_->can_undo());
  redo_button_->setEnabled(session_->can_redo());
  undo_button_->setToolTip(QString::fromStdString(session_->undo_label()));
  redo_button_->setToolTip(QString::fromStdString(session_->redo_label()));
  show_overrides(false);
  show_whatif_state();
  refresh_timeline();
  emit predictionUpdated();
}

}  // namespace ss::unshard
