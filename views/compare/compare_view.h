// The Compare view (issue 7, item 1): the open profile (A) and a second one (B: a simulation, or
// another run) on one time axis, stacked, aligned at a chosen step and rank on each side; the
// headline (step time, exposed communication, with error %) and the per-module, per-phase table,
// sorted by the largest |delta|. The two timelines are linked: zooming or panning one moves the
// other by the same amount, so the aligned instants stay one above the other; clicking a table
// row moves both to that module and re-aligns them at its start on each side.
#pragma once

#include <QWidget>
#include <memory>
#include <optional>

#include "profiler/compare/comparison.h"
#include "storage/profile_model.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QPushButton;
class QTableView;

namespace ss::timeline {
class TimelineWidget;
}

namespace ss::compareview {

class CompareTableModel;
class CompareFilterProxy;

class CompareView : public QWidget {
  Q_OBJECT
 public:
  explicit CompareView(QWidget* parent = nullptr);
  // A new A: B, the comparison and the table are dropped (reset()); the main window calls this
  // for every profile it opens, so a comparison never spans unrelated runs.
  void set_profile(std::shared_ptr<const Profile> a, const QString& path_a);
  // Forgets B (and any B still being read) and the comparison; A stays.
  void reset();
  // Loads B and compares at `alignment`; false (and last_error()) when B cannot be read or the
  // alignment names a rank or step a side lacks. On failure the previous comparison stays.
  bool compare_with(const QString& path_b, const compare::Alignment& alignment = {});
  // The same with B read on a worker thread (what "Compare with…" does: a large B does not freeze
  // the window). Ends with comparisonChanged or compareFailed; a new A set meanwhile drops it.
  void compare_with_in_background(const QString& path_b, const compare::Alignment& alignment = {});
  bool reading() const { return reading_; }
  // Re-aligns the current A and B (the rank and step boxes do this).
  bool set_alignment(const compare::Alignment& alignment);

  const compare::Alignment& alignment() const { return alignment_; }
  const std::optional<compare::Comparison>& comparison() const { return comparison_; }
  QString path_a() const { return path_a_; }
  QString path_b() const { return path_b_; }
  CompareTableModel* model() { return model_; }
  QTableView* table() { return table_; }
  CompareFilterProxy* proxy() { return proxy_; }
  QCheckBox* show_all_box() { return show_all_; }
  QCheckBox* fold_cpu_box() { return fold_cpu_; }
  QCheckBox* only_rank_box() { return only_rank_; }
  timeline::TimelineWidget* timeline_a() { return timeline_a_; }
  timeline::TimelineWidget* timeline_b() { return timeline_b_; }
  QComboBox* rank_box(bool b_side) { return b_side ? rank_b_ : rank_a_; }
  QComboBox* step_box(bool b_side) { return b_side ? step_b_ : step_a_; }
  QString headline_text() const;
  // The one-sided modules warning ("N modules only in A, M only in B ..."), empty when hidden.
  QString mismatch_text() const;
  QString last_error() const { return error_; }
  // Add to a B time to place it on A's axis: the step alignment, or a module's start after a row click.
  TimeNs link_offset() const { return offset_; }

  // Moves both timelines to the module of the table model's row `row` and aligns them at its
  // first range on each side (what a click on the row does).
  void show_module_row(int row);
  // Selects row `view_row` of the table as sorted on screen and does what a click does.
  void click_table_row(int view_row);

 protected:
  void showEvent(QShowEvent* e) override;

 signals:
  void comparisonChanged();
  void saveRequested();  // "Save comparison…": the main window stores it in the Comparisons dock
  void compareFailed(QString message);

 private:
  bool run(const std::shared_ptr<const Profile>& b, const QString& path_b, const compare::Alignment& alignment);
  void fill_choices();
  compare::Alignment alignment_from_boxes() const;
  void mirror(bool from_a);
  void show_window();
  void apply_folding();

  std::shared_ptr<const Profile> a_, b_;
  QString path_a_, path_b_;
  compare::Alignment alignment_;
  std::optional<compare::Comparison> comparison_;
  TimeNs offset_ = 0;
  bool mirroring_ = false;
  bool fit_on_show_ = false;  // compared while hidden: the timelines had no width to fit to
  bool fold_on_show_ = false;  // folded while hidden: the panes had no height to fit the rows to
  bool reading_ = false;
  int generation_ = 0;  // bumped by reset(): a background read for an older A is dropped
  CompareTableModel* model_ = nullptr;
  CompareFilterProxy* proxy_ = nullptr;
  QTableView* table_ = nullptr;
  timeline::TimelineWidget* timeline_a_ = nullptr;
  timeline::TimelineWidget* timeline_b_ = nullptr;
  QLabel* headline_ = nullptr;
  QLabel* mismatch_ = nullptr;
  QCheckBox* show_all_ = nullptr;
  QCheckBox* fold_cpu_ = nullptr;
  QCheckBox* only_rank_ = nullptr;
  QLabel* caption_a_ = nullptr;
  QLabel* caption_b_ = nullptr;
  QComboBox* rank_a_ = nullptr;
  QComboBox* step_a_ = nullptr;
  QComboBox* rank_b_ = nullptr;
  QComboBox* step_b_ = nullptr;
  QPushButton* choose_ = nullptr;
  QPushButton* save_ = nullptr;
  QString error_;
};

}  // namespace ss::compareview
