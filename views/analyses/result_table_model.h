// One table of an analysis result (plugins::ResultTable) as a Qt item model for the Analyses dock.
// Cells and headers read the way the CLI prints them (plugins/host/column_units.h): headers
// without the unit suffix ("idle_ns" -> "idle"), durations and timestamps in ns/us/ms/s (a
// timestamp as time since the profile's start, the ruler's 0), sizes in B..GiB. The exact value
// is the tooltip and ExactRole (for copying); SortRole gives the raw number so a
// QSortFilterProxyModel (sortRole = SortRole) sorts by value, not by text. The model keeps its own
// copy of the table.
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "plugins/host/analysis_result.h"
#include "plugins/host/column_units.h"

namespace ss::analyses {

class ResultTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  static constexpr int SortRole = Qt::UserRole;       // qint64 / double / QString / null
  static constexpr int ExactRole = Qt::UserRole + 1;  // the exact value as text, with its unit

  explicit ResultTableModel(QObject* parent = nullptr);

  // `time_origin` is the time base of timestamp columns (Profile::time_begin).
  void set_table(plugins::ResultTable table, TimeNs time_origin = 0);
  const plugins::ResultTable& table() const { return table_; }
  plugins::ColumnUnit unit(int column) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // A cell as a QVariant: null, qint64, double or QString (what SortRole returns).
  static QVariant to_variant(const SqlValue& v);

  // The table as tab-separated text with exact values (raw column names, integers in full), for
  // the clipboard: `rows` in the given order, all rows when empty.
  QString to_tsv(const std::vector<int>& rows = {}) const;

 private:
  const SqlValue& cell(int row, int column) const;

  plugins::ResultTable table_;
  std::vector<plugins::ColumnUnit> units_;
  TimeNs time_origin_ = 0;
};

}  // namespace ss::analyses
