#include "app/gui/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QShowEvent>
#include <QStackedWidget>
#include <QStatusBar>
#include <QUrl>
#include <algorithm>
#include <optional>
#include <QStyleFactory>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

#include "app/gui/app_style.h"
#include "app/gui/profile_loader.h"
#include "app/gui/trace_import.h"
#include "app/gui/shortcuts.h"
#include "storage/units.h"
#include "views/analyses/analyses_dock.h"
#include "views/memory/memory_view.h"
#include "views/timeline/aggregate_model.h"
#include "views/timeline/timeline_widget.h"
#include "views/unshard/unshard_panel.h"
#include "views/unshard/unshard_session.h"
#include "views/compare/comparisons_dock.h"
#include "views/compare/compare_view.h"

namespace ss::gui {

namespace {
const QString kAggregateHint = QStringLiteral("Right-drag (or Shift+drag) over the timeline to aggregate a time range");
constexpr int kMaxRecent = 8;
// Saved with the dock layout: a layout saved by an older build (docks ~150 px wide, Unshard in
// a dock) is not restored; the window opens with the defaults of apply_default_sizes().
constexpr int kStateVersion = 2;
const char* const kOpenFilter =
    "Profiles and traces (*.ssdb *.sqlite *.db *.json *.gz);;ShardScope profiles (*.ssdb);;"
    "PyTorch profiler / Kineto traces (*.json *.json.gz);;Nsight Systems SQLite exports (*.sqlite);;All files (*)";
const char* const kTraceFilter =
    "Traces (*.json *.json.gz *.gz *.sqlite);;PyTorch profiler / Kineto traces (*.json *.json.gz);;"
    "Nsight Systems SQLite exports (*.sqlite);;All files (*)";

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent), loader_(new ProfileLoader(this)) {
  setWindowTitle("ShardScope");
  setAcceptDrops(true);
  setDockNestingEnabled(true);
  // Centre: the timeline (or, while a profile loads, what loads and how far it is), the Unshard
  // planner, and the Compare view (two linked timelines and the per-module table). Unshard and
  // Compare are tabs, not docks: each needs the window's full width and most of its height.
  tabs_ = new QTabWidget(this);
  tabs_->setDocumentMode(true);
  timeline_ = new timeline::TimelineWidget();
  timeline_page_ = new QStackedWidget();
  timeline_page_->addWidget(timeline_);
  timeline_page_->addWidget(build_loading_page());
  unshard_ = new unshard::UnshardPanel();
  compare_ = new compareview::CompareView();
  tabs_->addTab(timeline_page_, "Timeline");
  tabs_->addTab(unshard_, "Unshard");
  tabs_->addTab(compare_, "Compare");
  setCentralWidget(tabs_);
  build_docks();
  dark_ = QSettings().value("view/dark", true).toBool();
  build_menus();

  progress_ = new QProgressBar();
  progress_->setRange(0, 100);
  progress_->setMaximumWidth(260);
  progress_->hide();
  cancel_ = new QPushButton("Cancel");
  cancel_->hide();
  statusBar()->addPermanentWidget(progress_);
  statusBar()->addPermanentWidget(cancel_);
  connect(cancel_, &QPushButton::clicked, loader_, &ProfileLoader::cancel);
  connect(loading_cancel_, &QPushButton::clicked, loader_, &ProfileLoader::cancel);
  connect(loader_, &ProfileLoader::progress, this, [this](int percent, const QString& stage) {
    emit loadProgress(percent, stage);
    // At most 2 updates a second: with an OpenGL widget in the window every repaint composes the
    // whole window through OpenGL, which under software GL (llvmpipe) took 40% of the CPU while
    // a 1.3 M kernel profile loaded when the bar moved at every percent.
    if (progress_clock_.isValid() && progress_clock_.elapsed() < 500) return;
    progress_clock_.restart();
    progress_->setValue(percent);
    loading_bar_->setValue(percent);
    loading_stage_->setText(QString("%1: %2%").arg(stage).arg(percent));
    if (showing_partial_)
      statusBar()->showMessage(QString("Showing the first %1 kernels of %2; loading the rest: %3 %4%")
                                   .arg(profile_->kernel_count)
                                   .arg(QFileInfo(pending_path_).fileName(), stage)
                                   .arg(percent));
    else
      statusBar()->showMessage(QString("Loading %1: %2").arg(QFileInfo(pending_path_).fileName(), stage));
  });
  connect(loader_, &ProfileLoader::imported, this, [this](const QStringList& inputs, const QString& profile, bool reused) {
    pending_path_ = profile;
    last_import_ = profile;
    loading_title_->setText(QString("Loading %1").arg(QFileInfo(profile).fileName()));
    statusBar()->showMessage(QString("%1 %2 file%3 %4 %5")
                                 .arg(reused ? "Reusing the import of" : "Imported")
                                 .arg(inputs.size())
                                 .arg(inputs.size() == 1 ? "" : "s")
                                 .arg(reused ? "in" : "into", profile));
  });
  connect(loader_, &ProfileLoader::firstPart, this, &MainWindow::on_first_part);
  connect(loader_, &ProfileLoader::loaded, this, &MainWindow::on_loaded);
  connect(loader_, &ProfileLoader::failed, this, &MainWindow::on_failed);

  // Selection linked both ways between the timeline and the memory tree.
  connect(timeline_, &timeline::TimelineWidget::moduleSelected, memory_, &memview::MemoryView::selectModule);
  connect(memory_, &memview::MemoryView::moduleSelected, timeline_, &timeline::TimelineWidget::selectModule);
  connect(timeline_, &timeline::TimelineWidget::selectionChanged, this, [this] { show_details(); });
  // The memory chart follows the timeline's window; a click on the chart centres the timeline there.
  connect(timeline_, &timeline::TimelineWidget::viewportChanged, memory_, [this] {
    if (const auto* c = timeline_->controller()) memory_->setTimeRange(static_cast<qint64>(c->viewport().start_ns), static_cast<qint64>(c->viewport().end_ns()));
  });
  connect(memory_, &memview::MemoryView::timeClicked, timeline_, [this](qint64 t) {
    if (const auto* c = timeline_->controller()) {
      const double half = (c->viewport().end_ns() - c->viewport().start_ns) / 2 / 1.1;  // showRange adds 5% each side
      timeline_->showRange(t - static_cast<qint64>(half), t + static_cast<qint64>(half));
    }
  });
  connect(timeline_, &timeline::TimelineWidget::aggregateReady, this, [this] {
    const auto& agg = timeline_->controller()->aggregate();
    if (!agg) return;
    kernel_agg_->set_rows(agg->by_kernel);
    module_agg_->set_rows(agg->by_module);
    aggregate_title_->setText(QString("%1 in %2").arg(QString::fromStdString(count_of(agg->kernel_count, "kernel")),
                                                      QString::fromStdString(format_duration_ns(agg->t1 - agg->t0))));
    aggregate_dock_->show();
    aggregate_dock_->raise();
  });
  connect(timeline_, &timeline::TimelineWidget::aggregateCleared, this, [this] {
    kernel_agg_->set_rows({});
    module_agg_->set_rows({});
    aggregate_title_->setText(kAggregateHint);
  });

  QSettings settings;
  restoreGeometry(settings.value("window/geometry").toByteArray());
  state_restored_ = restoreState(settings.value("window/state").toByteArray(), kStateVersion);
  set_dark(settings.value("view/dark", true).toBool());
  rebuild_recent_menu();
  if (!settings.contains("window/geometry")) resize(1600, 1000);
}

QWidget* MainWindow::build_loading_page() {
  auto* page = new QWidget();
  auto* outer = new QVBoxLayout(page);
  auto* box = new QWidget();
  box->setMaximumWidth(560);
  auto* layout = new QVBoxLayout(box);
  loading_title_ = new QLabel();
  QFont big = loading_title_->font();
  big.setPointSizeF(big.pointSizeF() * 1.4);
  big.setBold(true);
  loading_title_->setFont(big);
  loading_title_->setWordWrap(true);
  loading_stage_ = new QLabel();
  loading_bar_ = new QProgressBar();
  loading_bar_->setRange(0, 100);
  loading_cancel_ = new QPushButton("Cancel");
  layout->addWidget(loading_title_);
  layout->addWidget(loading_stage_);
  layout->addWidget(loading_bar_);
  layout->addWidget(loading_cancel_, 0, Qt::AlignRight);
  outer->addStretch(1);
  outer->addWidget(box, 0, Qt::AlignHCenter);
  outer->addStretch(2);
  return page;
}

void MainWindow::show_loading(bool on) {
  timeline_page_->setCurrentIndex(on ? 1 : 0);
  if (on) tabs_->setCurrentWidget(timeline_page_);
}

bool MainWindow::showing_loading() const { return timeline_page_->currentIndex() == 1; }

void MainWindow::apply_default_sizes() {
  // Room for the content at 1600x1000 and up: the right column (Details over Range aggregate /
  // Analyses) about 30% of the window, at least 460 px (Details' lines, the aggregate's Count
  // and Total columns, a result table's first columns); Details a fifth of its height; the
  // Memory / Comparisons dock under the centre about a third of the height.
  const int w = std::max(width(), 1200), h = std::max(height(), 760);
  resizeDocks({details_dock_}, {std::max(460, w * 30 / 100)}, Qt::Horizontal);
  resizeDocks({details_dock_, aggregate_dock_}, {h * 22 / 100, h * 78 / 100}, Qt::Vertical);
  resizeDocks({memory_dock_}, {std::max(260, h * 31 / 100)}, Qt::Vertical);
}

void MainWindow::showEvent(QShowEvent* e) {
  QMainWindow::showEvent(e);
  if (shown_once_) return;
  shown_once_ = true;
  // Dock sizes only stick once the window has its size: set them on the first show, then keep
  // that as the layout Reset layout goes back to.
  if (!state_restored_) apply_default_sizes();
  default_state_ = saveState(kStateVersion);
}

MainWindow::~MainWindow() = default;

bool MainWindow::loading() const { return loader_->busy(); }

void MainWindow::cancel_loading() { loader_->cancel(); }

void MainWindow::set_first_part_rows(qint64 rows) { loader_->set_first_part_rows(rows); }

void MainWindow::on_first_part(std::shared_ptr<const Profile> profile, qint64 total_kernel_rows) {
  // Only the timeline shows the first part (the analyses, memory, unshard and compare views get
  // the whole profile); the Details dock follows the timeline's selection.
  if (!showing_partial_) before_partial_ = profile_;
  showing_partial_ = true;
  profile_ = std::move(profile);
  show_loading(false);
  timeline_->set_profile(profile_);
  analyses_->set_profile(nullptr);  // no analysis of a part
  kernel_agg_->set_rows({});
  module_agg_->set_rows({});
  aggregate_title_->setText(kAggregateHint);
  details_->clear();
  statusBar()->showMessage(QString("Showing the first %1 of %2 kernels of %3 while the rest loads")
                               .arg(profile_->kernel_count)
                               .arg(total_kernel_rows)
                               .arg(QFileInfo(QString::fromStdString(profile_->path)).fileName()));
  emit firstPartShown();
}

void MainWindow::build_docks() {
  memory_ = new memview::MemoryView();
  memory_dock_ = new QDockWidget("Memory", this);
  memory_dock_->setObjectName("memory_dock");
  memory_dock_->setWidget(memory_);
  addDockWidget(Qt::BottomDockWidgetArea, memory_dock_);

  details_ = new QPlainTextEdit();
  details_->setReadOnly(true);
  details_->setPlaceholderText("Click an event in the timeline");
  QFont mono("monospace");
  mono.setStyleHint(QFont::TypeWriter);
  details_->setFont(mono);
  details_dock_ = new QDockWidget("Details", this);
  details_dock_->setObjectName("details_dock");
  details_dock_->setWidget(details_);
  addDockWidget(Qt::RightDockWidgetArea, details_dock_);

  auto* agg = new QWidget();
  auto* layout = new QVBoxLayout(agg);
  layout->setContentsMargins(2, 2, 2, 2);
  aggregate_title_ = new QLabel(kAggregateHint);
  aggregate_title_->setWordWrap(true);
  layout->addWidget(aggregate_title_);
  auto* tabs = new QTabWidget();
  kernel_agg_ = new timeline::AggregateModel(this);
  module_agg_ = new timeline::AggregateModel(this);
  for (auto [model, title] : {std::pair{kernel_agg_, "By kernel"}, std::pair{module_agg_, "By module"}}) {
    auto* view = new QTableView();
    view->setModel(model);
    view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    view->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    view->setTextElideMode(Qt::ElideMiddle);
    view->setWordWrap(false);
    view->verticalHeader()->hide();
    view->setAlternatingRowColors(true);
    tabs->addTab(view, title);
  }
  layout->addWidget(tabs, 1);
  aggregate_dock_ = new QDockWidget("Range aggregate", this);
  aggregate_dock_->setObjectName("aggregate_dock");
  aggregate_dock_->setWidget(agg);
  addDockWidget(Qt::RightDockWidgetArea, aggregate_dock_);

  // The Analyses dock (issue 8): plugins found at startup, run on the timeline's range selection.
  analyses_ = new analyses::AnalysesDock();
  analyses_->discover();
  analyses::connect_to_timeline(analyses_, timeline_);
  analyses_dock_ = new QDockWidget("Analyses", this);
  analyses_dock_->setObjectName("analyses_dock");
  analyses_dock_->setWidget(analyses_);
  addDockWidget(Qt::RightDockWidgetArea, analyses_dock_);
  tabifyDockWidget(aggregate_dock_, analyses_dock_);
  // The Comparisons dock (issue 7): comparisons saved in a workspace file, reopened as saved.
  comparisons_ = new compareview::ComparisonsDock();
  comparisons_dock_ = new QDockWidget("Comparisons", this);
  comparisons_dock_->setObjectName("comparisons_dock");
  comparisons_dock_->setWidget(comparisons_);
  addDockWidget(Qt::BottomDockWidgetArea, comparisons_dock_);
  tabifyDockWidget(memory_dock_, comparisons_dock_);
  connect(compare_, &compareview::CompareView::saveRequested, this, &MainWindow::save_comparison);
  connect(comparisons_, &compareview::ComparisonsDock::reopenRequested, this, &MainWindow::reopen);
  memory_dock_->raise();
  analyses_dock_->raise();
  // The right column runs the window's full height; the bottom docks sit under the centre only.
  setCorner(Qt::BottomRightCorner, Qt::RightDockWidgetArea);
  setCorner(Qt::TopRightCorner, Qt::RightDockWidgetArea);
}

void MainWindow::build_menus() {
  QMenu* file = menuBar()->addMenu("&File");
  file->addAction("&Open...", QKeySequence::Open, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, "Open a profile or a trace", QString(), kOpenFilter);
    if (!path.isEmpty()) open_file(path);
  });
  file->addAction("&Import traces...", QKeySequence("Ctrl+I"), this, [this] {
    const QStringList inputs = QFileDialog::getOpenFileNames(
        this, "Import traces (one per rank) into one profile", QString(), kTraceFilter);
    if (inputs.isEmpty()) return;
    QString output;
    if (inputs.size() > 1) {  // one trace goes beside itself as X.ssdb, as Open does
      output = QFileDialog::getSaveFileName(this, "Profile to write", default_import_path(inputs), "ShardScope profiles (*.ssdb)");
      if (output.isEmpty()) return;
    }
    import_files(inputs, output);
  });
  recent_menu_ = file->addMenu("Open &Recent");
  file->addSeparator();
  file->addAction("&Quit", QKeySequence::Quit, this, &QWidget::close);

  QMenu* view = menuBar()->addMenu("&View");
  view->addAction(memory_dock_->toggleViewAction());
  view->addAction(details_dock_->toggleViewAction());
  view->addAction(aggregate_dock_->toggleViewAction());
  view->addAction(analyses_dock_->toggleViewAction());
  view->addAction(comparisons_dock_->toggleViewAction());
  view->addAction("&Timeline", QKeySequence("Ctrl+1"), this, [this] { tabs_->setCurrentWidget(timeline_page_); });
  view->addAction("&Unshard planner", QKeySequence("Ctrl+U"), this, &MainWindow::show_unshard_tab);
  view->addAction("&Compare view", QKeySequence("Ctrl+K"), this, &MainWindow::show_compare_tab);
  view->addSeparator();
  view->addAction("Whole profile", QKeySequence("Ctrl+0"), timeline_, &timeline::TimelineWidget::fitAll)->setObjectName("view_fit_all");
  view->addAction("&Find...", QKeySequence::Find, this, [this] { timeline_->open_find(); });
  // The timeline's analysis marker lanes (it owns them; M in the timeline toggles them too).
  QAction* markers = view->addAction("Analysis &markers");
  markers->setObjectName("view_markers");
  markers->setCheckable(true);
  markers->setChecked(true);
  connect(markers, &QAction::toggled, timeline_, &timeline::TimelineWidget::setMarkersVisible);
  connect(timeline_, &timeline::TimelineWidget::markersChanged, markers, [this, markers] { markers->setChecked(timeline_->markers_visible()); });
  view->addAction("Clear analysis markers", this, [this] { timeline_->clearMarkers(); })->setObjectName("clear_markers");
  view->addSeparator();
  dark_action_ = view->addAction("&Dark palette");
  QAction* dark = dark_action_;
  dark->setCheckable(true);
  dark->setChecked(dark_);
  connect(dark, &QAction::toggled, this, [this](bool on) { set_dark(on); });
  view->addAction("Reset &layout", QKeySequence("Ctrl+Shift+R"), this, &MainWindow::reset_layout);

  QMenu* help = menuBar()->addMenu("&Help");
  help->addAction("&Shortcuts", QKeySequence::HelpContents, this,
                  [this] { QMessageBox::information(this, "Shortcuts", shortcuts_html()); });
  help->addAction("&About", this, [this] {
    QMessageBox::about(this, "ShardScope", "ShardScope: a profiler and what-if planner for FSDP training.");
  });
}

void MainWindow::set_dark(bool dark) {
  dark_ = dark;
  qApp->setStyle(make_app_style());  // Fusion, with check boxes visible in the dark palette
  qApp->setPalette(dark ? dark_palette() : qApp->style()->standardPalette());
  QSettings().setValue("view/dark", dark);
  if (timeline_) timeline_->update();
  if (dark_action_ && dark_action_->isChecked() != dark) dark_action_->setChecked(dark);
  if (memory_) memory_->set_profile(profile_);  // the chart picks its theme from the palette
}

void MainWindow::reset_layout() {
  if (!default_state_.isEmpty()) restoreState(default_state_, kStateVersion);
  for (QDockWidget* d : {memory_dock_, details_dock_, aggregate_dock_, analyses_dock_, comparisons_dock_}) {
    d->setFloating(false);
    d->show();
  }
  memory_dock_->raise();
  analyses_dock_->raise();
  apply_default_sizes();  // for the window's present size
}

void MainWindow::begin_loading(const QString& what) {
  progress_->setValue(0);
  progress_->show();
  cancel_->show();
  loading_bar_->setValue(0);
  loading_title_->setText("Loading " + what);
  loading_stage_->setText("opening");
  progress_clock_.invalidate();
  show_loading(true);
  statusBar()->showMessage("Loading " + what);
}

void MainWindow::open_file(const QString& path) {
  pending_path_ = path;
  opened_ = {path};
  begin_loading(QFileInfo(path).fileName());
  loader_->start(path);
}

void MainWindow::import_files(const QStringList& inputs, const QString& output) {
  if (inputs.isEmpty()) return;
  pending_path_ = inputs.front();
  opened_ = inputs;
  begin_loading(inputs.size() == 1 ? QFileInfo(inputs.front()).fileName() : QString("%1 traces").arg(inputs.size()));
  loader_->start_import(inputs, output);
}

void MainWindow::on_loaded(std::shared_ptr<const Profile> profile) {
  progress_->hide();
  cancel_->hide();
  // After a first part: the view the user moved to in it is kept (same clock, same tracks first).
  std::optional<timeline::Viewport> keep;
  if (showing_partial_ && profile_ && timeline_->controller()) {
    const timeline::Viewport& v = timeline_->controller()->viewport();
    const double nspp = v.ns_per_px;
    if (v.start_ns > static_cast<double>(profile_->time_begin) + nspp || v.end_ns() < static_cast<double>(profile_->time_end) - nspp)
      keep = v;
  }
  showing_partial_ = false;
  before_partial_.reset();
  profile_ = std::move(profile);
  pending_path_ = QString::fromStdString(profile_->path);  // an imported trace: its profile
  show_loading(false);
  timeline_->set_profile(profile_);
  if (keep && timeline_->controller()) {
    timeline_->controller()->viewport() = *keep;
    timeline_->update();
  }
  // W/A/S/D work at once, without a click on the timeline first.
  if (tabs_->currentWidget() == timeline_page_) timeline_->setFocus(Qt::OtherFocusReason);
  analyses_->set_profile(profile_);
  unshard_->set_profile_path(pending_path_, profile_);
  compare_->set_profile(profile_, pending_path_);
  // The memory view reads memory events from the file and builds the chart: fill it after the
  // timeline has shown its first frame, so that the profile appears at once.
  memory_->set_profile(nullptr);
  tabs_->setCurrentWidget(timeline_page_);  // a new A: the Compare view starts over (reopen switches back)
  const auto fill_memory = [this, p = profile_] {
    QTimer::singleShot(0, this, [this, p] {
      if (p == profile_) memory_->set_profile(p);
    });
  };
  if (!timeline_->isVisible()) {
    fill_memory();  // e.g. a hidden window: no frame will be drawn to wait for
  } else {
    // After the timeline's first frame, or at once when another tab hides the timeline before
    // it draws (gui --compare B switches to Compare in profileLoaded): no frame would come.
    auto* once = new QObject(this);
    const auto fill_once = [once, fill_memory] {
      once->deleteLater();
      fill_memory();
    };
    connect(timeline_, &timeline::TimelineWidget::profileFrameDrawn, once, fill_once, Qt::SingleShotConnection);
    connect(tabs_, &QTabWidget::currentChanged, once, fill_once, Qt::SingleShotConnection);
  }
  kernel_agg_->set_rows({});
  module_agg_->set_rows({});
  aggregate_title_->setText(kAggregateHint);
  details_->clear();
  setWindowTitle(QString("ShardScope - %1").arg(QFileInfo(pending_path_).fileName()));
  statusBar()->showMessage(QString("%1: %2, %3, %4, %5")
                               .arg(pending_path_,
                                    QString::fromStdString(count_of(static_cast<std::int64_t>(profile_->ranks.size()), "rank")),
                                    QString::fromStdString(count_of(profile_->kernel_count, "kernel")),
                                    QString::fromStdString(count_of(profile_->range_count, "range")),
                                    QString::fromStdString(count_of(profile_->memory_event_count, "memory event"))));
  // Recent files: what the user opened (a trace reopens through its up-to-date import), or the
  // profile that several imported traces became.
  add_recent(opened_.size() == 1 ? opened_.front() : pending_path_);
  finish_reopen();
  emit profileLoaded();
}

void MainWindow::on_failed(const QString& path, const QString& message, bool cancelled) {
  progress_->hide();
  cancel_->hide();
  show_loading(false);
  if (showing_partial_) {  // the rest did not load: back to what was open before
    showing_partial_ = false;
    profile_ = std::move(before_partial_);
    timeline_->set_profile(profile_);
    analyses_->set_profile(profile_);
  }
  reopening_.reset();  // a saved comparison whose A did not open is not reopened later by surprise
  last_error_ = message;
  statusBar()->showMessage(cancelled ? "Loading cancelled" : "Could not open " + path, 8000);
  if (!cancelled && interactive_) QMessageBox::critical(this, "Could not open profile", QString("%1\n\n%2").arg(path, message));
  emit loadFailed(message);
}

void MainWindow::show_details() {
  if (!profile_ || !timeline_->controller()) return;
  const auto ref = timeline_->controller()->selected();
  details_->setPlainText(ref.valid() ? timeline::TimelineWidget::describe(*profile_, ref) : QString());
  const auto& peers = timeline_->controller()->peers();
  if (!peers.empty()) {
    QString text = "\n\nsame collective on other ranks:";
    for (const auto& p : peers)
      text += QString("\n  rank %1  %2").arg(profile_->stream_tracks[static_cast<std::size_t>(p.track)].rank).arg(
          timeline::TimelineWidget::describe(*profile_, p).section('\n', 1, 1));
    details_->appendPlainText(text);
  }
}

void MainWindow::show_compare_tab() { tabs_->setCurrentWidget(compare_); }

void MainWindow::show_unshard_tab() { tabs_->setCurrentWidget(unshard_); }

void MainWindow::save_comparison() {
  if (!compare_->comparison()) return;
  // The Unshard panel's plan goes with the comparison when the panel has one for this profile.
  QString plan;
  if (unshard_->session()) plan = QString::fromStdString(unshard_->session()->plan_file_json());
  comparisons_->save_interactively(compare_->path_a(), compare_->path_b(), compare_->alignment(), plan);
  comparisons_dock_->show();
  comparisons_dock_->raise();
}

void MainWindow::reopen(const compare::SavedComparison& c) {
  reopening_ = c;
  const QString a = QString::fromStdString(c.a.path);
  if (profile_ && QFileInfo(pending_path_).absoluteFilePath() == QFileInfo(a).absoluteFilePath() && !loading())
    finish_reopen();
  else
    open_file(a);
}

void MainWindow::finish_reopen() {
  if (!reopening_) return;
  const compare::SavedComparison c = *reopening_;
  reopening_.reset();
  if (QFileInfo(pending_path_).absoluteFilePath() != QFileInfo(QString::fromStdString(c.a.path)).absoluteFilePath()) return;
  show_compare_tab();
  if (!compare_->compare_with(QString::fromStdString(c.b.path), c.alignment)) {
    last_error_ = compare_->last_error();
    statusBar()->showMessage("Cannot reopen " + QString::fromStdString(c.name) + ": " + last_error_, 8000);
    return;
  }
  if (!c.plan_json.empty() && !unshard_->apply_plan_json(QString::fromStdString(c.plan_json))) {
    last_error_ = unshard_->last_error();
    statusBar()->showMessage("Reopened " + QString::fromStdString(c.name) + ", but its plan was not restored: " + last_error_, 8000);
    return;
  }
  statusBar()->showMessage("Reopened " + QString::fromStdString(c.name), 5000);
}

void MainWindow::add_recent(const QString& path) {
  QSettings settings;
  QStringList recent = settings.value("recent").toStringList();
  const QString abs = QFileInfo(path).absoluteFilePath();
  recent.removeAll(abs);
  recent.prepend(abs);
  while (recent.size() > kMaxRecent) recent.removeLast();
  settings.setValue("recent", recent);
  rebuild_recent_menu();
}

void MainWindow::rebuild_recent_menu() {
  recent_menu_->clear();
  const QStringList recent = QSettings().value("recent").toStringList();
  for (const QString& path : recent) recent_menu_->addAction(path, this, [this, path] { open_file(path); });
  recent_menu_->setEnabled(!recent.isEmpty());
}

void MainWindow::closeEvent(QCloseEvent* e) {
  loader_->cancel();
  QSettings settings;
  settings.setValue("window/geometry", saveGeometry());
  settings.setValue("window/state", saveState(kStateVersion));
  QMainWindow::closeEvent(e);
}

namespace {
QStringList local_files(const QMimeData* mime) {
  QStringList files;
  if (!mime || !mime->hasUrls()) return files;
  for (const QUrl& u : mime->urls())
    if (u.isLocalFile()) files << u.toLocalFile();
  return files;
}
}  // namespace

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  if (!local_files(e->mimeData()).isEmpty()) e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
  // One file: opened as Open does (a trace is imported beside itself). Several: the rank files
  // of one job, imported into one profile.
  const QStringList files = local_files(e->mimeData());
  if (files.isEmpty()) return;
  e->acceptProposedAction();
  if (files.size() == 1)
    open_file(files.front());
  else
    import_files(files);
}

}  // namespace ss::gui
