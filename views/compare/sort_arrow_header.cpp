#include "views/compare/sort_arrow_header.h"

namespace ss::compareview {

void SortArrowHeader::initStyleOptionForIndex(QStyleOptionHeader* option, int logical_index) const {
  QHeaderView::initStyleOptionForIndex(option, logical_index);
  if (!isSortIndicatorShown() || sortIndicatorSection() != logical_index) return;
  option->sortIndicator = sortIndicatorOrder() == Qt::DescendingOrder ? QStyleOptionHeader::SortDown : QStyleOptionHeader::SortUp;
}

QStyleOptionHeader::SortIndicator SortArrowHeader::arrow(int section) const {
  QStyleOptionHeader opt;
  initStyleOption(&opt);
  initStyleOptionForIndex(&opt, section);
  return opt.sortIndicator;
}

}  // namespace ss::compareview
