// The Compare dock's per-module table: one row per (module, phase) of compare_profiles (A, B,
// delta, error %), in the comparison's order (largest |delta| first); the dock sorts it through
// a proxy. Sort role: the raw number (ns or %), so sorting is numeric.
#pragma once

#include <QAbstractTableModel>

#include "profiler/compare/comparison.h"

namespace ss::compareview {

class CompareTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { ColModule = 0, ColPhase, ColA, ColB, ColDelta, ColError, ColCount };
  static constexpr int SortRole = Qt::UserRole + 1;
  explicit CompareTableModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}

  void set_rows(std::vector<compare::ModuleDiff> rows);
  const std::vector<compare::ModuleDiff>& rows() const { return rows_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  std::vector<compare::ModuleDiff> rows_;
};

}  // namespace ss::compareview
