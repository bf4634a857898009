// A table of aggregate rows (per kernel name or per module) for a selected time range.
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "views/timeline/analysis.h"

namespace ss::timeline {

class AggregateModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Name, Count, Total, Mean, Share, ColumnCount };
  explicit AggregateModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  void set_rows(std::vector<AggregateRow> rows);
  const std::vector<AggregateRow>& rows() const { return rows_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<AggregateRow> rows_;
};

}  // namespace ss::timeline
