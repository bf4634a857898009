#include "views/timeline/aggregate_model.h"

#include <cmath>

#include "storage/units.h"

namespace ss::timeline {

void AggregateModel::set_rows(std::vector<AggregateRow> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

int AggregateModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int AggregateModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant AggregateModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(rows_.size())) return {};
  const AggregateRow& r = rows_[static_cast<std::size_t>(index.row())];
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Name: return QString::fromStdString(r.name);
      case Count: return QVariant::fromValue<qlonglong>(r.count);
      case Total: return QString::fromStdString(format_duration_ns(static_cast<std::int64_t>(std::llround(r.total_ns))));
      case Mean: return QString::fromStdString(format_duration_ns(static_cast<std::int64_t>(std::llround(r.mean_ns))));
      case Share: return QString::number(r.share * 100, 'f', 1) + " %";
      default: return {};
    }
  }
  if (role == Qt::UserRole) {  // raw values, for sorting and tests
    switch (index.column()) {
      case Name: return QString::fromStdString(r.name);
      case Count: return QVariant::fromValue<qlonglong>(r.count);
      case Total: return r.total_ns;
      case Mean: return r.mean_ns;
      case Share: return r.share;
      default: return {};
    }
  }
  if (role == Qt::TextAlignmentRole && index.column() != Name) return int(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}

QVariant AggregateModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[] = {"Name", "Count", "Total", "Mean", "Share"};
  return section >= 0 && section < ColumnCount ? QString(names[section]) : QVariant();
}

}  // namespace ss::timeline
