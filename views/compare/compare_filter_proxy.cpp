#include "views/compare/compare_filter_proxy.h"

#include "views/compare/compare_table_model.h"

namespace ss::compareview {

CompareFilterProxy::CompareFilterProxy(QObject* parent) : QSortFilterProxyModel(parent) { setSortRole(CompareTableModel::SortRole); }

void CompareFilterProxy::set_show_all(bool on) {
  if (on == show_all_) return;
  show_all_ = on;
  invalidateFilter();
}

bool CompareFilterProxy::filterAcceptsRow(int source_row, const QModelIndex& source_parent) const {
  if (show_all_) return true;
  const QModelIndex i = sourceModel()->index(source_row, 0, source_parent);
  return i.data(CompareTableModel::PresenceRole).toInt() == static_cast<int>(Presence::Both);
}

}  // namespace ss::compareview
