#include "views/memory/module_tree_model.h"

#include <QGuiApplication>
#include <QPalette>

#include "storage/units.h"

namespace ss::memview {

// The project's one set of unit rules (storage/units.h), as QStrings.
QString format_bytes(std::int64_t b) { return QString::fromStdString(ss::format_bytes(b)); }
QString format_duration(std::int64_t ns) { return QString::fromStdString(format_duration_ns(ns)); }

void ModuleTreeModel::set_data(std::shared_ptr<const Profile> profile, ModuleMemoryStats stats) {
  beginResetModel();
  profile_ = std::move(profile);
  stats_ = std::move(stats);
  roots_.clear();
  row_in_parent_.clear();
  if (profile_) {
    row_in_parent_.assign(profile_->modules.size(), 0);
    for (std::size_t i = 0; i < profile_->modules.size(); ++i) {
      const auto& m = profile_->modules[i];
      if (m.parent < 0) {
        row_in_parent_[i] = static_cast<int>(roots_.size());
        roots_.push_back(static_cast<std::int32_t>(i));
      }
      for (std::size_t c = 0; c < m.children.size(); ++c) row_in_parent_[static_cast<std::size_t>(m.children[c])] = static_cast<int>(c);
    }
  }
  endResetModel();
}

const std::vector<std::int32_t>& ModuleTreeModel::children_of(std::int32_t module) const {
  return module < 0 ? roots_ : profile_->modules[static_cast<std::size_t>(module)].children;
}

QModelIndex ModuleTreeModel::index(int row, int column, const QModelIndex& parent) const {
  if (!profile_ || row < 0 || column < 0 || column >= columnCount()) return {};
  if (parent.isValid() && parent.column() != 0) return {};
  const std::int32_t p = parent.isValid() ? static_cast<std::int32_t>(parent.internalId()) : -1;
  const auto& kids = children_of(p);
  if (row >= static_cast<int>(kids.size())) return {};
  return createIndex(row, column, static_cast<quintptr>(kids[static_cast<std::size_t>(row)]));
}

QModelIndex ModuleTreeModel::parent(const QModelIndex& child) const {
  if (!child.isValid() || !profile_) return {};
  const std::int32_t p = profile_->modules[static_cast<std::size_t>(child.internalId())].parent;
  if (p < 0) return {};
  return createIndex(row_in_parent_[static_cast<std::size_t>(p)], 0, static_cast<quintptr>(p));
}

int ModuleTreeModel::rowCount(const QModelIndex& parent) const {
  if (!profile_) return 0;
  if (parent.isValid() && parent.column() != 0) return 0;
  return static_cast<int>(children_of(parent.isValid() ? static_cast<std::int32_t>(parent.internalId()) : -1).size());
}

int ModuleTreeModel::columnCount(const QModelIndex&) const { return 1 + kColumnCount; }

QModelIndex ModuleTreeModel::index_of_module(int module) const {
  if (!profile_ || module < 0 || module >= static_cast<int>(profile_->modules.size())) return {};
  return createIndex(row_in_parent_[static_cast<std::size_t>(module)], 0, static_cast<quintptr>(module));
}

QVariant ModuleTreeModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !profile_) return {};
  const auto m = static_cast<std::size_t>(index.internalId());
  const ModuleNode& node = profile_->modules[m];
  if (role == kFqnRole) return QString::fromStdString(node.fqn);
  if (role == kModuleRole) return static_cast<int>(m);
  const bool elsewhere = m < stats_.on_other_stage.size() && stats_.on_other_stage[m];
  if (role == Qt::ForegroundRole && elsewhere) return QGuiApplication::palette().color(QPalette::Disabled, QPalette::Text);
  if (index.column() == 0) {
    if (role == Qt::DisplayRole || role == Qt::UserRole) {
      // The full path (layers.15.attention), as the chart, the timeline and the CLI name it.
      std::string name = node.fqn.empty() ? "(root)" : node.fqn;
      if (!node.class_name.empty()) name += "  [" + node.class_name + "]";
      if (elsewhere) name += "  (another stage)";
      return QString::fromStdString(name);
    }
    if (role == Qt::ToolTipRole)
      return QString::fromStdString(node.fqn + (node.is_fsdp_unit ? "  (FSDP unit)" : "") +
                                    (elsewhere ? "\nruns on another rank's pipeline stage: rank " +
                                                     std::to_string(stats_.rank) + " holds none of it"
                                               : ""));
    return {};
  }
  const int col = index.column() - 1;
  const std::int64_t v = m < stats_.modules.size() ? stats_.modules[m][static_cast<std::size_t>(col)] : kMissing;
  if (role == Qt::DisplayRole) {
    if (v == kMissing) return QString::fromUtf8("\u2014");
    return column_is_time(col) ? format_duration(v) : format_bytes(v);
  }
  if (role == Qt::UserRole) return v == kMissing ? QVariant::fromValue<qlonglong>(-1) : QVariant::fromValue<qlonglong>(v);
  if (role == Qt::TextAlignmentRole) return int(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}

QVariant ModuleTreeModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation == Qt::Horizontal && role == Qt::ToolTipRole && section > 0) {
    static const char* tips[] = {
        "Parameter bytes each rank keeps (recorded sharded-parameter memory, else full size / world size for FSDP units)",
        "Parameter bytes at full size (module table)",
        "Peak gradient bytes live, attributed to this module or its children",
        "Peak optimizer-state bytes live, attributed to this module or its children",
        "Peak activation bytes live, attributed to this module or its children",
        "Peak all-gather buffer bytes live, attributed to this module or its children",
        "Highest allocated bytes on the rank while this module runs",
        "Summed duration of the module's forward ranges",
        "Summed duration of the module's backward and recompute ranges"};
    return QString(tips[section - 1]);
  }
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  if (section == 0) return QString("Module");
  return QString(column_title(section - 1));
}

}  // namespace ss::memview
