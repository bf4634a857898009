// The timeline: Dear ImGui 1.86 drawn through its OpenGL3 backend inside a QOpenGLWidget. Input
// goes through ImGuiQtBridge (for ImGui's own widgets: the find bar, tooltips) and to the Qt-free
// TimelineController (zoom, pan, selection). It repaints only on input, plus two trailing frames
// so ImGui settles hover state; nothing animates while idle.
#pragma once

#include <QElapsedTimer>
#include <QOpenGLWidget>
#include <memory>
#include <optional>
#include <string>

#include "storage/profile_model.h"
#include "views/timeline/timeline_controller.h"

struct ImGuiContext;

namespace ss::timeline {

class ImGuiQtBridge;

class TimelineWidget : public QOpenGLWidget {
  Q_OBJECT
 public:
  explicit TimelineWidget(QWidget* parent = nullptr);
  ~TimelineWidget() override;

  void set_profile(std::shared_ptr<const Profile> profile);
  // Whether set_profile folds rows until every rank fits (TimelineController::fit_rows_to_height;
  // on by default). Off for a timeline whose profile is replaced on every change (the what-if
  // panel's), where the user's own row state and scroll are kept.
  void set_fit_rows(bool on) { fit_rows_ = on; }
  // What the widget says while it has no profile (the Compare view's B pane: not File > Open,
  // which replaces A).
  void set_placeholder(std::string text) {
    placeholder_ = std::move(text);
    update();
  }
  const std::string& placeholder() const { return placeholder_; }
  TimelineController* controller() { return controller_.get(); }
  bool find_open() const { return find_open_; }
  void open_find();
  // Frames drawn so far (tests check that input leads to a repaint).
  long frames() const { return frames_; }
  // Frame timing (shardscope gui --time-frames): with `finish` set, each paintGL ends with
  // glFinish, so last_paint_ms covers building the draw lists, ImGui and the GL rendering.
  void set_finish_frames(bool finish) { finish_frames_ = finish; }
  double last_paint_ms() const { return last_paint_ms_; }
  // The CPU part of it: draw lists built and ImGui rendered to vertices, before any GL call.
  double last_cpu_ms() const { return last_cpu_ms_; }

  // The visible window (start and scale), set without emitting viewportChanged: linked
  // timelines (the Compare view) mirror each other through this.
  void set_view(double start_ns, double ns_per_px);
  // An analysis's markers (on per-rank marker lanes) and counter tracks (TimelineController::set_overlay).
  void set_overlay(std::vector<OverlayMarker> markers, std::vector<OverlayCounter> counters);
  // Ruler labels count from this time (default: the profile's first event), so that two
  // timelines aligned at a step both read 0 at its start.
  void set_time_origin(std::optional<TimeNs> origin);

  // A multi-line description of an event for the details dock.
  static QString describe(const Profile& profile, const EventRef& ref);

 signals:
  void selectionChanged(ss::timeline::EventRef ref);
  void moduleSelected(int module);
  void aggregateReady();
  void aggregateCleared();  // Esc cleared the selected range
  void profileFrameDrawn();  // after each frame that drew a profile
  void viewportChanged();    // zoom or pan by input or showRange (not set_view)
  void markersChanged();     // markers set, shown, hidden, cleared or their limit toggled

 public slots:
  void selectModule(int module);
  // Moves the view to a time range (and a rank's tracks when rank >= 0); see TimelineController.
  void showRange(qint64 t0, qint64 t1, int rank = -1);
  // The whole profile (View > Whole profile, Ctrl+0); linked views follow through viewportChanged.
  void fitAll();
  // The analysis marker lanes (View menu, the lane's "x" button, the M key): shown or hidden
  // (the markers are kept), cleared (dropped until the next analysis), the longest
  // kDefaultMarkerLimit or all.
  void setMarkersVisible(bool visible);
  void clearMarkers();
  void setShowAllMarkers(bool all);

 public:
  bool markers_visible() const;

 protected:
  void initializeGL() override;
  void paintGL() override;
  void resizeGL(int w, int h) override;
  bool event(QEvent* e) override;

 private:
  void draw_timeline();
  void draw_find_bar();
  void draw_tooltip();
  void request_frames(int n = 3);

  std::shared_ptr<const Profile> profile_;
  std::unique_ptr<TimelineController> controller_;
  std::unique_ptr<ImGuiQtBridge> bridge_;
  ImGuiContext* imgui_ = nullptr;
  Frame frame_;
  QElapsedTimer clock_;
  int pending_frames_ = 0;
  long frames_ = 0;
  bool finish_frames_ = false;
  double last_paint_ms_ = 0;
  double last_cpu_ms_ = 0;
  std::optional<TimeNs> time_origin_;
  bool find_open_ = false;
  bool fit_rows_ = true;
  std::string placeholder_ = "Open a profile (File > Open, or drop a .ssdb file here)";
  bool dark_ = true;  // ImGui style follows the Qt palette
  bool find_focus_ = false;
  char find_buffer_[256] = {};
};

}  // namespace ss::timeline
