// One table of an analysis result (plugins::ResultTable) as a Qt item model for the Analyses dock.
// Numbers are returned as numbers under Qt::DisplayRole so a QSortFilterProxyModel sorts them
// numerically; Qt::ToolTipRole gives the full text. The model keeps its own copy of the table.
#pragma once

#include <QAbstractTableModel>

#include "plugins/host/analysis_result.h"

namespace ss::analyses {

class ResultTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  explicit ResultTableModel(QObject* parent = nullptr);

  void set_table(plugins::ResultTable table);
  const plugins::ResultTable& table() const { return table_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // A cell as a QVariant: null, qint64, double or QString (what DisplayRole returns).
  static QVariant to_variant(const SqlValue& v);

 private:
  plugins::ResultTable table_;
};

}  // namespace ss::analyses
