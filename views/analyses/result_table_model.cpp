#include "views/analyses/result_table_model.h"

#include <variant>

namespace ss::analyses {

ResultTableModel::ResultTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void ResultTableModel::set_table(plugins::ResultTable table, TimeNs time_origin) {
  beginResetModel();
  table_ = std::move(table);
  time_origin_ = time_origin;
  units_.clear();
  for (const auto& c : table_.columns) units_.push_back(plugins::column_unit(c));
  endResetModel();
}

plugins::ColumnUnit ResultTableModel::unit(int column) const {
  return column >= 0 && static_cast<std::size_t>(column) < units_.size() ? units_[static_cast<std::size_t>(column)]
                                                                          : plugins::ColumnUnit::Plain;
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

const SqlValue& ResultTableModel::cell(int row, int column) const {
  static const SqlValue empty;
  const auto& r = table_.rows[static_cast<std::size_t>(row)];
  // A plugin may hand back a short row; the missing cells are empty.
  return static_cast<std::size_t>(column) < r.size() ? r[static_cast<std::size_t>(column)] : empty;
}

QVariant ResultTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= columnCount()) return {};
  const SqlValue& v = cell(index.row(), index.column());
  const plugins::ColumnUnit u = unit(index.column());
  switch (role) {
    case Qt::DisplayRole: {
      if (std::holds_alternative<std::monostate>(v)) return {};
      // Plain values stay as they are (numbers as numbers); the rest as formatted text.
      if (u == plugins::ColumnUnit::Plain) return to_variant(v);
      return QString::fromStdString(plugins::format_cell(v, u, time_origin_));
    }
    case SortRole:
      return to_variant(v);
    case ExactRole:
    case Qt::ToolTipRole: {
      if (std::holds_alternative<std::monostate>(v)) return {};
      return QString::fromStdString(plugins::exact_cell(v, u, time_origin_));
    }
    case Qt::TextAlignmentRole:
      return std::holds_alternative<std::string>(v) ? QVariant(int(Qt::AlignLeft | Qt::AlignVCenter))
                                                    : QVariant(int(Qt::AlignRight | Qt::AlignVCenter));
    default:
      return {};
  }
}

QVariant ResultTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (section < 0) return {};
  if (orientation == Qt::Vertical) return role == Qt::DisplayRole && section < rowCount() ? QVariant(section + 1) : QVariant();
  if (section >= columnCount()) return {};
  const std::string& name = table_.columns[static_cast<std::size_t>(section)];
  switch (role) {
    case Qt::DisplayRole: {
      const std::string title = plugins::column_title(name);
      // A column named only by its unit ("_ns") would have an empty title: keep the raw name.
      return QString::fromStdString(title.empty() ? name : title);
    }
    case Qt::ToolTipRole: {
      QString tip = QString::fromStdString(name);
      switch (unit(section)) {
        case plugins::ColumnUnit::Timestamp: return tip + " (time since the profile's start)";
        case plugins::ColumnUnit::Duration: return tip + " (a duration)";
        case plugins::ColumnUnit::Bytes: return tip + " (a size)";
        case plugins::ColumnUnit::Percent: return tip + " (a percentage)";
        case plugins::ColumnUnit::Plain: return tip;
      }
      return tip;
    }
    case Qt::TextAlignmentRole:
      return int(Qt::AlignLeft | Qt::AlignVCenter);
    default:
      return {};
  }
}

QString ResultTableModel::to_tsv(const std::vector<int>& rows) const {
  const auto clean = [](std::string s) {
    for (auto& ch : s)
      if (ch == '\t' || ch == '\n' || ch == '\r') ch = ' ';
    return QString::fromStdString(s);
  };
  QStringList lines;
  QStringList header;
  for (const auto& c : table_.columns) header << clean(c);
  lines << header.join('\t');
  const auto add_row = [&](int r) {
    if (r < 0 || r >= rowCount()) return;
    QStringList cells;
    for (int c = 0; c < columnCount(); ++c) {
      const SqlValue& v = cell(r, c);
      // Exact and unformatted: raw integers (absolute ns, bytes), as `analyze --format json` has them.
      if (const auto* i = std::get_if<std::int64_t>(&v)) cells << QString::number(*i);
      else if (const auto* d = std::get_if<double>(&v)) cells << QString::number(*d, 'g', 17);
      else if (const auto* s = std::get_if<std::string>(&v)) cells << clean(*s);
      else cells << QString();
    }
    lines << cells.join('\t');
  };
  if (rows.empty())
    for (int r = 0; r < rowCount(); ++r) add_row(r);
  else
    for (int r : rows) add_row(r);
  return lines.join('\n') + '\n';
}

}  // namespace ss::analyses
