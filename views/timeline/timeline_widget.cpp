#include "views/timeline/timeline_widget.h"

#include <optional>

#include <imgui.h>
#include <imgui_impl_opengl3.h>

#include <QKeyEvent>
#include <QMouseEvent>
#include <QOpenGLContext>
#include <QOpenGLFunctions>
#include <QTimer>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <cfloat>
#include <cstdio>

#include "views/timeline/imgui_qt_bridge.h"
#include "views/timeline/label_layout.h"
#include "views/timeline/time_format.h"

namespace ss::timeline {

namespace {

std::string format_bytes(double b) {
  char buf[64];
  if (b >= 1024.0 * 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  else if (b >= 1024.0 * 1024)
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1024.0 * 1024));
  else if (b >= 1024.0)
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%.0f B", b);
  return buf;
}

ImU32 hashed_colour(std::uint32_t name, float hue_lo, float hue_hi, float v) {
  std::uint32_t h = name * 2654435761u;
  const float hue = hue_lo + (hue_hi - hue_lo) * static_cast<float>(h % 1000) / 1000.0f;
  float r, g, b;
  ImGui::ColorConvertHSVtoRGB(hue, 0.55f, v, r, g, b);
  return ImGui::ColorConvertFloat4ToU32(ImVec4(r, g, b, 1));
}

ImU32 kernel_colour(const KernelEvent& e) {
  switch (e.category) {
    case KernelCategory::Collective: return hashed_colour(e.name, 0.02f, 0.10f, 0.90f);  // reds/oranges
    case KernelCategory::Memcpy:
    case KernelCategory::Memset: return IM_COL32(170, 120, 210, 255);
    default: return hashed_colour(e.name, 0.40f, 0.60f, 0.75f);  // greens/teals
  }
}

ImU32 range_colour(const RangeEvent& e) {
  // Module, FSDP and GPU-annotation ranges are coloured by phase; framework operators and NCCL
  // API ranges by kind, so the phase colours stay readable.
  if (e.kind == RangeKind::CpuOp) return hashed_colour(e.name, 0.55f, 0.70f, 0.55f);
  if (e.kind == RangeKind::Nccl) return IM_COL32(200, 110, 90, 255);
  switch (e.phase) {
    case RangePhase::Forward: return IM_COL32(80, 130, 220, 255);
    case RangePhase::Backward: return IM_COL32(220, 120, 60, 255);
    case RangePhase::Recompute: return IM_COL32(170, 90, 200, 255);
    case RangePhase::Optimizer: return IM_COL32(90, 180, 90, 255);
    default: return IM_COL32(130, 130, 140, 255);
  }
}

// Colours that follow the application's palette (View > Dark palette); event colours are shared.
struct Theme {
  ImU32 ruler, ruler_text, grid, stripe, rank_line, label_bg, label_pinned_bg, label_text, outside, pinned_bg, band_text;
  float clear[3];
};
Theme theme_for(bool dark) {
  if (dark)
    return {IM_COL32(40, 40, 46, 255), IM_COL32(200, 200, 200, 255), IM_COL32(255, 255, 255, 18), IM_COL32(255, 255, 255, 8),
            IM_COL32(255, 255, 255, 50), IM_COL32(34, 34, 40, 255), IM_COL32(45, 45, 60, 255), IM_COL32(210, 210, 210, 255),
            IM_COL32(0, 0, 0, 70), IM_COL32(30, 30, 40, 255), IM_COL32(255, 255, 180, 255), {0.11f, 0.11f, 0.13f}};
  return {IM_COL32(225, 225, 230, 255), IM_COL32(40, 40, 40, 255), IM_COL32(0, 0, 0, 25), IM_COL32(0, 0, 0, 10),
          IM_COL32(0, 0, 0, 60), IM_COL32(235, 235, 240, 255), IM_COL32(215, 215, 235, 255), IM_COL32(30, 30, 30, 255),
          IM_COL32(0, 0, 0, 30), IM_COL32(225, 225, 240, 255), IM_COL32(90, 70, 0, 255), {0.97f, 0.97f, 0.98f}};
}

const CollectiveEvent* collective_of(const Profile& p, std::uint32_t kernel_id) {
  for (const auto& c : p.collectives)
    if (c.kernel_id == static_cast<std::int64_t>(kernel_id)) return &c;
  return nullptr;
}

}  // namespace

TimelineWidget::TimelineWidget(QWidget* parent) : QOpenGLWidget(parent), bridge_(std::make_unique<ImGuiQtBridge>()) {
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setMinimumSize(400, 200);
  clock_.start();
}

TimelineWidget::~TimelineWidget() {
  if (imgui_) {
    makeCurrent();
    ImGui::SetCurrentContext(imgui_);
    ImGui_ImplOpenGL3_Shutdown();
    ImGui::DestroyContext(imgui_);
    doneCurrent();
  }
}

void TimelineWidget::set_profile(std::shared_ptr<const Profile> profile) {
  profile_ = std::move(profile);
  controller_ = profile_ ? std::make_unique<TimelineController>(*profile_) : nullptr;
  if (controller_) {
    controller_->set_size(static_cast<float>(width()), static_cast<float>(height()));
    controller_->fit_all();
    if (fit_rows_) controller_->fit_rows_to_height();  // every rank's compute and communication on the first screen
    controller_->on_selection_changed = [this](const EventRef& ref) {
      emit selectionChanged(ref);
      if (ref.valid()) {
        const EventInfo info = event_info(*profile_, ref);
        if (info.module >= 0) emit moduleSelected(info.module);
      }
    };
    controller_->on_aggregate = [this](const Aggregate&) { emit aggregateReady(); };
    controller_->on_aggregate_cleared = [this] { emit aggregateCleared(); };
    controller_->on_markers_changed = [this] {
      request_frames();
      emit markersChanged();
    };
  }
  find_open_ = false;
  find_buffer_[0] = 0;
  time_origin_.reset();
  request_frames();
}

void TimelineWidget::open_find() {
  find_open_ = true;
  find_focus_ = true;
  request_frames();
}

void TimelineWidget::selectModule(int module) {
  if (!controller_) return;
  const EventRef before = controller_->selected();
  if (before.valid() && event_info(*profile_, before).module == module) return;  // came from us
  controller_->select_module(module);
  request_frames();
}

void TimelineWidget::showRange(qint64 t0, qint64 t1, int rank) {
  if (!controller_) return;
  controller_->show_range(t0, t1, rank);
  request_frames();
  emit viewportChanged();
}

void TimelineWidget::fitAll() {
  if (!controller_) return;
  controller_->fit_all();
  request_frames();
  emit viewportChanged();
}

void TimelineWidget::set_view(double start_ns, double ns_per_px) {
  if (!controller_ || !(ns_per_px > 0)) return;
  Viewport& vp = controller_->viewport();
  if (vp.start_ns == start_ns && vp.ns_per_px == ns_per_px) return;
  vp.start_ns = start_ns;
  vp.ns_per_px = ns_per_px;
  request_frames();
}

void TimelineWidget::set_overlay(std::vector<OverlayMarker> markers, std::vector<OverlayCounter> counters) {
  if (!controller_) return;
  controller_->set_overlay(std::move(markers), std::move(counters));
  request_frames();
}

void TimelineWidget::setMarkersVisible(bool visible) {
  if (controller_) controller_->set_markers_visible(visible);
}

void TimelineWidget::clearMarkers() {
  if (controller_) controller_->clear_markers();
}

void TimelineWidget::setShowAllMarkers(bool all) {
  if (controller_) controller_->set_show_all_markers(all);
}

bool TimelineWidget::markers_visible() const { return controller_ ? controller_->markers_visible() : true; }

void TimelineWidget::set_time_origin(std::optional<TimeNs> origin) {
  time_origin_ = origin;
  request_frames();
}

void TimelineWidget::request_frames(int n) {
  pending_frames_ = std::max(pending_frames_, n);
  update();
}

void TimelineWidget::initializeGL() {
  imgui_ = ImGui::CreateContext();
  ImGui::SetCurrentContext(imgui_);
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // layout lives in QSettings, not imgui.ini
  ImGui::StyleColorsDark();
  ImGui::GetStyle().WindowRounding = 3;
  bridge_->install(imgui_);
  ImGui_ImplOpenGL3_Init(nullptr);
}

void TimelineWidget::resizeGL(int w, int h) {
  if (controller_) controller_->set_size(static_cast<float>(w), static_cast<float>(h));
}

bool TimelineWidget::event(QEvent* e) {
  if (imgui_) {
    ImGui::SetCurrentContext(imgui_);
    const bool input = bridge_->feed(e, this);
    if (input) request_frames();
  }
  if (!controller_) return QOpenGLWidget::event(e);
  const ImGuiIO* io = imgui_ ? &ImGui::GetIO() : nullptr;
  const bool imgui_mouse = io && io->WantCaptureMouse;
  const bool imgui_text = io && io->WantTextInput;
  const Viewport before = controller_->viewport();
  bool changed = false;
  switch (e->type()) {
    case QEvent::MouseMove: {
      auto* m = static_cast<QMouseEvent*>(e);
      changed = controller_->mouse_move(static_cast<float>(m->position().x()), static_cast<float>(m->position().y()));
      break;
    }
    case QEvent::Leave:  // no tooltip for an event the mouse is no longer over
      changed = controller_->mouse_leave();
      break;
    case QEvent::MouseButtonPress: {
      auto* m = static_cast<QMouseEvent*>(e);
      setFocus(Qt::MouseFocusReason);
      if (imgui_mouse) break;
      const MouseButton b = m->button() == Qt::RightButton ? MouseButton::Right
                            : m->button() == Qt::MiddleButton ? MouseButton::Middle
                                                              : MouseButton::Left;
      changed = controller_->mouse_press(static_cast<float>(m->position().x()), static_cast<float>(m->position().y()), b,
                                         m->modifiers() & Qt::ShiftModifier);
      break;
    }
    case QEvent::MouseButtonRelease: {
      auto* m = static_cast<QMouseEvent*>(e);
      const MouseButton b = m->button() == Qt::RightButton ? MouseButton::Right
                            : m->button() == Qt::MiddleButton ? MouseButton::Middle
                                                              : MouseButton::Left;
      changed = controller_->mouse_release(static_cast<float>(m->position().x()), static_cast<float>(m->position().y()), b);
      break;
    }
    case QEvent::Wheel: {
      if (imgui_mouse) break;
      auto* w = static_cast<QWheelEvent*>(e);
      changed = controller_->wheel(static_cast<float>(w->position().x()), static_cast<float>(w->position().y()),
                                   static_cast<float>(w->angleDelta().y()) / 120.0f,
                                   w->modifiers() & Qt::ControlModifier, w->modifiers() & Qt::ShiftModifier);
      break;
    }
    case QEvent::KeyPress: {
      auto* k = static_cast<QKeyEvent*>(e);
      const bool ctrl = k->modifiers() & Qt::ControlModifier, shift = k->modifiers() & Qt::ShiftModifier;
      if (ctrl && k->key() == Qt::Key_F) {
        open_find();
        return true;
      }
      if (k->key() == Qt::Key_F3) {
        changed = shift ? controller_->find_previous() : controller_->find_next();
        break;
      }
      if (k->key() == Qt::Key_Escape && find_open_) {
        find_open_ = false;
        changed = true;
        break;
      }
      if (imgui_text) break;  // typing into the find bar
      if (k->key() == Qt::Key_Escape) {
        changed = controller_->key(27, ctrl, shift);
      } else if (k->key() >= Qt::Key_A && k->key() <= Qt::Key_Z && !ctrl) {
        changed = controller_->key(static_cast<char>('A' + (k->key() - Qt::Key_A)), ctrl, shift);
      }
      if (changed) {
        request_frames();
        const Viewport& now = controller_->viewport();
        if (now.start_ns != before.start_ns || now.ns_per_px != before.ns_per_px) emit viewportChanged();
        return true;
      }
      break;
    }
    default: break;
  }
  if (changed) request_frames();
  if (controller_ && (controller_->viewport().start_ns != before.start_ns || controller_->viewport().ns_per_px != before.ns_per_px))
    emit viewportChanged();
  return QOpenGLWidget::event(e);
}

void TimelineWidget::paintGL() {
  if (!imgui_) return;
  QElapsedTimer paint_clock;
  paint_clock.start();
  ImGui::SetCurrentContext(imgui_);
  const double now = static_cast<double>(clock_.nsecsElapsed()) / 1e9;
  static thread_local double last = 0;
  bridge_->new_frame(this, now - last);
  last = now;
  const bool dark = palette().color(QPalette::Window).lightness() < 128;
  if (dark != dark_) {
    dark_ = dark;
    if (dark)
      ImGui::StyleColorsDark();
    else
      ImGui::StyleColorsLight();
  }
  ImGui_ImplOpenGL3_NewFrame();
  ImGui::NewFrame();
  if (controller_) {
    controller_->set_size(static_cast<float>(width()), static_cast<float>(height()));
    draw_timeline();
    draw_tooltip();
    if (find_open_) draw_find_bar();
  } else {
    ImDrawList* dl = ImGui::GetBackgroundDrawList();
    dl->AddText(ImVec2(20, 20), IM_COL32(200, 200, 200, 255), placeholder_.c_str());
  }
  ImGui::Render();
  last_cpu_ms_ = static_cast<double>(paint_clock.nsecsElapsed()) / 1e6;
  bridge_->end_frame();
  QOpenGLFunctions* gl = context()->functions();
  const float dpr = static_cast<float>(devicePixelRatioF());
  gl->glViewport(0, 0, static_cast<int>(static_cast<float>(width()) * dpr), static_cast<int>(static_cast<float>(height()) * dpr));
  const Theme th = theme_for(dark_);
  gl->glClearColor(th.clear[0], th.clear[1], th.clear[2], 1.0f);
  gl->glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  if (finish_frames_) gl->glFinish();
  last_paint_ms_ = static_cast<double>(paint_clock.nsecsElapsed()) / 1e6;
  ++frames_;
  if (controller_) emit profileFrameDrawn();
  // Trailing frames let ImGui settle (hover, focus) after input; then the widget sleeps.
  if (--pending_frames_ > 0) QTimer::singleShot(16, this, [this] { update(); });
}

namespace {

// Density colours: the hue of what the track holds, its intensity the busy fraction.
ImU32 density_colour(const Profile& p, const Track& t) {
  if (t.kind == TrackKind::Ranges) return IM_COL32(110, 145, 220, 255);
  if (t.kind == TrackKind::Steps) return IM_COL32(160, 160, 90, 255);
  switch (p.stream_tracks[static_cast<std::size_t>(t.index)].kind) {
    case StreamKind::Nccl: return IM_COL32(235, 125, 70, 255);
    case StreamKind::Copy: return IM_COL32(170, 120, 210, 255);
    default: return IM_COL32(70, 200, 170, 255);
  }
}

// Shaded columns, adjacent ones of the same (quantised) intensity merged into one rectangle: a
// zoomed-out 10M-event track is a few hundred rectangles, not one per column.
void draw_density(ImDrawList* dl, const std::vector<DensityColumn>& cols, float y0, float y1, ImU32 rgb) {
  static constexpr int kLevels = 16;
  auto level_of = [](float busy) { return std::clamp(static_cast<int>(std::ceil(busy * kLevels)), 1, kLevels); };
  for (std::size_t i = 0; i < cols.size();) {
    const int level = level_of(cols[i].busy);
    const float x0 = cols[i].x;
    float x1 = x0 + 1;
    std::size_t j = i + 1;
    while (j < cols.size() && cols[j].x == x1 && level_of(cols[j].busy) == level) x1 += 1, ++j;
    // A faint floor so that a column with one tiny kernel still shows.
    const auto alpha = static_cast<ImU32>(50 + (255 - 50) * level / kLevels);
    dl->AddRectFilled(ImVec2(kLabelWidth + x0, y0), ImVec2(kLabelWidth + x1, y1), (rgb & ~IM_COL32_A_MASK) | (alpha << IM_COL32_A_SHIFT));
    i = j;
  }
}

// Draws `text` at the left of the box [x0, x1] when it fits whole; else as much of it as fits
// followed by "..", when at least a few characters do; else nothing. The label is also skipped
// when it would overlap one already drawn on its row.
void draw_box_label(ImDrawList* dl, LabelRows& rows, ImFont* font, float fs, float x0, float x1, float y, ImU32 col,
                    std::string_view text) {
  constexpr float kPad = 3;
  if (text.empty() || x1 - x0 < 2 * kPad + fs) return;
  const float avail = x1 - x0 - 2 * kPad;
  const char* end = nullptr;
  const ImVec2 full = font->CalcTextSizeA(fs, FLT_MAX, 0, text.data(), text.data() + text.size(), &end);
  if (full.x <= avail) {
    if (rows.place(y, x0 + kPad, x0 + kPad + full.x)) dl->AddText(font, fs, ImVec2(x0 + kPad, y), col, text.data(), text.data() + text.size());
    return;
  }
  const float dots = font->CalcTextSizeA(fs, FLT_MAX, 0, "..").x;
  const char* cut = nullptr;
  const ImVec2 part = font->CalcTextSizeA(fs, avail - dots, 0, text.data(), text.data() + text.size(), &cut);
  if (cut - text.data() < 3) return;
  if (!rows.place(y, x0 + kPad, x0 + kPad + part.x + dots)) return;
  dl->AddText(font, fs, ImVec2(x0 + kPad, y), col, text.data(), cut);
  dl->AddText(font, fs, ImVec2(x0 + kPad + part.x, y), col, "..");
}

}  // namespace

void TimelineWidget::draw_timeline() {
  TimelineController& c = *controller_;
  const Profile& p = *profile_;
  c.build_frame(frame_);
  ImDrawList* dl = ImGui::GetBackgroundDrawList();
  ImFont* font = ImGui::GetFont();
  const float fs = ImGui::GetFontSize();
  const float W = static_cast<float>(width()), H = static_cast<float>(height());
  const Viewport& vp = c.viewport();
  const Theme th = theme_for(dark_);
  LabelRows labels;

  // Ticks at round times counted from the origin, so linked timelines share their tick marks.
  const double step = nice_step(vp.ns_per_px * 110);
  const double origin = static_cast<double>(time_origin_.value_or(p.time_begin));
  const double first = origin + std::ceil((vp.start_ns - origin) / step) * step;

  // The track area, clipped below the ruler: scrolled tracks never draw over it.
  dl->PushClipRect(ImVec2(0, kRulerHeight), ImVec2(W, H), false);
  for (double t = first; t < vp.end_ns(); t += step) {
    const float x = static_cast<float>(c.x_of(t));
    dl->AddLine(ImVec2(x, kRulerHeight), ImVec2(x, H), th.grid);
  }
  // Outside the profile's time span: dimmed.
  const float x_begin = static_cast<float>(c.x_of(static_cast<double>(p.time_begin)));
  const float x_end = static_cast<float>(c.x_of(static_cast<double>(p.time_end)));
  if (x_begin > kLabelWidth) dl->AddRectFilled(ImVec2(kLabelWidth, kRulerHeight), ImVec2(std::min(x_begin, W), H), th.outside);
  if (x_end < W) dl->AddRectFilled(ImVec2(std::max(x_end, kLabelWidth), kRulerHeight), ImVec2(W, H), th.outside);

  int last_rank = -1;
  for (const TrackDraw& d : frame_.tracks) {
    const Track& t = c.tracks()[static_cast<std::size_t>(d.track)];
    const float y0 = d.y, y1 = d.y + d.height;
    const float text_y = y0 + 3;
    if (t.pinned) dl->AddRectFilled(ImVec2(0, y0), ImVec2(W, y1), th.pinned_bg);
    if (t.rank % 2) dl->AddRectFilled(ImVec2(kLabelWidth, y0), ImVec2(W, y1), th.stripe);
    if (t.rank != last_rank) dl->AddLine(ImVec2(0, y0), ImVec2(W, y0), th.rank_line);
    last_rank = t.rank;
    if (t.kind == TrackKind::Memory || t.kind == TrackKind::Counter) {
      const double scale = d.bar_max > 0 ? (d.height - 4) / static_cast<double>(d.bar_max) : 0;
      const float counter_end = static_cast<float>(c.x_of(static_cast<double>(p.time_end)));
      for (const CounterBar& b : d.bars) {
        const float x = kLabelWidth + b.x;
        if (x > counter_end) break;  // the counter is not known past the profile's end
        const float top = y1 - 2 - static_cast<float>(static_cast<double>(b.max) * scale);
        const float bottom = y1 - 2 - static_cast<float>(static_cast<double>(b.min) * scale);
        dl->AddRectFilled(ImVec2(x, y1 - 2), ImVec2(x + 1, bottom), IM_COL32(60, 120, 170, 255));
        dl->AddRectFilled(ImVec2(x, bottom), ImVec2(x + 1, std::min(top, bottom - 1)), IM_COL32(120, 190, 240, 255));
      }
      std::string peak;
      if (t.kind == TrackKind::Memory) {
        peak = "max " + format_bytes(static_cast<double>(d.bar_max));
      } else {
        const OverlayCounter& oc = c.overlay_counters()[static_cast<std::size_t>(t.index)];
        char buf[64];
        std::snprintf(buf, sizeof buf, "max %.4g %s", static_cast<double>(d.bar_max) / oc.value_scale, oc.unit.c_str());
        peak = buf;
      }
      if (!t.collapsed) {  // on a backing box: the bars under it may be any colour
        const ImVec2 at(W - 150 - kScrollbarWidth, y0 + 2), size = ImGui::CalcTextSize(peak.c_str());
        dl->AddRectFilled(ImVec2(at.x - 3, at.y), ImVec2(at.x + size.x + 3, at.y + size.y), th.label_bg, 3);
        dl->AddText(at, th.ruler_text, peak.c_str());
      }
    } else {
      const bool shaded = c.shaded(d.track);
      if (shaded) draw_density(dl, d.density, y0 + 2, y1 - 1, density_colour(p, t));
      for (const SpanItem& s : d.spans) {
        const float x0 = kLabelWidth + s.x0, x1 = kLabelWidth + std::max(s.x1, s.x0 + 1.0f);
        const float bx0 = std::max(x0, kLabelWidth);
        if (s.count > 1) {
          if (shaded) continue;  // drawn as density above
          // Tracks without a coverage index (marker lanes) keep the folded box with its count.
          const ImU32 fold = t.kind == TrackKind::Markers ? IM_COL32(200, 110, 50, 200) : IM_COL32(95, 95, 105, 255);
          dl->AddRectFilled(ImVec2(bx0, y0 + 2), ImVec2(x1, y1 - 1), fold);
          if (!t.collapsed)
            draw_box_label(dl, labels, font, fs, bx0, std::min(x1, W), text_y, IM_COL32(230, 230, 230, 255), std::to_string(s.count));
          continue;
        }
        std::string_view name;
        ImU32 col;
        ImU32 text_col = IM_COL32(15, 15, 15, 255);
        static thread_local std::string scratch;
        if (t.kind == TrackKind::Stream) {
          const KernelEvent& e = p.stream_tracks[static_cast<std::size_t>(t.index)].events[s.first];
          col = kernel_colour(e);
          name = p.strings[e.name];
        } else if (t.kind == TrackKind::Ranges) {
          const RangeEvent& e = p.range_tracks[static_cast<std::size_t>(t.index)].events[s.first];
          col = range_colour(e);
          name = p.strings[e.name];
        } else if (t.kind == TrackKind::Markers) {
          const MarkerSpan& ms = c.marker_lanes()[static_cast<std::size_t>(t.index)].spans[s.first];
          const OverlayMarker& m = c.markers()[ms.marker];
          col = static_cast<int>(ms.marker) == c.hovered_marker() ? IM_COL32(255, 170, 90, 255) : IM_COL32(235, 135, 55, 255);
          scratch = m.label.empty() ? format_ns(static_cast<double>(m.end - m.start)) : m.label;
          name = scratch;
        } else {
          col = s.first % 2 ? IM_COL32(110, 110, 70, 255) : IM_COL32(140, 140, 80, 255);
          scratch = "step " + std::to_string(p.ranks[static_cast<std::size_t>(t.index)].steps[s.first].number);
          name = scratch;
          text_col = IM_COL32(240, 240, 220, 255);
        }
        dl->AddRectFilled(ImVec2(bx0, y0 + 2), ImVec2(x1, y1 - 1), col);
        if (!t.collapsed) draw_box_label(dl, labels, font, fs, bx0, std::min(x1, W), text_y, text_col, name);
      }
    }
    // Label column.
    dl->AddRectFilled(ImVec2(0, y0), ImVec2(kLabelWidth, y1), t.pinned ? th.label_pinned_bg : th.label_bg);
    if (!t.collapsed) {
      // "+" on a folded group's head (a click opens it), "-" on every row that a click folds.
      const bool opens = (t.group_size > 1 && !t.group_open) || (t.rank_head && !t.rank_open);
      std::string label = std::string(t.pinned ? "* " : "") + (opens ? "+ " : "- ") + t.label;
      if (t.rank_head && !t.rank_open) label += " (rank folded)";
      float right = kLabelWidth - 2;
      if (t.kind == TrackKind::Markers) {
        // "top"/"all" toggles the top-N limit, "x" hides the lanes (M or View > Analysis markers
        // brings them back).
        const std::size_t shown = c.marker_lanes()[static_cast<std::size_t>(t.index)].spans.size();
        label += " " + std::to_string(shown);
        const float all_x = kLabelWidth - kMarkerHideButton - kMarkerAllButton, hide_x = kLabelWidth - kMarkerHideButton;
        const bool limited = c.shown_markers().size() < c.markers().size();
        const char* all_text = c.show_all_markers() ? "top" : (limited ? "all" : "");
        if (*all_text) {
          dl->AddRectFilled(ImVec2(all_x + 2, y0 + 2), ImVec2(hide_x - 2, y1 - 2), th.pinned_bg, 3);
          dl->AddText(ImVec2(all_x + 5, text_y), th.label_text, all_text);
        }
        dl->AddRectFilled(ImVec2(hide_x + 1, y0 + 2), ImVec2(kLabelWidth - 2, y1 - 2), th.pinned_bg, 3);
        dl->AddText(ImVec2(hide_x + 4, text_y), th.label_text, "x");
        right = all_x;
      }
      const ImVec4 label_clip(0, y0, right, y1);
      label = elide_middle(label, right - 6, [&](const std::string& t) { return font->CalcTextSizeA(fs, FLT_MAX, 0, t.c_str()).x; });
      dl->AddText(font, fs, ImVec2(4, text_y), th.label_text, label.c_str(), nullptr, 0, &label_clip);
    }
  }

  // Range selection band (its duration goes in the ruler, below).
  std::optional<std::pair<double, double>> band;
  if (c.box_active() && !c.range_selection()) {
    band = c.box_times();
    auto [a, b] = *band;
    const float xa = static_cast<float>(std::max<double>(kLabelWidth, c.x_of(std::min(a, b))));
    const float xb = static_cast<float>(std::min<double>(W, c.x_of(std::max(a, b))));
    if (xb > xa) dl->AddRectFilled(ImVec2(xa, kRulerHeight), ImVec2(xb, H), IM_COL32(255, 255, 120, 40));
  } else if (auto r = c.range_selection()) {
    band = std::make_pair(static_cast<double>(r->first), static_cast<double>(r->second));
    const float xa = static_cast<float>(std::max<double>(kLabelWidth, c.x_of(band->first)));
    const float xb = static_cast<float>(std::min<double>(W, c.x_of(band->second)));
    if (xb > xa) dl->AddRectFilled(ImVec2(xa, kRulerHeight), ImVec2(xb, H), IM_COL32(255, 255, 120, 30));
  }
  dl->PopClipRect();

  // Selection outline and collective arrows, clipped to the event area (not over the labels).
  dl->PushClipRect(ImVec2(kLabelWidth, kRulerHeight), ImVec2(W, H), false);
  if (c.selected().valid()) {
    const EventInfo e = event_info(p, c.selected());
    auto centre_of = [&](const EventRef& ref, ImVec2& out) {
      for (std::size_t i = 0; i < c.tracks().size(); ++i) {
        const Track& t = c.tracks()[i];
        if (t.kind != ref.kind || t.index != ref.track) continue;
        const EventInfo ei = event_info(p, ref);
        const float y = c.track_y(static_cast<std::int32_t>(i));
        out = ImVec2(static_cast<float>(c.x_of(static_cast<double>(ei.start))), y + kRowHeight / 2);
        return true;
      }
      return false;
    };
    ImVec2 a;
    if (centre_of(c.selected(), a)) {
      const float xa = a.x, xb = static_cast<float>(c.x_of(static_cast<double>(e.end)));
      dl->AddRect(ImVec2(xa - 1, a.y - kRowHeight / 2 + 1), ImVec2(std::max(xb, xa + 2) + 1, a.y + kRowHeight / 2),
                  IM_COL32(255, 255, 0, 255), 0, 0, 2);
      for (const EventRef& peer : c.peers()) {
        ImVec2 b;
        if (!centre_of(peer, b)) continue;
        dl->AddLine(a, b, IM_COL32(255, 220, 60, 220), 1.5f);
        const float dir = b.y > a.y ? -1.0f : 1.0f;
        dl->AddTriangleFilled(b, ImVec2(b.x - 5, b.y + dir * 8), ImVec2(b.x + 5, b.y + dir * 8), IM_COL32(255, 220, 60, 255));
      }
    }
  }
  dl->PopClipRect();

  // Ruler, on top. The selection's duration first (the user's own label wins a collision), then
  // the tick labels that fit beside it. Without an explicit origin the ruler's 0 is the profile's
  // start and ticks in the margin before it carry no (negative) label.
  dl->AddRectFilled(ImVec2(0, 0), ImVec2(W, kRulerHeight), th.ruler);
  LabelRows ruler;
  if (band) {
    const std::string text = format_ns(std::abs(band->second - band->first));
    const float x = static_cast<float>(std::max<double>(kLabelWidth, c.x_of(std::min(band->first, band->second)))) + 3;
    const float w = ImGui::CalcTextSize(text.c_str()).x;
    ruler.place(0, x - 3, x + w + 6);
    dl->AddRectFilled(ImVec2(x - 3, 1), ImVec2(x + w + 3, kRulerHeight - 1), IM_COL32(120, 110, 30, 255), 3);
    dl->AddText(ImVec2(x, 3), th.band_text, text.c_str());
  }
  std::optional<double> base;  // on a deep zoom: the tick written in full, the others as offsets from it
  for (double t = first; t < vp.end_ns(); t += step) {
    const float x = static_cast<float>(c.x_of(t));
    if (x < kLabelWidth) continue;
    dl->AddLine(ImVec2(x, kRulerHeight - 6), ImVec2(x, kRulerHeight), th.ruler_text);
    if (!time_origin_ && t < origin - step * 1e-6) continue;
    const double rel = t - origin;
    const bool full = tick_needs_base(rel, step) && !base;
    const std::string label = full ? format_compound(rel, step)
                              : base ? "+" + format_tick(rel - *base, step)
                                     : format_tick(rel, step);
    const float w = ImGui::CalcTextSize(label.c_str()).x;
    if (x + w + 3 <= W && ruler.place(0, x, x + w + 6)) {
      dl->AddText(ImVec2(x + 3, 3), th.ruler_text, label.c_str());
      if (full) base = rel;
    }
  }
  dl->AddRectFilled(ImVec2(0, 0), ImVec2(kLabelWidth, kRulerHeight), th.ruler);

  // Vertical scrollbar.
  if (const Scrollbar sb = c.scrollbar(); sb.visible) {
    dl->AddRectFilled(ImVec2(sb.x0, sb.y0), ImVec2(sb.x1, sb.y1), th.label_bg);
    dl->AddRectFilled(ImVec2(sb.x0 + 2, sb.thumb_y0 + 1), ImVec2(sb.x1 - 2, sb.thumb_y1 - 1), IM_COL32(140, 140, 150, 220), 3);
  }
}

void TimelineWidget::draw_tooltip() {
  const EventRef h = controller_->hovered();
  if (h.valid()) {
    ImGui::BeginTooltip();
    ImGui::TextUnformatted(describe(*profile_, h).toUtf8().constData());
    ImGui::EndTooltip();
    return;
  }
  const int m = controller_->hovered_marker();
  if (m < 0) return;
  const OverlayMarker& mk = controller_->markers()[static_cast<std::size_t>(m)];
  ImGui::BeginTooltip();
  if (!mk.label.empty()) ImGui::TextUnformatted(mk.label.c_str());
  ImGui::Text("duration  %s", format_ns(static_cast<double>(mk.end - mk.start)).c_str());
  ImGui::Text("start     %s", format_since(mk.start, profile_->time_begin).c_str());
  ImGui::Text("rank      %s", mk.rank < 0 ? "all" : std::to_string(mk.rank).c_str());
  ImGui::EndTooltip();
}

void TimelineWidget::draw_find_bar() {
  TimelineController& c = *controller_;
  ImGui::SetNextWindowPos(ImVec2(static_cast<float>(width()) - 430, kRulerHeight + 6), ImGuiCond_Always);
  ImGui::SetNextWindowSize(ImVec2(420, 0), ImGuiCond_Always);
  ImGui::Begin("Find", &find_open_, ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_NoMove);
  if (find_focus_) {
    ImGui::SetKeyboardFocusHere();
    find_focus_ = false;
  }
  ImGui::SetNextItemWidth(220);
  const bool enter = ImGui::InputText("##find", find_buffer_, sizeof find_buffer_, ImGuiInputTextFlags_EnterReturnsTrue);
  c.set_find_query(find_buffer_);
  if (enter) {
    if (ImGui::GetIO().KeyShift)
      c.find_previous();
    else
      c.find_next();
    ImGui::SetKeyboardFocusHere(-1);
  }
  ImGui::SameLine();
  if (ImGui::ArrowButton("##prev", ImGuiDir_Up)) c.find_previous();
  ImGui::SameLine();
  if (ImGui::ArrowButton("##next", ImGuiDir_Down)) c.find_next();
  ImGui::SameLine();
  ImGui::Text("%d / %zu", c.find_cursor() + 1, c.find_results().size());
  // Where the current match starts, counted like the ruler from the profile's start.
  if (c.find_cursor() >= 0 && static_cast<std::size_t>(c.find_cursor()) < c.find_results().size()) {
    const EventInfo e = event_info(*profile_, c.find_results()[static_cast<std::size_t>(c.find_cursor())]);
    ImGui::SameLine();
    ImGui::Text("at %s", format_since(e.start, profile_->time_begin).c_str());
  }
  ImGui::End();
}

QString TimelineWidget::describe(const Profile& p, const EventRef& ref) {
  if (!ref.valid()) return {};
  const EventInfo e = event_info(p, ref);
  QStringList lines;
  lines << QString::fromUtf8(p.strings[e.name].data(), static_cast<qsizetype>(p.strings[e.name].size()));
  lines << QString("duration  %1").arg(QString::fromStdString(format_ns(static_cast<double>(e.end - e.start))));
  lines << QString("start     %1").arg(QString::fromStdString(format_since(e.start, p.time_begin)));
  if (e.module >= 0) {
    const auto& m = p.modules[static_cast<std::size_t>(e.module)];
    QString module = QString::fromStdString(m.fqn.empty() ? "(root)" : m.fqn);
    if (!m.class_name.empty()) module += QString(" (%1)").arg(QString::fromStdString(m.class_name));
    lines << "module    " + module;
  }
  if (ref.kind == TrackKind::Stream) {
    const StreamTrack& st = p.stream_tracks[static_cast<std::size_t>(ref.track)];
    const KernelEvent& k = st.events[ref.index];
    lines << QString("stream    rank %1, %2 stream %3").arg(st.rank).arg(QString::fromStdString(std::string(to_string(st.kind)))).arg(st.native_id);
    lines << QString("category  %1").arg(QString::fromStdString(std::string(to_string(k.category))));
    if (const CollectiveEvent* col = collective_of(p, k.id)) {
      if (col->bytes > 0) lines << QString("bytes     %1").arg(QString::fromStdString(format_bytes(static_cast<double>(col->bytes))));
      lines << QString("collective %1, group %2, seq %3")
                   .arg(QString::fromStdString(std::string(to_string(col->type))))
                   .arg(col->process_group)
                   .arg(col->sequence);
    }
  } else {
    const RangeTrack& rt = p.range_tracks[static_cast<std::size_t>(ref.track)];
    const RangeEvent& r = rt.events[ref.index];
    lines << QString("range     %1, %2, rank %3, depth %4")
                 .arg(QString::fromStdString(std::string(to_string(r.kind))), QString::fromStdString(std::string(to_string(r.phase))))
                 .arg(rt.rank)
                 .arg(rt.depth);
  }
  lines << QString("id        %1").arg(e.id);
  return lines.join('\n');
}

}  // namespace ss::timeline
