#include "views/compare/compare_dock.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

#include "profiler/compare/comparison.h"
#include "storage/errors.h"
#include "storage/profile_reader.h"
#include "views/compare/compare_table_model.h"

namespace ss::compareview {

namespace {
QString measure(const char* what, const compare::Measure& m) {
  const auto e = m.error_pct();
  return QStringLiteral("%1: A %2 ms, B %3 ms (%4%5)")
      .arg(what)
      .arg(static_cast<double>(m.a) / 1e6, 0, 'f', 3)
      .arg(static_cast<double>(m.b) / 1e6, 0, 'f', 3)
      .arg(e ? QString::number(*e, 'f', 2) : QStringLiteral("n/a"))
      .arg(e ? QStringLiteral(" %") : QString());
}
}  // namespace

CompareDock::CompareDock(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  auto* top = new QHBoxLayout;
  choose_ = new QPushButton(QStringLiteral("Compare with…"));
  choose_->setEnabled(false);
  headline_ = new QLabel(QStringLiteral("Open a profile (A), then choose a second one (B) to compare with"));
  headline_->setWordWrap(true);
  headline_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  top->addWidget(choose_);
  top->addWidget(headline_, 1);
  layout->addLayout(top);
  model_ = new CompareTableModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(CompareTableModel::SortRole);
  table_ = new QTableView;
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(CompareTableModel::ColDelta, Qt::DescendingOrder);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setSectionResizeMode(CompareTableModel::ColModule, QHeaderView::Stretch);
  table_->verticalHeader()->hide();
  table_->setAlternatingRowColors(true);
  layout->addWidget(table_, 1);
  connect(choose_, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("Compare with profile"), QFileInfo(path_a_).absolutePath(),
                                                      QStringLiteral("ShardScope profiles (*.ssdb *.sqlite *.db);;All files (*)"));
    if (!path.isEmpty() && !compare_with(path)) headline_->setText(QStringLiteral("Cannot compare: ") + error_);
  });
}

void CompareDock::set_profile(std::shared_ptr<const Profile> a, const QString& path_a) {
  a_ = std::move(a);
  path_a_ = path_a;
  model_->set_rows({});
  choose_->setEnabled(a_ != nullptr);
  headline_->setText(QStringLiteral("A = %1; choose B to compare with").arg(QFileInfo(path_a_).fileName()));
}

bool CompareDock::compare_with(const QString& path_b) {
  if (!a_) {
    error_ = QStringLiteral("no profile open");
    return false;
  }
  try {
    const Profile b = load_profile(path_b.toStdString());
    const compare::Comparison c = compare::compare_profiles(*a_, b, compare::Alignment{});
    model_->set_rows(c.modules);
    headline_->setText(QStringLiteral("A = %1, B = %2\n%3;  %4")
                           .arg(QFileInfo(path_a_).fileName(), QFileInfo(path_b).fileName(),
                                measure("step time", c.headline.step_time), measure("exposed comm.", c.headline.exposed_communication)));
  } catch (const ProfileError& e) {
    error_ = QString::fromStdString(e.what());
    return false;
  }
  return true;
}

QString CompareDock::headline_text() const { return headline_->text(); }

}  // namespace ss::compareview
