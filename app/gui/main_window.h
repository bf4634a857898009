// The main window: tabs in the centre (Timeline, Unshard planner, Compare), docks for the memory
// view, event details, the range aggregate, analyses and saved comparisons; menus with open,
// import, recent files, palettes, layout reset and the shortcuts list. While a profile loads (or
// a trace is imported) the Timeline tab shows what loads and how far it is. Dock layout,
// geometry, recent files and the palette persist in QSettings (the layout with a version, so a
// layout saved by an older build is not restored).
#pragma once

#include <QElapsedTimer>
#include <QMainWindow>
#include <memory>
#include <optional>

#include "profiler/compare/workspace.h"

#include "storage/profile_model.h"

class QAction;
class QLabel;
class QMenu;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QTableView;
class QDockWidget;
class QTabWidget;
class QStackedWidget;

namespace ss::timeline {
class TimelineWidget;
class AggregateModel;
}  // namespace ss::timeline
namespace ss::memview {
class MemoryView;
}
namespace ss::unshard {
class UnshardPanel;
}
namespace ss::compareview {
class CompareView;
class ComparisonsDock;
}
namespace ss::analyses {
class AnalysesDock;
}

namespace ss::gui {

class ProfileLoader;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Opens a profile, or imports a trace (Kineto JSON / .json.gz, nsys SQLite) and opens that.
  void open_file(const QString& path);
  // Imports several traces (one per rank) into one profile (`output`, or the default beside the
  // first input; app/gui/trace_import.h) and opens it.
  void import_files(const QStringList& inputs, const QString& output = {});
  // The profile the last import wrote or reused (empty before any).
  QString last_import() const { return last_import_; }
  bool showing_loading() const;  // the centre shows the loading page
  QLabel* loading_title() { return loading_title_; }
  std::shared_ptr<const Profile> profile() const { return profile_; }
  timeline::TimelineWidget* timeline() { return timeline_; }
  memview::MemoryView* memory_view() { return memory_; }
  QDockWidget* memory_dock() { return memory_dock_; }
  analyses::AnalysesDock* analyses() { return analyses_; }
  QDockWidget* analyses_dock() { return analyses_dock_; }
  unshard::UnshardPanel* unshard_panel() { return unshard_; }
  void show_unshard_tab();
  compareview::CompareView* compare_view() { return compare_; }
  QTabWidget* central_tabs() { return tabs_; }
  void show_compare_tab();
  compareview::ComparisonsDock* comparisons() { return comparisons_; }
  QDockWidget* comparisons_dock() { return comparisons_dock_; }
  QDockWidget* details_dock() { return details_dock_; }
  QDockWidget* aggregate_dock() { return aggregate_dock_; }
  timeline::AggregateModel* kernel_aggregate() { return kernel_agg_; }
  timeline::AggregateModel* module_aggregate() { return module_agg_; }
  QPlainTextEdit* details() { return details_; }
  QString last_error() const { return last_error_; }
  bool loading() const;
  // Profiles with more than twice this many kernel rows open in two passes: the first rows are
  // shown (and usable) while the whole loads (ProfileLoader::set_first_part_rows).
  void set_first_part_rows(qint64 rows);
  bool showing_first_part() const { return showing_partial_; }
  void cancel_loading();  // as the Cancel button does
  void set_dark(bool dark);
  void reset_layout();
  // When false, reader errors are kept in last_error() and not shown in a modal dialog (tests).
  void set_interactive(bool on) { interactive_ = on; }

 signals:
  void profileLoaded();
  void firstPartShown();  // the first part of a big profile is on the timeline
  void loadFailed(QString message);
  void loadProgress(int percent, QString stage);  // the loader's (or importer's) progress

 protected:
  void closeEvent(QCloseEvent* e) override;
  void showEvent(QShowEvent* e) override;
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;

 private:
  void build_menus();
  void build_docks();
  QWidget* build_loading_page();
  void apply_default_sizes();
  void begin_loading(const QString& what);
  void show_loading(bool on);
  void add_recent(const QString& path);
  void rebuild_recent_menu();
  void on_loaded(std::shared_ptr<const Profile> profile);
  void on_first_part(std::shared_ptr<const Profile> profile, qint64 total_kernel_rows);
  void on_failed(const QString& path, const QString& message, bool cancelled);
  void show_details();
  void save_comparison();
  void reopen(const compare::SavedComparison& c);
  void finish_reopen();

  std::shared_ptr<const Profile> profile_;
  timeline::TimelineWidget* timeline_ = nullptr;
  memview::MemoryView* memory_ = nullptr;
  QDockWidget* memory_dock_ = nullptr;
  QDockWidget* details_dock_ = nullptr;
  QDockWidget* aggregate_dock_ = nullptr;
  analyses::AnalysesDock* analyses_ = nullptr;
  QDockWidget* analyses_dock_ = nullptr;
  unshard::UnshardPanel* unshard_ = nullptr;
  QTabWidget* tabs_ = nullptr;  // the timeline, the Unshard planner and the Compare view
  QStackedWidget* timeline_page_ = nullptr;  // the timeline, or the loading page while loading
  QLabel* loading_title_ = nullptr;
  QLabel* loading_stage_ = nullptr;
  QProgressBar* loading_bar_ = nullptr;
  QPushButton* loading_cancel_ = nullptr;
  compareview::CompareView* compare_ = nullptr;
  compareview::ComparisonsDock* comparisons_ = nullptr;
  QDockWidget* comparisons_dock_ = nullptr;
  // A saved comparison being reopened: compared (and its plan restored) once A has loaded.
  std::optional<compare::SavedComparison> reopening_;
  QPlainTextEdit* details_ = nullptr;
  timeline::AggregateModel* kernel_agg_ = nullptr;
  timeline::AggregateModel* module_agg_ = nullptr;
  QLabel* aggregate_title_ = nullptr;
  QMenu* recent_menu_ = nullptr;
  QAction* dark_action_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QPushButton* cancel_ = nullptr;
  ProfileLoader* loader_ = nullptr;
  QByteArray default_state_;
  QString pending_path_;
  QStringList opened_;  // what the user opened or imported (for the recent files)
  QString last_import_;
  QElapsedTimer progress_clock_;  // throttles the progress display
  // While the first part of a big profile is shown: the profile open before it (restored if the
  // rest fails to load).
  std::shared_ptr<const Profile> before_partial_;
  bool showing_partial_ = false;
  bool state_restored_ = false;
  bool shown_once_ = false;
  QString last_error_;
  bool interactive_ = true;
  bool dark_ = true;
};

}  // namespace ss::gui
