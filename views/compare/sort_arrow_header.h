// A table header whose sort arrow points the way the rows run: ▼ for descending (largest at the
// top), ▲ for ascending. Qt maps AscendingOrder to QStyleOptionHeader::SortDown, which Fusion
// draws as a down arrow, so a table sorted largest-first showed ▲ (issue 13: "the sort
// indicator is inverted").
#pragma once

#include <QHeaderView>
#include <QStyleOptionHeader>

namespace ss::compareview {

class SortArrowHeader : public QHeaderView {
  Q_OBJECT
 public:
  explicit SortArrowHeader(QWidget* parent = nullptr) : QHeaderView(Qt::Horizontal, parent) {}
  // The arrow drawn for `section` (SortUp = ▲, SortDown = ▼, None when not the sort column).
  QStyleOptionHeader::SortIndicator arrow(int section) const;

 protected:
  void initStyleOptionForIndex(QStyleOptionHeader* option, int logical_index) const override;
};

}  // namespace ss::compareview
