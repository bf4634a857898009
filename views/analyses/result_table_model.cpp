#include "views/analyses/result_table_model.h"

#include <variant>

namespace ss::analyses {

ResultTableModel::ResultTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void ResultTableModel::set_table(plugins::ResultTable table) {
  beginResetModel();
  table_ = std::move(table);
  endResetModel();
}

int ResultTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(table_.rows.size());
}

int ResultTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(table_.columns.size());
}

QVariant ResultTableModel::to_variant(const SqlValue& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return QVariant::fromValue<qint64>(*i);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* s = std::get_if<std::string>(&v)) return QString::fromStdString(*s);
  return {};
}

QVariant ResultTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= columnCount()) return {};
  const auto& row = table_.rows[static_cast<std::size_t>(index.row())];
  // A plugin may hand back a short row; the missing cells are empty.
  const SqlValue empty;
  const SqlValue& cell = static_cast<std::size_t>(index.column()) < row.size() ? row[static_cast<std::size_t>(index.column())] : empty;
  switch (role) {
    case Qt::DisplayRole:
      return to_variant(cell);
    case Qt::ToolTipRole: {
      const QVariant v = to_variant(cell);
      return v.isNull() ? QVariant() : QVariant(v.toString());
    }
    case Qt::TextAlignmentRole:
      return std::holds_alternative<std::string>(cell) ? QVariant(int(Qt::AlignLeft | Qt::AlignVCenter))
                                                       : QVariant(int(Qt::AlignRight | Qt::AlignVCenter));
    default:
      return {};
  }
}

QVariant ResultTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole || section < 0) return {};
  if (orientation == Qt::Horizontal)
    return section < columnCount() ? QVariant(QString::fromStdString(table_.columns[static_cast<std::size_t>(section)])) : QVariant();
  return section < rowCount() ? QVariant(section + 1) : QVariant();
}

}  // namespace ss::analyses
