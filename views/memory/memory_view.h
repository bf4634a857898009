// The hierarchical memory view: a rank selector, a filter box, the module tree (sortable) and the
// stacked memory chart. Selecting a module emits moduleSelected; selectModule() selects one
// without echoing the signal back (the link with the timeline goes both ways).
#pragma once

#include <QWidget>
#include <memory>

#include "storage/profile_model.h"

class QComboBox;
class QLineEdit;
class QSortFilterProxyModel;
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

 signals:
  void moduleSelected(int module);

 public slots:
  void selectModule(int module);

 private:
  void load_rank(int rank);
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
