// The hierarchical memory view: a rank selector, a filter box, the module tree (sortable, full
// module paths as the chart and the timeline name them) and the stacked memory chart. Selecting a
// module emits moduleSelected and highlights it in the chart; selectModule() selects one without
// echoing the signal back (the link with the timeline goes both ways). setTimeRange shows the
// timeline's visible window in the chart; a click on the chart emits timeClicked.
#pragma once

#include <QWidget>
#include <memory>
#include <utility>

#include "storage/profile_model.h"

class QComboBox;
class QLineEdit;
class QSortFilterProxyModel;
class QTimer;
class QTreeView;

namespace ss::memview {

class ModuleTreeModel;
class MemoryChart;

class MemoryView : public QWidget {
  Q_OBJECT
 public:
  explicit MemoryView(QWidget* parent = nullptr);
  void set_profile(std::shared_ptr<const Profile> profile);
  ModuleTreeModel* model() { return model_; }
  QSortFilterProxyModel* proxy() { return proxy_; }
  QTreeView* tree() { return tree_; }
  QLineEdit* filter() { return filter_; }
  MemoryChart* chart() { return chart_; }
  int selected_module() const;
  int rank() const { return rank_shown_; }

 signals:
  void moduleSelected(int module);
  void timeClicked(qint64 t);  // profile time under a click on the chart

 public slots:
  void selectModule(int module);
  // The time window the chart shows (profile clock), e.g. the timeline's visible range; applied
  // kRangeDelayMs after the last call (a zoom gesture is many calls).
  void setTimeRange(qint64 t0, qint64 t1);

 public:
  static constexpr int kRangeDelayMs = 120;

 private:
  void load_rank(int rank);
  void highlight(int module);
  int rank_shown_ = -1;
  QTimer* range_timer_ = nullptr;
  std::pair<qint64, qint64> pending_range_{0, 0};
  std::shared_ptr<const Profile> profile_;
  QComboBox* rank_ = nullptr;
  QLineEdit* filter_ = nullptr;
  QTreeView* tree_ = nullptr;
  ModuleTreeModel* model_ = nullptr;
  QSortFilterProxyModel* proxy_ = nullptr;
  MemoryChart* chart_ = nullptr;
  bool echo_ = true;
};

}  // namespace ss::memview
