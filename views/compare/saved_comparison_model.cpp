#include "views/compare/saved_comparison_model.h"

#include <QFileInfo>

namespace ss::compareview {

namespace {
QString side(int rank, const std::optional<std::int64_t>& step) {
  return step ? QStringLiteral("rank %1 step %2").arg(rank).arg(*step) : QStringLiteral("rank %1 auto step").arg(rank);
}
}  // namespace

QString SavedComparisonModel::alignment_text(const compare::Alignment& a) {
  return side(a.rank_a, a.step_a) + QStringLiteral(" / ") + side(a.rank_b, a.step_b ? a.step_b : a.step_a);
}

void SavedComparisonModel::set_rows(std::vector<compare::SavedComparison> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

int SavedComparisonModel::row_of(const QString& name) const {
  for (std::size_t i = 0; i < rows_.size(); ++i)
    if (QString::fromStdString(rows_[i].name) == name) return static_cast<int>(i);
  return -1;
}

int SavedComparisonModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }

int SavedComparisonModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColCount; }

QVariant SavedComparisonModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColCount) return {};
  const compare::SavedComparison& c = rows_[static_cast<std::size_t>(index.row())];
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case ColName: return QString::fromStdString(c.name);
      case ColA: return QFileInfo(QString::fromStdString(c.a.path)).fileName();
      case ColB: return QFileInfo(QString::fromStdString(c.b.path)).fileName();
      case ColAlignment: return alignment_text(c.alignment);
      case ColPlan: return c.plan_json.empty() ? QStringLiteral("—") : QStringLiteral("yes");
      case ColNotes: return QString::fromStdString(c.notes).section(QLatin1Char('\n'), 0, 0);  // first line
      case ColUpdated: return QString::fromStdString(c.updated_utc);
      default: return {};
    }
  }
  if (role == Qt::ToolTipRole) {
    switch (index.column()) {
      case ColA: return QString::fromStdString(c.a.path);
      case ColB: return QString::fromStdString(c.b.path);
      case ColNotes: return QString::fromStdString(c.notes);
      default: return {};
    }
  }
  return {};
}

QVariant SavedComparisonModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[ColCount] = {"Name", "A", "B", "Alignment", "Plan", "Notes", "Updated (UTC)"};
  return section >= 0 && section < ColCount ? QString::fromUtf8(names[section]) : QVariant();
}

}  // namespace ss::compareview
