#include "views/analyses/analyses_dock.h"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStyle>
#include <QTabWidget>
#include <QTableView>
#include <QThread>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <exception>
#ifdef __GLIBC__
#include <malloc.h>  // malloc_trim
#endif

#include "plugins/host/steps_window.h"
#include "views/analyses/result_table_model.h"
#include "views/timeline/timeline_widget.h"

namespace ss::analyses {

namespace {

// Hands the heap an analysis freed back to the system. Each run's worker thread allocates in a
// malloc arena of its own, which glibc does not trim when the thread ends: on a 1M-kernel profile
// critical-path left the app 400 MB larger after every run (the GUI soak test's RSS bound).
void release_freed_heap() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}
constexpr int kPluginNameRole = Qt::UserRole;
constexpr int kFindingRole = Qt::UserRole + 1;
constexpr int kMaxColumnWidth = 360;

QColor severity_colour(plugins::Severity s) {
  switch (s) {
    case plugins::Severity::Problem:
      return QColor(225, 75, 65);
    case plugins::Severity::Warning:
      return QColor(230, 160, 40);
    case plugins::Severity::Info:
      break;
  }
  return {};
}

QStyle::StandardPixmap severity_icon(plugins::Severity s) {
  switch (s) {
    case plugins::Severity::Problem:
      return QStyle::SP_MessageBoxCritical;
    case plugins::Severity::Warning:
      return QStyle::SP_MessageBoxWarning;
    case plugins::Severity::Info:
      break;
  }
  return QStyle::SP_MessageBoxInformation;
}
}  // namespace

AnalysesDock::AnalysesDock(QWidget* parent) : QWidget(parent), host_(std::make_unique<plugins::PluginHost>()) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  // The plugin list is compact (sized to its entries, see fit_plugin_list); the results below
  // take the rest of the dock's height, the tables most of it.
  auto* split = new QSplitter(Qt::Vertical);
  split->setChildrenCollapsible(false);

  auto* top = new QWidget();
  auto* top_layout = new QVBoxLayout(top);
  top_layout->setContentsMargins(0, 0, 0, 0);
  plugin_list_ = new QListWidget();
  plugin_list_->setObjectName("analyses_plugins");
  // Names and titles elided to the dock's width, never a horizontal scroll bar (which also took
  // a row's height from the list): the whole description is below it and in the tooltip.
  plugin_list_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  plugin_list_->setTextElideMode(Qt::ElideRight);
  top_layout->addWidget(plugin_list_, 1);
  description_ = new QLabel();
  description_->setWordWrap(true);
  top_layout->addWidget(description_);
  run_button_ = new QPushButton("Run on selection");
  run_button_->setToolTip("Runs the analysis on the timeline's selected time range (right drag), or the whole profile");
  copy_button_ = new QPushButton("Copy table");
  copy_button_->setToolTip("Copies the shown table (its selected rows, or all) as tab-separated text with exact values");
  copy_button_->setEnabled(false);
  steps_only_ = new QCheckBox("Steps only");
  steps_only_->setObjectName("analyses_steps_only");
  steps_only_->setToolTip("Runs on the recorded steps only: leaves out what ran before the first (the model's "
                          "initialisation) and after the last");
  steps_only_->setEnabled(false);
  // On a line of its own: beside the buttons it set the right dock column's narrowest width
  // (292 px against the 200 a user could narrow it to).
  top_layout->addWidget(steps_only_);
  auto* buttons = new QHBoxLayout();
  buttons->addWidget(run_button_, 1);
  buttons->addWidget(copy_button_);
  top_layout->addLayout(buttons);
  split->addWidget(top);

  auto* bottom = new QWidget();
  auto* bottom_layout = new QVBoxLayout(bottom);
  bottom_layout->setContentsMargins(0, 0, 0, 0);
  status_ = new QLabel("Open a profile, pick an analysis and press Run");
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  bottom_layout->addWidget(status_);
  auto* results = new QSplitter(Qt::Vertical);
  table_tabs_ = new QTabWidget();
  results->addWidget(table_tabs_);
  findings_ = new QListWidget();
  findings_->setObjectName("analyses_findings");
  findings_->setWordWrap(true);
  findings_->setToolTip("Double-click a finding to show its time range in the timeline");
  results->addWidget(findings_);
  results->setChildrenCollapsible(false);
  results->setStretchFactor(0, 4);  // the tables get most of the height, the findings the rest
  results->setStretchFactor(1, 1);
  results->setSizes({400, 100});
  bottom_layout->addWidget(results, 1);
  split->addWidget(bottom);
  split->setStretchFactor(0, 0);
  split->setStretchFactor(1, 1);
  split->setSizes({150, 600});
  layout->addWidget(split);

  connect(plugin_list_, &QListWidget::currentItemChanged, this, [this](QListWidgetItem* item) {
    description_->setText(item ? item->toolTip() : QString());
    update_run_enabled();
  });
  connect(plugin_list_, &QListWidget::itemDoubleClicked, this, [this](QListWidgetItem* item) {
    if (item && (item->flags() & Qt::ItemIsEnabled)) run(item->data(kPluginNameRole).toString());
  });
  connect(run_button_, &QPushButton::clicked, this, [this] {
    if (auto* item = plugin_list_->currentItem()) run(item->data(kPluginNameRole).toString());
  });
  connect(copy_button_, &QPushButton::clicked, this, [this] { copy_table(); });
  auto* copy = new QAction("Copy", this);
  copy->setShortcut(QKeySequence::Copy);
  copy->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  connect(copy, &QAction::triggered, this, [this] { copy_table(); });
  table_tabs_->addAction(copy);
  connect(findings_, &QListWidget::itemActivated, this, [this](QListWidgetItem* item) { activate_finding(findings_->row(item)); });
  update_run_enabled();
}

AnalysesDock::~AnalysesDock() {
  // The worker holds the host and the profile: let it finish before they go.
  if (worker_) {
    worker_->wait();
    delete worker_;
  }
}

void AnalysesDock::discover(const std::vector<std::string>& dirs) {
  if (busy()) return;
  host_ = std::make_unique<plugins::PluginHost>();
  host_->discover(dirs);
  plugin_list_->clear();
  for (const auto& p : host_->plugins()) {
    auto* item = new QListWidgetItem(QString("%1 — %2").arg(QString::fromStdString(p.name), QString::fromStdString(p.title)));
    item->setData(kPluginNameRole, QString::fromStdString(p.name));
    item->setToolTip(QString::fromStdString(p.description));
    plugin_list_->addItem(item);
  }
  // Refused libraries stay visible (greyed, with the reason), so a user sees why theirs is missing.
  for (const auto& problem : host_->problems()) {
    auto* item = new QListWidgetItem(style()->standardIcon(QStyle::SP_MessageBoxWarning),
                                     QString("not loaded: %1").arg(QString::fromStdString(problem.path).section('/', -1)));
    item->setToolTip(QString::fromStdString(problem.path + ": " + problem.message));
    item->setFlags(item->flags() & ~Qt::ItemIsSelectable);
    item->setForeground(severity_colour(plugins::Severity::Warning));
    plugin_list_->addItem(item);
  }
  if (!host_->plugins().empty()) plugin_list_->setCurrentRow(0);
  fit_plugin_list();
  if (host_->plugins().empty())
    status_->setText(QString("No analysis plugins found (searched %1 folders; set SHARDSCOPE_PLUGIN_PATH)").arg(host_->searched_dirs().size()));
  update_run_enabled();
}

void AnalysesDock::fit_plugin_list() {
  // Every entry visible (the 11 built-in analyses and a few more; a scroll bar beyond), and no
  // taller: the description, the buttons and the results below need the rest of the dock.
  const int rows = std::clamp(plugin_list_->count(), 3, 13);
  const int row_h = plugin_list_->count() > 0 ? plugin_list_->sizeHintForRow(0) : fontMetrics().height() + 4;
  plugin_list_->setFixedHeight(rows * row_h + 2 * plugin_list_->frameWidth() + 6);
  // The splitter above the results must not squeeze this part below the list, a four-line
  // description and the buttons: a squeezed layout draws the description over the list.
  if (QWidget* top = plugin_list_->parentWidget())
    top->setMinimumHeight(plugin_list_->height() + 4 * fontMetrics().lineSpacing() + steps_only_->sizeHint().height() +
                          run_button_->sizeHint().height() + 22);
}

void AnalysesDock::changeEvent(QEvent* e) {
  QWidget::changeEvent(e);
  // The rows' height follows the style and font (the app sets its style after the dock exists).
  if (e->type() == QEvent::StyleChange || e->type() == QEvent::FontChange) fit_plugin_list();
}

void AnalysesDock::showEvent(QShowEvent* e) {
  QWidget::showEvent(e);
  fit_plugin_list();
}

QString AnalysesDock::table_text(int tab) const {
  const ResultTableModel* model = table_model(tab);
  auto* view = qobject_cast<QTableView*>(table_tabs_->widget(tab));
  if (!model || !view) return {};
  // The rows as the user sees them (sorted), only the selected ones when there is a selection.
  std::vector<int> rows;
  auto* proxy = qobject_cast<QSortFilterProxyModel*>(view->model());
  const auto selected = view->selectionModel() ? view->selectionModel()->selectedRows() : QModelIndexList{};
  for (int r = 0; r < view->model()->rowCount(); ++r) {
    const QModelIndex i = view->model()->index(r, 0);
    if (!selected.isEmpty() && !selected.contains(i)) continue;
    rows.push_back(proxy ? proxy->mapToSource(i).row() : r);
  }
  return model->to_tsv(rows);
}

void AnalysesDock::copy_table() {
  const QString text = table_text(table_tabs_->currentIndex());
  if (text.isEmpty()) return;
  QApplication::clipboard()->setText(text);
  status_->setText(QString("Copied %1 rows with exact values").arg(text.count('\n') - 1));
}

void AnalysesDock::set_profile(std::shared_ptr<const Profile> profile) {
  profile_ = std::move(profile);
  const bool has_steps = profile_ && plugins::step_numbers(*profile_, {}).has_value();
  steps_only_->setEnabled(has_steps);
  if (!has_steps) steps_only_->setChecked(false);
  // A new profile: the earlier result was about another one (unless a run is still going).
  if (profile_ && !busy() && !host_->plugins().empty())
    status_->setText("Pick an analysis and press Run: it runs on the timeline's selected range (right drag), or the whole profile");
  update_run_enabled();
}

void AnalysesDock::update_run_enabled() {
  run_button_->setEnabled(profile_ && !busy() && plugin_list_->currentItem() &&
                          !plugin_list_->currentItem()->data(kPluginNameRole).toString().isEmpty());
}

QString AnalysesDock::describe(const plugins::Selection& s) const {
  QString text;
  if (!s.from && !s.to) {
    text = "the whole profile";
  } else {
    const TimeNs origin = profile_ ? profile_->time_begin : 0;
    const auto ms = [origin](TimeNs t) { return QString::number(static_cast<double>(t - origin) / 1e6, 'f', 3); };
    text = QString("%1 – %2 ms").arg(s.from ? ms(*s.from) : "start", s.to ? ms(*s.to) : "end");
  }
  if (last_steps_only_) text += " (recorded steps)";
  if (!s.ranks.empty()) {
    QStringList ranks;
    for (int r : s.ranks) ranks << QString::number(r);
    text += ", ranks " + ranks.join(',');
  }
  return text;
}

bool AnalysesDock::run(const QString& name) {
  if (busy()) {
    status_->setText("An analysis is already running");
    return false;
  }
  if (!profile_) {
    status_->setText("Open a profile first");
    return false;
  }
  if (!host_->find(name.toStdString())) {
    status_->setText(QString("No analysis named %1").arg(name));
    return false;
  }
  // Keep the list showing what runs (run() is also called from code: double-click, screenshots).
  for (int i = 0; i < plugin_list_->count(); ++i)
    if (plugin_list_->item(i)->data(kPluginNameRole).toString() == name) plugin_list_->setCurrentRow(i);
  plugins::Selection selection = selection_source ? selection_source() : plugins::Selection{};
  last_steps_only_ = steps_only_->isEnabled() && steps_only_->isChecked();
  if (last_steps_only_) {
    const auto steps = plugins::steps_window(*profile_, 0, -1, selection.ranks);
    if (!steps) {
      status_->setText("The selected ranks have no recorded step: untick Steps only");
      return false;
    }
    const TimeNs from = std::max(selection.from.value_or(steps->first), steps->first);
    const TimeNs to = std::min(selection.to.value_or(steps->second), steps->second);
    if (from > to) {
      status_->setText("The selected range holds no recorded step: clear the selection or untick Steps only");
      return false;
    }
    selection.from = from, selection.to = to;
  }
  last_selection_ = selection;
  status_->setText(QString("Running %1 on %2...").arg(name, describe(last_selection_)));
  // The worker gets its own references; the host outlives it (the destructor and discover() wait).
  auto out = std::make_shared<plugins::AnalysisResult>();
  const plugins::PluginHost* host = host_.get();
  worker_ = QThread::create([host, profile = profile_, selection = last_selection_, plugin = name.toStdString(), out] {
    try {
      *out = host->run(plugin, *profile, selection);
    } catch (const std::exception& e) {  // the host contains plugin faults; this is for its own (bad_alloc)
      out->analysis = plugin;
      out->ok = false;
      out->error = e.what();
    }
  });
  QThread* worker = worker_;
  connect(worker, &QThread::finished, this, [this, worker, out] {
    worker->deleteLater();
    worker_ = nullptr;
    show_result(*out);
    release_freed_heap();
    update_run_enabled();
    emit finished();
  });
  update_run_enabled();
  worker->start();
  return true;
}

ResultTableModel* AnalysesDock::table_model(int i) const {
  return i >= 0 && static_cast<std::size_t>(i) < models_.size() ? models_[static_cast<std::size_t>(i)] : nullptr;
}

void AnalysesDock::show_result(const plugins::AnalysisResult& result) {
  result_ = result;
  while (table_tabs_->count() > 0) {
    QWidget* w = table_tabs_->widget(0);
    table_tabs_->removeTab(0);
    delete w;
  }
  for (auto* m : models_) delete m;
  models_.clear();
  findings_->clear();
  copy_button_->setEnabled(false);

  const QString name = QString::fromStdString(result_.analysis);
  if (!result_.ok) {
    status_->setText(QString("<b>%1 failed:</b> %2").arg(name.toHtmlEscaped(), QString::fromStdString(result_.error).toHtmlEscaped()));
    status_->setStyleSheet(QString("color: %1").arg(severity_colour(plugins::Severity::Problem).name()));
    return;
  }
  status_->setStyleSheet(QString());
  status_->setText(QString("%1 on %2: %3 tables, %4 findings")
                       .arg(name, describe(last_selection_))
                       .arg(result_.tables.size())
                       .arg(result_.findings.size()));

  for (const auto& table : result_.tables) {
    auto* model = new ResultTableModel(this);
    model->set_table(table, profile_ ? profile_->time_begin : 0);
    models_.push_back(model);
    auto* proxy = new QSortFilterProxyModel(model);
    proxy->setSourceModel(model);
    proxy->setSortRole(ResultTableModel::SortRole);  // by value: "2 ms" after "900 us"
    auto* view = new QTableView();
    view->setModel(proxy);
    view->setSortingEnabled(true);
    view->sortByColumn(-1, Qt::AscendingOrder);  // plugin order until the user sorts
    view->setSelectionBehavior(QAbstractItemView::SelectRows);
    view->verticalHeader()->hide();
    view->verticalHeader()->setDefaultSectionSize(view->fontMetrics().height() + 6);
    view->setAlternatingRowColors(true);
    view->setWordWrap(false);
    view->setTextElideMode(Qt::ElideMiddle);
    view->setMinimumHeight(8 * view->verticalHeader()->defaultSectionSize());
    // Columns fit their content, but none wider than kMaxColumnWidth: a 300-character kernel
    // name in a ResizeToContents column pushed every other column (and the header's text,
    // centred in that huge section) out of sight. The user can still widen a column.
    auto* header = view->horizontalHeader();
    header->setSectionResizeMode(QHeaderView::Interactive);
    header->setDefaultAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    header->setStretchLastSection(true);
    view->resizeColumnsToContents();
    for (int c = 0; c < model->columnCount(); ++c)
      if (header->sectionSize(c) > kMaxColumnWidth) header->resizeSection(c, kMaxColumnWidth);
    table_tabs_->addTab(view, QString::fromStdString(table.name));
  }
  copy_button_->setEnabled(table_tabs_->count() > 0);

  for (std::size_t i = 0; i < result_.findings.size(); ++i) {
    const auto& f = result_.findings[i];
    QString text = QString::fromStdString(f.message);
    if (f.rank >= 0) text = QString("rank %1: %2").arg(f.rank).arg(text);
    auto* item = new QListWidgetItem(style()->standardIcon(severity_icon(f.severity)), text);
    item->setData(kFindingRole, static_cast<int>(i));
    const QColor c = severity_colour(f.severity);
    if (c.isValid()) item->setForeground(c);
    item->setToolTip(QString("%1%2").arg(plugins::to_string(f.severity), f.range ? " (double-click to show it in the timeline)" : ""));
    findings_->addItem(item);
  }
}

void AnalysesDock::activate_finding(int row) {
  if (row < 0 || row >= findings_->count()) return;
  const int i = findings_->item(row)->data(kFindingRole).toInt();
  if (i < 0 || static_cast<std::size_t>(i) >= result_.findings.size()) return;
  const auto& f = result_.findings[static_cast<std::size_t>(i)];
  if (f.range) emit jumpRequested(f.range->first, f.range->second, f.rank);
}

plugins::Selection timeline_selection(timeline::TimelineWidget* timeline) {
  plugins::Selection s;
  if (!timeline || !timeline->controller()) return s;
  if (const auto range = timeline->controller()->range_selection()) {
    s.from = range->first;
    s.to = range->second;
  }
  return s;
}

std::pair<std::vector<timeline::OverlayMarker>, std::vector<timeline::OverlayCounter>> timeline_overlay(
    const plugins::AnalysisResult& result) {
  std::vector<timeline::OverlayMarker> markers;
  for (const auto& m : result.markers) markers.push_back({m.start, m.end, m.rank, m.label});
  std::vector<timeline::OverlayCounter> counters;
  for (const auto& c : result.counters) {
    timeline::OverlayCounter o;
    o.label = result.analysis + ": " + c.name;
    o.rank = c.rank;
    o.unit = c.unit;
    double largest = 0;
    for (const auto& [t, v] : c.points) largest = std::max(largest, std::abs(v));
    o.value_scale = largest > 0 ? 1e9 / largest : 1;
    for (const auto& [t, v] : c.points) o.points.push_back({t, static_cast<std::int64_t>(std::llround(v * o.value_scale))});
    counters.push_back(std::move(o));
  }
  return {std::move(markers), std::move(counters)};
}

void connect_to_timeline(AnalysesDock* dock, timeline::TimelineWidget* timeline) {
  dock->selection_source = [timeline] { return timeline_selection(timeline); };
  QObject::connect(dock, &AnalysesDock::jumpRequested, timeline, &timeline::TimelineWidget::showRange);
  QObject::connect(dock, &AnalysesDock::finished, timeline, [dock, timeline] {
    auto [markers, counters] = dock->result().ok ? timeline_overlay(dock->result()) : decltype(timeline_overlay(dock->result())){};
    timeline->set_overlay(std::move(markers), std::move(counters));
  });
}

}  // namespace ss::analyses
