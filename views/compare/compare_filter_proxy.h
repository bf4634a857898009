// The Compare table's sort/filter proxy: sorts on CompareTableModel::SortRole and, unless "show
// all" is on, keeps only the modules that run on both sides (one-sided rows have no delta to
// rank and used to fill the top of the table with 0.000 against a full time).
#pragma once

#include <QSortFilterProxyModel>

namespace ss::compareview {

class CompareFilterProxy : public QSortFilterProxyModel {
  Q_OBJECT
 public:
  explicit CompareFilterProxy(QObject* parent = nullptr);
  void set_show_all(bool on);
  bool show_all() const { return show_all_; }

 protected:
  bool filterAcceptsRow(int source_row, const QModelIndex& source_parent) const override;

 private:
  bool show_all_ = false;
};

}  // namespace ss::compareview
