// The Analyses dock (issue 8): lists the discovered analysis plugins (and the libraries that were
// refused), runs the chosen one on the current profile and selection on a worker thread, shows
// its tables (sortable) and findings (with severity icons), and asks the timeline to jump to a
// finding's time range when it is double-clicked. A plugin that fails or throws shows its error
// here; the app carries on (plugins::PluginHost contains the fault).
//
// The dock does not know the timeline: the main window gives it a selection source and connects
// jumpRequested (connect_to_timeline does both), so the dock is testable without OpenGL.
#pragma once

#include <QWidget>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "plugins/host/analysis_result.h"
#include "plugins/host/plugin_host.h"
#include "storage/profile_model.h"
#include "views/timeline/timeline_controller.h"

class QCheckBox;
class QLabel;
class QListWidget;
class QPushButton;
class QTabWidget;
class QThread;

namespace ss::timeline {
class TimelineWidget;
}

namespace ss::analyses {

class ResultTableModel;

class AnalysesDock : public QWidget {
  Q_OBJECT
 public:
  explicit AnalysesDock(QWidget* parent = nullptr);
  ~AnalysesDock() override;  // waits for a running analysis

  // Loads the plugins in dirs (replacing any loaded before) and fills the list.
  void discover(const std::vector<std::string>& dirs = plugins::default_plugin_dirs());
  void set_profile(std::shared_ptr<const Profile> profile);

  // What "the current selection" is when Run is pressed; unset or returning {}: the whole profile.
  std::function<plugins::Selection()> selection_source;

  // Starts the named analysis on the current profile and selection. False (and says why in the
  // status line) when no profile is open, the name is unknown or an analysis is already running.
  bool run(const QString& name);
  bool busy() const { return worker_ != nullptr; }

  const plugins::PluginHost& host() const { return *host_; }
  const plugins::AnalysisResult& result() const { return result_; }
  const plugins::Selection& last_selection() const { return last_selection_; }

  // The widgets, for tests and the screenshot staging.
  QListWidget* plugin_list() const { return plugin_list_; }
  QPushButton* run_button() const { return run_button_; }
  QPushButton* copy_button() const { return copy_button_; }
  // "Steps only": the run's window is cut to the recorded steps (the earliest start to the latest
  // end; within the timeline's selection when there is one). Disabled on a profile without steps.
  QCheckBox* steps_only() const { return steps_only_; }
  QTabWidget* table_tabs() const { return table_tabs_; }
  QListWidget* findings() const { return findings_; }
  QLabel* status() const { return status_; }
  ResultTableModel* table_model(int i) const;  // the model behind table tab i (unsorted order)

  // Table tab `tab` as tab-separated text with exact values, in the view's (sorted) order and
  // only its selected rows when some are selected; what Copy table / Ctrl+C put on the clipboard.
  QString table_text(int tab) const;
  void copy_table();

  // As a double-click on finding `row` does: emits jumpRequested when it has a time range.
  void activate_finding(int row);

 signals:
  void finished();  // a run ended and its result is shown (ok or not)
  void jumpRequested(qint64 t0, qint64 t1, int rank);

 protected:
  void changeEvent(QEvent* e) override;
  void showEvent(QShowEvent* e) override;

 private:
  void show_result(const plugins::AnalysisResult& result);
  void update_run_enabled();
  void fit_plugin_list();
  QString describe(const plugins::Selection& s) const;

  std::unique_ptr<plugins::PluginHost> host_;
  std::shared_ptr<const Profile> profile_;
  plugins::AnalysisResult result_;
  plugins::Selection last_selection_;
  QThread* worker_ = nullptr;

  QListWidget* plugin_list_ = nullptr;
  QLabel* description_ = nullptr;
  QPushButton* run_button_ = nullptr;
  QPushButton* copy_button_ = nullptr;
  QCheckBox* steps_only_ = nullptr;
  bool last_steps_only_ = false;  // the last run's window was cut to the steps
  QLabel* status_ = nullptr;
  QTabWidget* table_tabs_ = nullptr;
  QListWidget* findings_ = nullptr;
  std::vector<ResultTableModel*> models_;
};

// The timeline's current range selection (right drag / Shift+drag) as a plugin Selection (all
// ranks); the whole profile when nothing is selected.
plugins::Selection timeline_selection(timeline::TimelineWidget* timeline);

// A result's markers and counter tracks as the timeline's overlay (counter values scaled so the
// largest magnitude keeps nine significant digits as an integer).
std::pair<std::vector<timeline::OverlayMarker>, std::vector<timeline::OverlayCounter>> timeline_overlay(
    const plugins::AnalysisResult& result);

// Wires the dock to the timeline: Run uses its range selection, a finding's jump moves it, and a
// finished run's markers and counter tracks are drawn on it (a failed run clears them).
void connect_to_timeline(AnalysesDock* dock, timeline::TimelineWidget* timeline);

}  // namespace ss::analyses
