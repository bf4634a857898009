// The main window: the timeline in the centre, docks for the memory view, event details and the
// range aggregate; menus with open, recent files, palettes, layout reset and the shortcuts list.
// Dock layout, geometry, recent files and the palette persist in QSettings.
#pragma once

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

  void open_file(const QString& path);
  std::shared_ptr<const Profile> profile() const { return profile_; }
  timeline::TimelineWidget* timeline() { return timeline_; }
  memview::MemoryView* memory_view() { return memory_; }
  QDockWidget* memory_dock() { return memory_dock_; }
  analyses::AnalysesDock* analyses() { return analyses_; }
  QDockWidget* analyses_dock() { return analyses_dock_; }
  unshard::UnshardPanel* unshard_panel() { return unshard_; }
  QDockWidget* unshard_dock() { return unshard_dock_; }
  compareview::CompareView* compare_view() { return compare_; }
  QTabWidget* central_tabs() { return tabs_; }
  void show_compare_tab();
  compareview::ComparisonsDock* comparisons() { return comparisons_; }
  QDockWidget* comparisons_dock() { return comparisons_dock_; }
  timeline::AggregateModel* kernel_aggregate() { return kernel_agg_; }
  timeline::AggregateModel* module_aggregate() { return module_agg_; }
  QPlainTextEdit* details() { return details_; }
  QString last_error() const { return last_error_; }
  bool loading() const;
  void set_dark(bool dark);
  void reset_layout();
  // When false, reader errors are kept in last_error() and not shown in a modal dialog (tests).
  void set_interactive(bool on) { interactive_ = on; }

 signals:
  void profileLoaded();
  void loadFailed(QString message);

 protected:
  void closeEvent(QCloseEvent* e) override;
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;

 private:
  void build_menus();
  void build_docks();
  void add_recent(const QString& path);
  void rebuild_recent_menu();
  void on_loaded(std::shared_ptr<const Profile> profile);
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
  QDockWidget* unshard_dock_ = nullptr;
  QTabWidget* tabs_ = nullptr;  // the timeline and the Compare view
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
  QString last_error_;
  bool interactive_ = true;
  bool dark_ = true;
};

}  // namespace ss::gui
