// The module tree as a QAbstractItemModel: one row per module (children under their parent),
// column 0 the module's full path (and class), then the columns of module_memory_stats.h. Qt::DisplayRole is
// formatted ("—" where the profile lacks the figure); Qt::UserRole is the raw number for sorting
// (missing sorts lowest); kFqnRole is the fully-qualified name (filtering, linking); kModuleRole
// the Profile::modules index.
#pragma once

#include <QAbstractItemModel>
#include <memory>

#include "storage/profile_model.h"
#include "views/memory/module_memory_stats.h"

namespace ss::memview {

class ModuleTreeModel : public QAbstractItemModel {
  Q_OBJECT
 public:
  static constexpr int kFqnRole = Qt::UserRole + 1;
  static constexpr int kModuleRole = Qt::UserRole + 2;

  explicit ModuleTreeModel(QObject* parent = nullptr) : QAbstractItemModel(parent) {}
  void set_data(std::shared_ptr<const Profile> profile, ModuleMemoryStats stats);
  const ModuleMemoryStats& stats() const { return stats_; }
  QModelIndex index_of_module(int module) const;

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  const std::vector<std::int32_t>& children_of(std::int32_t module) const;
  std::shared_ptr<const Profile> profile_;
  ModuleMemoryStats stats_;
  std::vector<std::int32_t> roots_;
  std::vector<int> row_in_parent_;
};

QString format_bytes(std::int64_t bytes);
QString format_duration(std::int64_t ns);

}  // namespace ss::memview
