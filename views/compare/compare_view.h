// A minimal Compare dock (issue 7, item 1 — table only, no timelines yet): the open profile (A)
// against a second file (B) chosen with a file dialog, aligned by compare_profiles' default rule
// (first common step, rank 0); the headline (step time, exposed communication) and the
// per-module, per-phase table, sortable (by |delta| first, as `shardscope diff --by module`).
#pragma once

#include <QWidget>
#include <memory>

#include "storage/profile_model.h"

class QLabel;
class QPushButton;
class QSortFilterProxyModel;
class QTableView;

namespace ss::compareview {

class CompareTableModel;

class CompareDock : public QWidget {
  Q_OBJECT
 public:
  explicit CompareDock(QWidget* parent = nullptr);
  void set_profile(std::shared_ptr<const Profile> a, const QString& path_a);
  // Loads B and compares; false (and last_error()) when B cannot be read or compared.
  bool compare_with(const QString& path_b);
  CompareTableModel* model() { return model_; }
  QTableView* table() { return table_; }
  QString headline_text() const;
  QString last_error() const { return error_; }

 private:
  std::shared_ptr<const Profile> a_;
  QString path_a_;
  CompareTableModel* model_ = nullptr;
  QSortFilterProxyModel* proxy_ = nullptr;
  QTableView* table_ = nullptr;
  QLabel* headline_ = nullptr;
  QPushButton* choose_ = nullptr;
  QString error_;
};

}  // namespace ss::compareview
