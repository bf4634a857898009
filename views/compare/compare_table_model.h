// The Compare dock's per-module table: one row per (module, phase) of compare_profiles (A, B,
// delta, error %), in the comparison's order (largest |delta| first); the dock sorts it through
// a proxy. Sort role: the raw number (ns or %), so sorting is numeric.
//
// A module present in one window only has no time on the other side: that cell, the delta and
// the error show "—" (not 0.000, which would read as "took no time"), and their sort value is
// lowest, so one-sided rows do not crowd the top of a |delta| sort. PresenceRole says which side
// has the row (CompareFilterProxy hides one-sided rows by default).
#pragma once

#include <QAbstractTableModel>

#include "profiler/compare/comparison.h"

namespace ss::compareview {

enum class Presence { Both = 0, OnlyA = 1, OnlyB = 2 };

// Distinct module names (not module/phase rows) that occur only on one side.
struct PresenceCounts {
  int only_a = 0;
  int only_b = 0;
};
PresenceCounts count_one_sided(const std::vector<compare::ModuleDiff>& rows);
// "N modules only in A, M only in B" (empty when both are 0).
QString one_sided_text(const PresenceCounts& counts);

class CompareTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { ColModule = 0, ColPhase, ColA, ColB, ColDelta, ColError, ColCount };
  static constexpr int SortRole = Qt::UserRole + 1;
  static constexpr int PresenceRole = Qt::UserRole + 2;  // int(Presence), any column
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

Presence presence_of(const compare::ModuleDiff& row);

}  // namespace ss::compareview
