// The Unshard panel (issue 7): the module tree with a "keep unsharded" box per FSDP unit, world
// size, GPUs per node, bucket cap, memory budget and cluster preset. Every change re-simulates
// synchronously and updates the predicted step time, peak memory against the budget and the
// GPU's capacity, exposed all-gather per unit and the difference from the measured baseline.
// Undo/Redo (Ctrl+Z / Ctrl+Shift+Z), "Plan automatically" (cost planner) and "Export plan".
#pragma once

#include <QWidget>
#include <memory>

class QAction;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTreeView;

namespace ss::unshard {

class UnshardSession;
class UnshardUnitModel;

class UnshardPanel : public QWidget {
  Q_OBJECT
 public:
  explicit UnshardPanel(QWidget* parent = nullptr);
  ~UnshardPanel() override;

  // Loads the profile into a new session; false (and last_error()) when it cannot be simulated.
  bool open_profile(const QString& path);
  // The main window's profile: loaded at once when the panel is visible, else when it is shown
  // (re-reading the file for the simulator is not free on large profiles).
  void set_profile_path(const QString& path);
  UnshardSession* session() { return session_.get(); }
  UnshardUnitModel* model() { return model_.get(); }
  QTreeView* tree() { return tree_; }
  QString last_error() const { return error_; }

  // What the panel shows, as text (tests compare these with the simulator's own numbers).
  QString step_text() const;
  QString peak_text() const;
  QString delta_text() const;

  void undo();
  void redo();
  void plan_automatically();
  // Writes the plan file; returns false with last_error() on failure.
  bool export_plan(const QString& path);

 signals:
  void predictionUpdated();  // the numbers on screen now match the session's state

 protected:
  void showEvent(QShowEvent* e) override;

 private:
  void build();
  void show_state();  // controls and numbers from the session (no change is made)
  void run_change(const std::function<void()>& change);
  void on_export_clicked();

  std::unique_ptr<UnshardSession> session_;
  std::unique_ptr<UnshardUnitModel> model_;
  QTreeView* tree_ = nullptr;
  QSpinBox* world_ = nullptr;
  QSpinBox* per_node_ = nullptr;
  QDoubleSpinBox* bucket_cap_ = nullptr;
  QDoubleSpinBox* budget_ = nullptr;
  QComboBox* preset_ = nullptr;
  QLabel* step_ = nullptr;
  QLabel* delta_ = nullptr;
  QLabel* peak_ = nullptr;
  QLabel* exposed_ = nullptr;
  QLabel* status_ = nullptr;
  QProgressBar* memory_bar_ = nullptr;
  QPushButton* undo_button_ = nullptr;
  QPushButton* redo_button_ = nullptr;
  QPushButton* plan_button_ = nullptr;
  QPushButton* export_button_ = nullptr;
  QString error_;
  QString pending_path_;  // set but not loaded yet
};

}  // namespace ss::unshard
