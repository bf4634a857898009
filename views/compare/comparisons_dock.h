// The Comparisons dock (issue 7, item 3): the comparisons saved in a workspace file (SQLite,
// profiler/compare/workspace.h), listed with their profiles, alignment, plan and notes. Reopen
// checks that both profiles are still the files that were saved (a moved or rewritten profile is
// refused with the reason) and hands the saved comparison to the main window, which opens A,
// compares with B at the saved alignment and restores the plan. Notes are edited in place.
// The last workspace used is remembered; the default lives in the user's data folder.
#pragma once

#include <QMetaType>
#include <QWidget>
#include <memory>
#include <optional>

#include "profiler/compare/workspace.h"

class QLabel;
class QPlainTextEdit;
class QPushButton;
class QTableView;

namespace ss::compareview {

class SavedComparisonModel;

class ComparisonsDock : public QWidget {
  Q_OBJECT
 public:
  explicit ComparisonsDock(QWidget* parent = nullptr);
  ~ComparisonsDock() override;

  // Opens (creating if missing) a workspace file and lists it; false with last_error().
  bool open_workspace(const QString& path);
  QString workspace_path() const;
  static QString default_workspace_path();

  // Saves (or replaces, by name) a comparison of the two profiles; fingerprints them now.
  bool save(const QString& name, const QString& path_a, const QString& path_b, const compare::Alignment& alignment,
            const QString& plan_json, const QString& notes);
  // Asks for a name and notes, then save(); opens the default workspace first when none is open.
  bool save_interactively(const QString& path_a, const QString& path_b, const compare::Alignment& alignment,
                          const QString& plan_json);
  // Checks the profiles of row `row` and emits reopenRequested; false with last_error().
  bool reopen(int row);
  bool save_notes(int row, const QString& notes);
  bool remove(int row);

  SavedComparisonModel* model() { return model_; }
  QTableView* table() { return table_; }
  QPlainTextEdit* notes() { return notes_; }
  QString last_error() const { return error_; }

 signals:
  void reopenRequested(ss::compare::SavedComparison comparison);

 private:
  bool refresh();
  bool fail(const QString& message);
  int current_row() const;

  std::unique_ptr<compare::Workspace> workspace_;
  SavedComparisonModel* model_ = nullptr;
  QTableView* table_ = nullptr;
  QPlainTextEdit* notes_ = nullptr;
  QLabel* path_ = nullptr;
  QLabel* status_ = nullptr;
  QPushButton* reopen_ = nullptr;
  QPushButton* save_notes_ = nullptr;
  QPushButton* remove_ = nullptr;
  QString error_;
};

}  // namespace ss::compareview

Q_DECLARE_METATYPE(ss::compare::SavedComparison)
