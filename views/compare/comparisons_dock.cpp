#include "views/compare/comparisons_dock.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QSplitter>
#include <QStandardPaths>
#include <QTableView>
#include <QVBoxLayout>

#include "views/compare/saved_comparison_model.h"

namespace ss::compareview {

namespace {
constexpr const char* kWorkspaceKey = "compare/workspace";
constexpr const char* kWorkspaceFilter = "ShardScope workspaces (*.sscw);;All files (*)";
}  // namespace

ComparisonsDock::ComparisonsDock(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  auto* top = new QHBoxLayout;
  auto* open = new QPushButton(QStringLiteral("Open workspace…"));
  open->setToolTip(QStringLiteral("Open or create a workspace file (.sscw) of saved comparisons"));
  path_ = new QLabel(QStringLiteral("No workspace open: saving a comparison opens the default one"));
  path_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  top->addWidget(open);
  top->addWidget(path_, 1);
  layout->addLayout(top);

  auto* split = new QSplitter(Qt::Vertical);
  model_ = new SavedComparisonModel(this);
  table_ = new QTableView;
  table_->setModel(model_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->verticalHeader()->hide();
  table_->setAlternatingRowColors(true);
  split->addWidget(table_);
  notes_ = new QPlainTextEdit;
  notes_->setPlaceholderText(QStringLiteral("Notes on the selected comparison"));
  split->addWidget(notes_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  layout->addWidget(split, 1);

  auto* buttons = new QHBoxLayout;
  reopen_ = new QPushButton(QStringLiteral("Reopen"));
  reopen_->setToolTip(QStringLiteral("Open A, compare with B at the saved alignment and restore the plan (or double-click)"));
  save_notes_ = new QPushButton(QStringLiteral("Save notes"));
  remove_ = new QPushButton(QStringLiteral("Delete"));
  status_ = new QLabel;
  status_->setWordWrap(true);
  buttons->addWidget(reopen_);
  buttons->addWidget(save_notes_);
  buttons->addWidget(remove_);
  buttons->addWidget(status_, 1);
  layout->addLayout(buttons);
  for (QPushButton* b : {reopen_, save_notes_, remove_}) b->setEnabled(false);

  connect(open, &QPushButton::clicked, this, [this] {
    const QString start = workspace_ ? QFileInfo(workspace_path()).absolutePath() : QFileInfo(default_workspace_path()).absolutePath();
    const QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Open or create workspace"), start, QString::fromUtf8(kWorkspaceFilter),
                                                      nullptr, QFileDialog::DontConfirmOverwrite);
    if (!path.isEmpty()) open_workspace(path);
  });
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& current) {
    const bool any = current.isValid();
    for (QPushButton* b : {reopen_, save_notes_, remove_}) b->setEnabled(any);
    notes_->setPlainText(any ? QString::fromStdString(model_->rows()[static_cast<std::size_t>(current.row())].notes) : QString());
  });
  connect(table_, &QTableView::doubleClicked, this, [this](const QModelIndex& index) { reopen(index.row()); });
  connect(reopen_, &QPushButton::clicked, this, [this] { reopen(current_row()); });
  connect(save_notes_, &QPushButton::clicked, this, [this] { save_notes(current_row(), notes_->toPlainText()); });
  connect(remove_, &QPushButton::clicked, this, [this] {
    const int row = current_row();
    if (row < 0) return;
    const QString name = QString::fromStdString(model_->rows()[static_cast<std::size_t>(row)].name);
    if (QMessageBox::question(this, QStringLiteral("Delete comparison"), QStringLiteral("Delete the saved comparison \"%1\"?").arg(name)) ==
        QMessageBox::Yes)
      remove(row);
  });

  const QString last = QSettings().value(kWorkspaceKey).toString();
  if (!last.isEmpty() && QFileInfo::exists(last)) open_workspace(last);
}

ComparisonsDock::~ComparisonsDock() = default;

QString ComparisonsDock::default_workspace_path() {
  return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/comparisons.sscw");
}

QString ComparisonsDock::workspace_path() const { return workspace_ ? QString::fromStdString(workspace_->path()) : QString(); }

bool ComparisonsDock::fail(const QString& message) {
  error_ = message;
  status_->setText(message);
  return false;
}

bool ComparisonsDock::open_workspace(const QString& path) {
  try {
    QDir().mkpath(QFileInfo(path).absolutePath());
    auto ws = std::make_unique<compare::Workspace>(path.toStdString(), compare::Workspace::Mode::CreateIfMissing);
    workspace_ = std::move(ws);
  } catch (const std::exception& e) {  // not a workspace, newer version, unreadable
    return fail(QString::fromStdString(e.what()));
  }
  path_->setText(QDir::toNativeSeparators(path));
  QSettings().setValue(kWorkspaceKey, QFileInfo(path).absoluteFilePath());
  status_->clear();
  return refresh();
}

bool ComparisonsDock::refresh() {
  try {
    model_->set_rows(workspace_->list());
  } catch (const std::exception& e) {
    return fail(QString::fromStdString(e.what()));
  }
  notes_->clear();
  for (QPushButton* b : {reopen_, save_notes_, remove_}) b->setEnabled(false);
  return true;
}

int ComparisonsDock::current_row() const {
  const QModelIndex i = table_->currentIndex();
  return i.isValid() ? i.row() : -1;
}

bool ComparisonsDock::save(const QString& name, const QString& path_a, const QString& path_b, const compare::Alignment& alignment,
                           const QString& plan_json, const QString& notes) {
  if (!workspace_ && !open_workspace(default_workspace_path())) return false;
  try {
    workspace_->save(compare::make_saved_comparison(name.trimmed().toStdString(), QFileInfo(path_a).absoluteFilePath().toStdString(),
                                                    QFileInfo(path_b).absoluteFilePath().toStdString(), alignment,
                                                    plan_json.toStdString(), notes.toStdString()));
  } catch (const std::exception& e) {  // empty name, invalid plan JSON, unreadable profile
    return fail(QString::fromStdString(e.what()));
  }
  if (!refresh()) return false;
  const int row = model_->row_of(name.trimmed());
  if (row >= 0) table_->selectRow(row);
  status_->setText(QStringLiteral("Saved \"%1\"").arg(name.trimmed()));
  return true;
}

bool ComparisonsDock::save_interactively(const QString& path_a, const QString& path_b, const compare::Alignment& alignment,
                                         const QString& plan_json) {
  if (!workspace_ && !open_workspace(default_workspace_path())) return false;
  bool ok = false;
  const QString suggested = QFileInfo(path_a).completeBaseName() + QStringLiteral(" vs ") + QFileInfo(path_b).completeBaseName();
  const QString name = QInputDialog::getText(this, QStringLiteral("Save comparison"),
                                             QStringLiteral("Name (an existing name is replaced):"), QLineEdit::Normal, suggested, &ok);
  if (!ok || name.trimmed().isEmpty()) return false;
  const QString notes = QInputDialog::getMultiLineText(this, QStringLiteral("Save comparison"), QStringLiteral("Notes:"), QString(), &ok);
  if (!ok) return false;
  return save(name, path_a, path_b, alignment, plan_json, notes);
}

bool ComparisonsDock::reopen(int row) {
  if (!workspace_ || row < 0 || row >= model_->rowCount()) return fail(QStringLiteral("no saved comparison selected"));
  const compare::SavedComparison& c = model_->rows()[static_cast<std::size_t>(row)];
  try {
    compare::verify_profiles(c);  // moved or rewritten since it was saved: say which and why
  } catch (const std::exception& e) {
    return fail(QString::fromStdString(e.what()));
  }
  status_->setText(QStringLiteral("Reopened \"%1\"").arg(QString::fromStdString(c.name)));
  emit reopenRequested(c);
  return true;
}

bool ComparisonsDock::save_notes(int row, const QString& notes) {
  if (!workspace_ || row < 0 || row >= model_->rowCount()) return fail(QStringLiteral("no saved comparison selected"));
  compare::SavedComparison c = model_->rows()[static_cast<std::size_t>(row)];
  c.notes = notes.toStdString();
  try {
    workspace_->save(c);  // same name: replaced, id and creation time kept
  } catch (const std::exception& e) {
    return fail(QString::fromStdString(e.what()));
  }
  const QString name = QString::fromStdString(c.name);
  if (!refresh()) return false;
  table_->selectRow(model_->row_of(name));
  status_->setText(QStringLiteral("Notes saved"));
  return true;
}

bool ComparisonsDock::remove(int row) {
  if (!workspace_ || row < 0 || row >= model_->rowCount()) return fail(QStringLiteral("no saved comparison selected"));
  const std::string name = model_->rows()[static_cast<std::size_t>(row)].name;
  try {
    workspace_->remove(name);
  } catch (const std::exception& e) {
    return fail(QString::fromStdString(e.what()));
  }
  return refresh();
}

}  // namespace ss::compareview
