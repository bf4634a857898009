// Memory over time for one rank, stacked by category (Qt Charts), in the style of PyTorch's
// memory_viz: the time axis in ms since the profile's start (Profile::time_begin, the ruler's
// zero), the memory axis in a unit chosen from the range (GiB/MiB/KiB) with round ticks, a
// legend with the categories' names, the peak marked and the module running at it named.
//
// Hover: a vertical line and a readout above the chart (time, total, each category at that
// time). A left click emits timeClicked with the profile time under the cursor (the main window
// moves the timeline there). set_time_range shows a time window (the timeline's visible range);
// set_module highlights one module: the bytes attributed to it (a line) and when it runs (bands).
#pragma once

#include <QStringList>
#include <QWidget>
#include <cmath>
#include <functional>
#include <optional>

#include "storage/profile_model.h"
#include "views/memory/memory_axis.h"
#include "views/memory/module_memory_stats.h"

class QChart;
class QChartView;
class QGraphicsLineItem;
class QLabel;
class QValueAxis;
class QXYSeries;
class QAbstractSeries;

namespace ss::memview {

class MemoryChart : public QWidget {
  Q_OBJECT
 public:
  explicit MemoryChart(QWidget* parent = nullptr);
  // A placeholder chart in the palette's colours (no profile yet, or loading).
  void clear(const QString& message);
  void set_data(const Profile& profile, const ModuleMemoryStats& stats);
  // Shows [t0, t1] (profile clock); the memory axis keeps the whole profile's scale. A window of
  // less than half the profile is re-sampled from the rank's events at full detail.
  void set_time_range(TimeNs t0, TimeNs t1);
  // Highlights one module (a null series: none).
  void set_module(const QString& fqn, const ModuleSeries& series);

  // What the hover line shows at profile time `t` (also what a mouse move calls).
  void hover_time(TimeNs t);
  // The profile time under a widget point of the chart view's viewport; nullopt outside the plot.
  std::optional<TimeNs> time_at(QPoint viewport_pos) const;
  // The viewport point of profile time `t` at the middle of the plot's height.
  QPoint point_of(TimeNs t) const;

  QString title_text() const;
  QString readout_text() const;
  QStringList legend_names() const;  // the stacked categories' names, bottom to top
  QString highlighted_module() const { return module_fqn_; }
  QChartView* view() { return view_; }
  QValueAxis* x_axis() const { return ax_; }
  QValueAxis* y_axis() const { return ay_; }
  const ByteUnit& unit() const { return unit_; }
  const MemorySeries& shown_series() const { return shown_; }

 signals:
  void timeClicked(qint64 t);

 protected:
  // A placeholder follows the palette (made before the app's dark palette, it stayed a white box);
  // a chart with data is redrawn by its owner (MainWindow::set_dark sets the profile again).
  void changeEvent(QEvent* e) override;

 private:
  void set_ticks(QValueAxis* axis, double lo, double hi, int target);
  void show_series(const MemorySeries& series);  // new points for the stacked areas
  void update_bands();  // the highlighted module's running bands for the window shown
  // The time axis' coordinate of profile time t (in x_unit_ since the profile's start), and back.
  double x_of(TimeNs t) const { return static_cast<double>(t - t_begin_) / x_unit_.ns; }
  TimeNs time_of_x(double x) const { return t_begin_ + static_cast<TimeNs>(std::llround(x * x_unit_.ns)); }
  void mouse_moved(QPoint pos);
  void mouse_left();

  QChartView* view_ = nullptr;
  QLabel* readout_ = nullptr;
  QLabel* legend_ = nullptr;
  QValueAxis* ax_ = nullptr;
  QValueAxis* ay_ = nullptr;
  QGraphicsLineItem* cursor_ = nullptr;
  std::vector<QAbstractSeries*> module_series_;
  QXYSeries* band_upper_ = nullptr;  // the running bands' outline (owned by its area series)
  QString module_fqn_;
  ModuleSeries module_;
  QStringList legend_names_;
  QString legend_html_;  // the categories' legend, without the highlighted module
  MemorySeries series_;       // the whole profile's samples
  MemorySeries shown_;        // what the areas and the readout show: series_ or a zoomed window's
  std::shared_ptr<const std::vector<MemoryEvent>> events_;  // for re-sampling a zoomed window
  std::vector<std::pair<int, std::pair<QXYSeries*, QXYSeries*>>> areas_;  // category -> (upper, lower)
  ByteUnit unit_;
  TimeNs t_begin_ = 0, t_end_ = 0;
  struct XUnit {
    double ns = 1e6;
    const char* name = "ms";
  };
  XUnit x_unit_;
  double y_top_ = 1;  // in units
  bool has_data_ = false;
};

}  // namespace ss::memview
