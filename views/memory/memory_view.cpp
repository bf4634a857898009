#include "views/memory/memory_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTimer>
#include <QTreeView>
#include <QVBoxLayout>
#include <algorithm>

#include "storage/errors.h"
#include "views/memory/memory_chart.h"
#include "views/memory/module_tree_model.h"

namespace ss::memview {

MemoryView::MemoryView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  auto* bar = new QHBoxLayout();
  bar->addWidget(new QLabel("Rank"));
  rank_ = new QComboBox();
  bar->addWidget(rank_);
  filter_ = new QLineEdit();
  filter_->setPlaceholderText("Filter modules (e.g. layers.3 or attention)");
  filter_->setClearButtonEnabled(true);
  bar->addWidget(filter_, 1);
  layout->addLayout(bar);

  auto* split = new QSplitter(Qt::Horizontal);
  model_ = new ModuleTreeModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(Qt::UserRole);
  proxy_->setFilterRole(ModuleTreeModel::kFqnRole);
  proxy_->setFilterKeyColumn(0);
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  proxy_->setRecursiveFilteringEnabled(true);
  tree_ = new QTreeView();
  tree_->setModel(proxy_);
  tree_->setSortingEnabled(true);
  tree_->sortByColumn(-1, Qt::AscendingOrder);  // profile order until the user sorts
  tree_->setUniformRowHeights(true);
  tree_->setTextElideMode(Qt::ElideMiddle);
  tree_->setAlternatingRowColors(true);
  tree_->header()->setSectionResizeMode(QHeaderView::Interactive);
  split->addWidget(tree_);
  chart_ = new MemoryChart();
  split->addWidget(chart_);
  chart_->setMinimumWidth(420);
  // The chart gets the larger part: the tree scrolls sideways, a squeezed chart loses its peaks.
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 3);
  split->setSizes({680, 920});
  layout->addWidget(split, 1);

  connect(filter_, &QLineEdit::textChanged, this, [this](const QString& text) {
    proxy_->setFilterFixedString(text);
    if (!text.isEmpty()) tree_->expandAll();
  });
  connect(rank_, &QComboBox::currentIndexChanged, this, [this](int) {
    if (profile_ && rank_->currentIndex() >= 0) load_rank(rank_->currentData().toInt());
  });
  connect(tree_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& current) {
    const int module = current.isValid() ? proxy_->data(current, ModuleTreeModel::kModuleRole).toInt() : -1;
    highlight(module);
    if (current.isValid() && echo_) emit moduleSelected(module);
  });
  connect(chart_, &MemoryChart::timeClicked, this, &MemoryView::timeClicked);
  // Re-ranging the chart re-maps every series (about 40 ms for 9 categories × 1500 samples), so
  // while the timeline zooms or pans the chart follows once the input pauses, not on every step.
  range_timer_ = new QTimer(this);
  range_timer_->setSingleShot(true);
  range_timer_->setInterval(kRangeDelayMs);
  connect(range_timer_, &QTimer::timeout, this, [this] { chart_->set_time_range(pending_range_.first, pending_range_.second); });
}

void MemoryView::set_profile(std::shared_ptr<const Profile> profile) {
  profile_ = std::move(profile);
  const QSignalBlocker block(rank_);
  rank_->clear();
  rank_shown_ = -1;
  if (!profile_) {
    model_->set_data(nullptr, {});
    chart_->clear(QStringLiteral("Memory over time: open a profile (its memory events are read after the timeline shows)"));
    return;
  }
  for (const auto& r : profile_->ranks) rank_->addItem(QString::number(r.info.rank), r.info.rank);
  load_rank(profile_->ranks.empty() ? 0 : profile_->ranks.front().info.rank);
}

void MemoryView::load_rank(int rank) {
  rank_shown_ = rank;
  try {
    model_->set_data(profile_, compute_module_memory(*profile_, rank));
  } catch (const ProfileError& e) {
    model_->set_data(profile_, {});
    QMessageBox::warning(this, "Memory view", QString("Could not read memory events: %1").arg(e.what()));
  }
  tree_->expandToDepth(1);
  for (int c = 0; c < model_->columnCount(); ++c) tree_->resizeColumnToContents(c);
  // Room for the full paths of deep modules (collapsed rows too), up to a third of a wide window;
  // longer ones elide in the middle, keeping the leaf's name.
  int widest = 250;
  for (const ModuleNode& m : profile_->modules) {
    int depth = 0;
    for (std::int32_t q = m.parent; q >= 0; q = profile_->modules[static_cast<std::size_t>(q)].parent) ++depth;
    const QString text = QString::fromStdString(m.fqn + "  [" + m.class_name + "]");
    widest = std::max(widest, tree_->fontMetrics().horizontalAdvance(text) + tree_->indentation() * (depth + 1) + 12);
  }
  tree_->setColumnWidth(0, std::min(std::max(tree_->columnWidth(0), widest), 520));
  chart_->set_data(*profile_, model_->stats());
  highlight(selected_module());
}

void MemoryView::highlight(int module) {
  if (!profile_ || module < 0 || module >= static_cast<int>(profile_->modules.size())) {
    chart_->set_module({}, {});
    return;
  }
  const std::string& fqn = profile_->modules[static_cast<std::size_t>(module)].fqn;
  try {
    chart_->set_module(fqn.empty() ? QStringLiteral("(root)") : QString::fromStdString(fqn), compute_module_series(*profile_, rank_shown_, module, model_->stats().events.get()));
  } catch (const ProfileError&) {
    chart_->set_module({}, {});  // load_rank has said why the memory events cannot be read
  }
}

void MemoryView::setTimeRange(qint64 t0, qint64 t1) {
  pending_range_ = {t0, t1};
  range_timer_->start();
}

int MemoryView::selected_module() const {
  const QModelIndex i = tree_->currentIndex();
  return i.isValid() ? proxy_->data(i, ModuleTreeModel::kModuleRole).toInt() : -1;
}

void MemoryView::selectModule(int module) {
  const QModelIndex source = model_->index_of_module(module);
  const QModelIndex i = proxy_->mapFromSource(source);
  if (!i.isValid() || i == tree_->currentIndex()) return;
  echo_ = false;
  tree_->setCurrentIndex(i);
  tree_->scrollTo(i);
  echo_ = true;
}

}  // namespace ss::memview
