#include "views/compare/compare_table_model.h"

#include <cmath>

namespace ss::compareview {

namespace {
QString ms(TimeNs ns) { return QString::number(static_cast<double>(ns) / 1e6, 'f', 3); }
}  // namespace

void CompareTableModel::set_rows(std::vector<compare::ModuleDiff> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

int CompareTableModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }
int CompareTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColCount; }

QVariant CompareTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(rows_.size())) return {};
  const auto& r = rows_[static_cast<std::size_t>(index.row())];
  const auto err = r.time.error_pct();
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case ColModule: return r.fqn.empty() ? QStringLiteral("(root)") : QString::fromStdString(r.fqn);
      case ColPhase: return QString::fromUtf8(to_string(r.phase).data(), static_cast<qsizetype>(to_string(r.phase).size()));
      case ColA: return ms(r.time.a);
      case ColB: return ms(r.time.b);
      case ColDelta: return (r.time.delta() > 0 ? QStringLiteral("+") : QString()) + ms(r.time.delta());
      case ColError: return err ? QString::number(*err, 'f', 2) : QStringLiteral("n/a");
      default: return {};
    }
  }
  if (role == SortRole) {
    switch (index.column()) {
      case ColModule: return QString::fromStdString(r.fqn);
      case ColPhase: return static_cast<int>(r.phase);
      case ColA: return static_cast<qlonglong>(r.time.a);
      case ColB: return static_cast<qlonglong>(r.time.b);
      case ColDelta: return static_cast<qlonglong>(std::llabs(r.time.delta()));  // largest discrepancy first
      case ColError: return err ? std::fabs(*err) : -1.0;
      default: return {};
    }
  }
  if (role == Qt::TextAlignmentRole && index.column() >= ColA) return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}

QVariant CompareTableModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case ColModule: return QStringLiteral("Module");
    case ColPhase: return QStringLiteral("Phase");
    case ColA: return QStringLiteral("A (ms)");
    case ColB: return QStringLiteral("B (ms)");
    case ColDelta: return QStringLiteral("Delta (ms)");
    case ColError: return QStringLiteral("Error %");
    default: return {};
  }
}

}  // namespace ss::compareview
