// The Unshard (what-if) panel (issues 7 and 15): the module tree with a "keep unsharded" box and an
// activation-checkpointing choice per FSDP unit (and its offload copies), offload (mode, prefetch
// depth, pipelined CPU optimizer), a parallelism row (tp, sequence parallel, cp and its kind, pp,
// schedule and chunks, ep, micro-batches; tp/cp/ep disabled for a measured profile, which has no
// layer shapes), world size, GPUs per node, bucket caps (a default, and per-bucket overrides edited in the tree's
// "Bucket cap" column or the overrides table), memory budget and cluster preset. Every change
// re-simulates synchronously and updates the predicted step time, peak memory against the budget
// and the GPU's capacity, exposed all-gather per unit, the difference from the measured baseline
// and a timeline of the simulated step (keeping the user's zoom when the step's length is
// comparable). Undo/Redo (Ctrl+Z / Ctrl+Shift+Z), "Plan automatically" (cost planner) and
// "Export plan". A warning label says when the replay of the profile as recorded, under the chosen
// preset, is more than 10 % from the measured step, and why; a profile the panel cannot simulate
// (no FSDP units, ...) leaves it disabled with the reason shown in it; a change the simulator
// refuses (tp x pp not dividing the world ...) is shown in an error line and the last good
// prediction stays. Besides a profile the panel opens a model description (resources/models).
#pragma once

#include <QElapsedTimer>
#include <QWidget>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "profiler/sim/fsdp_plan.h"
#include "storage/profile_model.h"

class QScrollArea;
class QAction;
class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QSplitter;
class QTableWidget;
class QTimer;
class QTreeView;

namespace ss::timeline {
class TimelineWidget;
}

namespace ss::unshard {

class ByteSpinBox;
class UnshardSession;
class UnshardUnitModel;

class UnshardPanel : public QWidget {
  Q_OBJECT
 public:
  explicit UnshardPanel(QWidget* parent = nullptr);
  ~UnshardPanel() override;

  // Loads the profile into a new session; false (and last_error()) when it cannot be simulated.
  bool open_profile(const QString& path);
  // Loads a model description (resources/models/*.json) at `world` GPUs (0: its default): the
  // input tensor, context and expert parallelism need. False (and last_error()) when unreadable.
  bool open_model_description(const QString& path, int world = 0);
  // A cluster file of the user's (`gui --cluster`: measured host or per-unit figures, or a whole
  // cluster) offered beside the presets and chosen, in every profile or description opened after.
  void set_measured_cluster(const QString& path) { measured_cluster_ = path.toStdString(); }
  // The main window's profile (`loaded`: as the app read it, so that the worker does not read its
  // kernels and ranges again): made into a session on a worker thread when the panel is shown (at
  // once if it is visible), since that takes seconds on a big profile; meanwhile the panel says
  // what it is doing and for how long, and its controls wait.
  void set_profile_path(const QString& path, std::shared_ptr<const Profile> loaded = nullptr);
  // The session of the profile last set; nullptr while that profile waits to be shown (the
  // session still held is the previous profile's and must not be used for this one). While it
  // is being read in the background, this waits for it.
  UnshardSession* session() {
    finish_loading();
    return pending_path_.isEmpty() ? session_.get() : nullptr;
  }
  bool loading() const { return loading_.valid(); }
  // A step with more simulated ops and memory events than this has its timeline profile (a SQLite
  // round trip of ~5 us per row) built on a worker thread, so the numbers follow a change at once
  // and the timeline a few tens of milliseconds later (docs/benchmarks.md).
  static constexpr std::size_t kSyncTimelineRows = 3000;
  // True while the timeline's profile is being built for a state (or an older one).
  bool timeline_pending() const { return timeline_build_.valid(); }
  // Waits for a background build and installs it (and the current state's, if it moved on).
  void wait_for_timeline();
  // Reads the profile for the simulator on a worker thread; the session is installed when it
  // arrives (a timer polls), or at once by session() / apply_plan_json().
  void open_profile_in_background(const QString& path, std::shared_ptr<const Profile> loaded = nullptr);
  UnshardUnitModel* model() { return model_.get(); }
  QTreeView* tree() { return tree_; }
  // The timeline of the current prediction, and the simulated profile it shows.
  ss::timeline::TimelineWidget* timeline() { return timeline_; }
  std::shared_ptr<const Profile> timeline_profile() const { return timeline_profile_; }
  QTableWidget* bucket_overrides() { return overrides_; }
  QComboBox* preset_box() { return preset_; }
  QSpinBox* world_box() { return world_; }
  QSpinBox* gpus_per_node_box() { return per_node_; }
  ByteSpinBox* budget_box() { return budget_; }
  // The offload and parallelism controls (tests drive them as a user would).
  QComboBox* offload_box() { return offload_; }
  QSpinBox* offload_prefetch_box() { return offload_prefetch_; }
  QCheckBox* pipelined_optimizer_box() { return pipelined_opt_; }
  QComboBox* checkpoint_all_box() { return checkpoint_all_; }
  QSpinBox* tp_box() { return tp_; }
  QCheckBox* sp_box() { return sp_; }
  QSpinBox* cp_box() { return cp_; }
  QComboBox* cp_kind_box() { return cp_kind_; }
  QSpinBox* pp_box() { return pp_; }
  QComboBox* pp_schedule_box() { return pp_schedule_; }
  QSpinBox* pp_chunks_box() { return pp_chunks_; }
  QSpinBox* ep_box() { return ep_; }
  QSpinBox* micro_batches_box() { return micro_batches_; }
  // The last refused change's message (empty after a change the simulator took).
  QString error_text() const;
  // The summary's what-if lines: recomputes, offload, model-parallel collectives, pipeline.
  QString whatif_text() const;
  // Milliseconds of the last change: the session's re-simulation, and everything after it (the
  // numbers, the tree and the timeline's profile).
  double last_simulate_ms() const { return last_simulate_ms_; }
  double last_refresh_ms() const { return last_refresh_ms_; }
  QString last_error() const { return error_; }
  QString status_text() const;  // the line at the bottom of the settings column

  // What the panel shows, as text (tests compare these with the simulator's own numbers).
  QString step_text() const;
  QString peak_text() const;
  QString delta_text() const;
  // "Profiler cost" (a profile recorded with a capture window): how much slower the profiled step
  // was than the job without the profiler, which the prediction is judged against; "" otherwise.
  QString profiler_cost_text() const;
  // The replay warning (empty while hidden: the replay is within 10 % or there is no measurement).
  QString warning_text() const;
  // Why the panel is disabled (empty while a profile is loaded).
  QString unavailable_text() const;

  void undo();
  void redo();
  // Runs the planner chosen in the strategy box (cost by default) under the budget.
  void plan_automatically();
  void plan_buckets();
  QComboBox* strategy_box() { return strategy_; }
  // Applies a plan file's text (UnshardSession::apply_plan_file_json) as one undoable change,
  // loading a pending profile first; false with last_error() when there is no profile or the
  // plan does not fit it.
  // `where` names the plan in error messages.
  bool apply_plan_json(const QString& json, const QString& where = QStringLiteral("saved plan"));
  // The same for a plan file on disk (Open plan…, `shardscope gui --plan`, the benches); a file
  // that cannot be read is an error with last_error() too, and either error is in the status line.
  bool apply_plan_file(const QString& path);
  // Writes the plan file and, next to it (same name, .py), the FSDP2 Python that applies it;
  // returns false with last_error() on failure.
  bool export_plan(const QString& path);

 signals:
  void predictionUpdated();  // the numbers and the timeline now match the session's state
  // The timeline shows the current prediction: just before predictionUpdated, or, for a large
  // step whose profile is built in the background, when that build lands.
  void timelineUpdated();

 protected:
  void showEvent(QShowEvent* e) override;
  bool eventFilter(QObject* watched, QEvent* e) override;

 private:
  void build();
  void show_unavailable(const QString& why);  // no session: disabled, reason shown, numbers cleared
  void show_state();  // controls and numbers from the session (no change is made)
  void run_change(const std::function<void()>& change);
  void show_refused(const QString& why);  // a change the simulator refused: the error line and status
  void show_profiler_cost();  // a profile recorded with a capture window: the calibration, said
  void on_export_clicked();
  void on_open_plan_clicked();
  void refresh_timeline();
  void show_timeline_profile(std::shared_ptr<const Profile> next);
  void start_timeline_build();   // a large step: the profile round trip on a worker thread
  void finish_timeline_build();  // installs a landed build; starts the next if the state moved on
  void drop_timeline_build();    // a new session or none: a build of the old one is not shown
  void show_overrides(bool force);
  void add_override();
  void remove_override();
  void build_whatif_controls(QFormLayout* controls);
  void connect_whatif_controls();
  void show_whatif_state();
  void hide_error_line();  // the offload / parallelism controls and the what-if summary lines
  void change_parallelism(const std::function<void(sim::Parallelism&)>& edit);

  std::unique_ptr<UnshardSession> session_;
  std::unique_ptr<UnshardUnitModel> model_;
  QTreeView* tree_ = nullptr;
  QSplitter* columns_ = nullptr;  // settings on the left, tree and timeline on the right
  QWidget* settings_ = nullptr;
  QScrollArea* settings_scroll_ = nullptr;
  void fit_settings_column();
  QSplitter* split_ = nullptr;  // tree and timeline: hidden while there is nothing to simulate
  QWidget* filler_ = nullptr;   // takes the splitter's height while it is hidden
  QSpinBox* world_ = nullptr;
  QSpinBox* per_node_ = nullptr;
  QDoubleSpinBox* bucket_cap_ = nullptr;
  ByteSpinBox* budget_ = nullptr;
  QComboBox* preset_ = nullptr;
  QComboBox* strategy_ = nullptr;
  QTableWidget* overrides_ = nullptr;
  QComboBox* checkpoint_all_ = nullptr;
  QComboBox* offload_ = nullptr;
  QSpinBox* offload_prefetch_ = nullptr;
  QCheckBox* pipelined_opt_ = nullptr;
  QSpinBox* tp_ = nullptr;
  QCheckBox* sp_ = nullptr;
  QSpinBox* cp_ = nullptr;
  QComboBox* cp_kind_ = nullptr;
  QSpinBox* pp_ = nullptr;
  QComboBox* pp_schedule_ = nullptr;
  QSpinBox* pp_chunks_ = nullptr;
  QSpinBox* ep_ = nullptr;
  QSpinBox* micro_batches_ = nullptr;
  std::optional<std::uint64_t> timeline_revision_;  // the session revision the timeline shows (or is being built for)
  QLabel* error_line_ = nullptr;   // the last refused change, until the next one that works
  QLabel* recompute_ = nullptr;
  QLabel* offload_sum_ = nullptr;
  QLabel* model_parallel_ = nullptr;
  QLabel* pipeline_ = nullptr;
  QPushButton* model_button_ = nullptr;
  double last_simulate_ms_ = 0, last_refresh_ms_ = 0;
  QPushButton* add_override_ = nullptr;
  QPushButton* remove_override_ = nullptr;
  ss::timeline::TimelineWidget* timeline_ = nullptr;
  std::shared_ptr<const Profile> timeline_profile_;
  std::string scratch_path_;
  std::map<int, double> shown_overrides_;  // what the overrides table shows
  int shown_bucket_count_ = -1;  // -1: nothing shown yet  // where the simulated profile is written on its way to the timeline
  QLabel* step_ = nullptr;
  QLabel* delta_ = nullptr;
  QLabel* profiler_cost_caption_ = nullptr;
  QLabel* profiler_cost_ = nullptr;
  QLabel* peak_ = nullptr;
  QLabel* exposed_ = nullptr;
  QLabel* status_ = nullptr;
  QLabel* warning_ = nullptr;      // replay far from the measured step, and why
  QLabel* unavailable_ = nullptr;  // why there is nothing to simulate
  QProgressBar* memory_bar_ = nullptr;
  QPushButton* undo_button_ = nullptr;
  QPushButton* redo_button_ = nullptr;
  QPushButton* plan_button_ = nullptr;
  QPushButton* buckets_button_ = nullptr;
  QPushButton* export_button_ = nullptr;
  QPushButton* open_plan_button_ = nullptr;
  QString error_;
  QString pending_path_;  // set but not loaded yet
  std::string measured_cluster_;  // set_measured_cluster
  void finish_loading();  // installs the session being read, waiting for it if need be
  bool install_session(const QString& path, const std::function<std::unique_ptr<UnshardSession>()>& make);
  std::future<std::unique_ptr<UnshardSession>> loading_;
  QString loading_path_;
  QTimer* loading_poll_ = nullptr;
  QElapsedTimer loading_clock_;
  QString loading_message_;  // what the background read is doing, for the waiting notice
  std::shared_ptr<const Profile> pending_loaded_;  // with pending_path_
  std::future<std::shared_ptr<const Profile>> timeline_build_;
  bool timeline_stale_ = false;  // the state changed while a build ran: build again when it lands
  QTimer* timeline_poll_ = nullptr;
};

}  // namespace ss::unshard
