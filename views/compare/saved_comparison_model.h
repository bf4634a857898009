// The Comparisons dock's list: one row per comparison saved in a workspace file (name, the two
// profiles, the alignment, whether a plan is attached, notes, last change), in the workspace's
// order (by name).
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "profiler/compare/workspace.h"

namespace ss::compareview {

class SavedComparisonModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { ColName = 0, ColA, ColB, ColAlignment, ColPlan, ColNotes, ColUpdated, ColCount };
  explicit SavedComparisonModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}

  void set_rows(std::vector<compare::SavedComparison> rows);
  const std::vector<compare::SavedComparison>& rows() const { return rows_; }
  int row_of(const QString& name) const;  // -1 when absent

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

  // "rank 0 step 3 / rank 1 step 3", "auto": how a saved alignment reads in the list.
  static QString alignment_text(const compare::Alignment& a);

 private:
  std::vector<compare::SavedComparison> rows_;
};

}  // namespace ss::compareview
