#include "views/timeline/timeline_widget.h"

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
#include <cstdio>

#include "views/timeline/imgui_qt_bridge.h"

namespace ss::timeline {

namespace {

std::string format_ns(double ns) {
  char buf[64];
  const double a = std::abs(ns);
  if (a >= 1e9)
    std::snprintf(buf, sizeof buf, "%.3f s", ns / 1e9);
  else if (a >= 1e6)
    std::snprintf(buf, sizeof buf, "%.3f ms", ns / 1e6);
  else if (a >= 1e3)
    std::snprintf(buf, sizeof buf, "%.2f us", ns / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.0f ns", ns);
  return buf;
}

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

// A readable tick step: 1, 2 or 5 times a power of ten, about `target` ns.
double nice_step(double target) {
  const double p = std::pow(10.0, std::floor(std::log10(std::max(target, 1e-3))));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (p * m >= target) return p * m;
  return p * 10;
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
    controller_->on_selection_changed = [this](const EventRef& ref) {
      emit selectionChanged(ref);
      if (ref.valid()) {
        const EventInfo info = event_info(*profile_, ref);
        if (info.module >= 0) emit moduleSelected(info.module);
      }
    };
    controller_->on_aggregate = [this](const Aggregate&) { emit aggregateReady(); };
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
    dl->AddText(ImVec2(20, 20), IM_COL32(200, 200, 200, 255), "Open a profile (File > Open, or drop a .ssdb file here)");
  }
  ImGui::Render();
  bridge_->end_frame();
  QOpenGLFunctions* gl = context()->functions();
  const float dpr = static_cast<float>(devicePixelRatioF());
  gl->glViewport(0, 0, static_cast<int>(static_cast<float>(width()) * dpr), static_cast<int>(static_cast<float>(height()) * dpr));
  const Theme th = theme_for(dark_);
  gl->glClearColor(th.clear[0], th.clear[1], th.clear[2], 1.0f);
  gl->glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  ++frames_;
  if (controller_) emit profileFrameDrawn();
  // Trailing frames let ImGui settle (hover, focus) after input; then the widget sleeps.
  if (--pending_frames_ > 0) QTimer::singleShot(16, this, [this] { update(); });
}

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

  // Ruler.
  dl->AddRectFilled(ImVec2(0, 0), ImVec2(W, kRulerHeight), th.ruler);
  // Ticks at round times counted from the origin, so linked timelines share their tick marks.
  const double step = nice_step(vp.ns_per_px * 110);
  const double origin = static_cast<double>(time_origin_.value_or(p.time_begin));
  const double first = origin + std::ceil((vp.start_ns - origin) / step) * step;
  for (double t = first; t < vp.end_ns(); t += step) {
    const float x = static_cast<float>(c.x_of(t));
    dl->AddLine(ImVec2(x, kRulerHeight - 6), ImVec2(x, H), th.grid);
    const std::string label = format_ns(t - origin);
    dl->AddText(ImVec2(x + 3, 3), th.ruler_text, label.c_str());
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
    if (t.pinned) dl->AddRectFilled(ImVec2(0, y0), ImVec2(W, y1), th.pinned_bg);
    if (t.rank % 2) dl->AddRectFilled(ImVec2(kLabelWidth, y0), ImVec2(W, y1), th.stripe);
    if (t.rank != last_rank) dl->AddLine(ImVec2(0, y0), ImVec2(W, y0), th.rank_line);
    last_rank = t.rank;
    const ImVec4 clip(kLabelWidth, y0, W, y1);
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
      if (!t.collapsed) dl->AddText(ImVec2(W - 150, y0 + 2), th.ruler_text, peak.c_str());
    } else {
      for (const SpanItem& s : d.spans) {
        const float x0 = kLabelWidth + s.x0, x1 = kLabelWidth + std::max(s.x1, s.x0 + 1.0f);
        const float bx0 = std::max(x0, kLabelWidth);
        if (s.count > 1) {
          dl->AddRectFilled(ImVec2(bx0, y0 + 2), ImVec2(x1, y1 - 1), IM_COL32(95, 95, 105, 255));
          if (x1 - bx0 > 24 && !t.collapsed) {
            const std::string n = std::to_string(s.count);
            dl->AddText(font, fs, ImVec2(bx0 + 3, y0 + 3), IM_COL32(230, 230, 230, 255), n.c_str(), nullptr, 0, &clip);
          }
          continue;
        }
        std::string_view name;
        ImU32 col;
        if (t.kind == TrackKind::Stream) {
          const KernelEvent& e = p.stream_tracks[static_cast<std::size_t>(t.index)].events[s.first];
          col = kernel_colour(e);
          name = p.strings[e.name];
        } else if (t.kind == TrackKind::Ranges) {
          const RangeEvent& e = p.range_tracks[static_cast<std::size_t>(t.index)].events[s.first];
          col = range_colour(e);
          name = p.strings[e.name];
        } else {
          col = s.first % 2 ? IM_COL32(110, 110, 70, 255) : IM_COL32(140, 140, 80, 255);
          static thread_local std::string step_name;
          step_name = "step " + std::to_string(p.ranks[static_cast<std::size_t>(t.index)].steps[s.first].number);
          name = step_name;
        }
        dl->AddRectFilled(ImVec2(bx0, y0 + 2), ImVec2(x1, y1 - 1), col);
        if (x1 - bx0 > 30 && !t.collapsed) {
          const ImVec4 box_clip(bx0, y0, std::min(x1 - 2, W), y1);
          dl->AddText(font, fs, ImVec2(bx0 + 3, y0 + 3), IM_COL32(15, 15, 15, 255), name.data(), name.data() + name.size(), 0,
                      &box_clip);
        }
      }
    }
    // Label column.
    dl->AddRectFilled(ImVec2(0, y0), ImVec2(kLabelWidth, y1), t.pinned ? th.label_pinned_bg : th.label_bg);
    if (!t.collapsed) {
      const std::string label = std::string(t.pinned ? "* " : "") + "- " + t.label;
      const ImVec4 label_clip(0, y0, kLabelWidth - 2, y1);
      dl->AddText(font, fs, ImVec2(4, y0 + 3), th.label_text, label.c_str(), nullptr, 0, &label_clip);
    }
  }

  draw_markers(frame_);

  // Range selection band and the live box.
  auto band = [&](double ta, double tb, ImU32 fill) {
    const float xa = static_cast<float>(std::max<double>(kLabelWidth, c.x_of(std::min(ta, tb))));
    const float xb = static_cast<float>(std::min<double>(W, c.x_of(std::max(ta, tb))));
    if (xb > xa) dl->AddRectFilled(ImVec2(xa, kRulerHeight), ImVec2(xb, H), fill);
    const std::string label = format_ns(std::abs(tb - ta));
    dl->AddText(ImVec2(xa + 4, kRulerHeight + 2), th.band_text, label.c_str());
  };
  if (c.box_active() && !c.range_selection()) {
    auto [a, b] = c.box_times();
    band(a, b, IM_COL32(255, 255, 120, 40));
  } else if (auto r = c.range_selection()) {
    band(static_cast<double>(r->first), static_cast<double>(r->second), IM_COL32(255, 255, 120, 30));
  }

  // Selection outline and collective arrows.
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
}

void TimelineWidget::draw_tooltip() {
  const EventRef h = controller_->hovered();
  if (!h.valid()) return;
  ImGui::BeginTooltip();
  ImGui::TextUnformatted(describe(*profile_, h).toUtf8().constData());
  ImGui::EndTooltip();
}

// An analysis's markers: a translucent band over the rows of the marker's rank (every rank's
// rows for -1) with its label at the top, so a finding stays visible while the user looks around.
void TimelineWidget::draw_markers(const Frame& frame) {
  const TimelineController& c = *controller_;
  if (c.markers().empty()) return;
  ImDrawList* dl = ImGui::GetBackgroundDrawList();
  const float W = static_cast<float>(width());
  const float line = ImGui::GetFontSize() + 1;
  std::vector<std::pair<float, float>> labels;  // (y, x where the label ends) drawn so far
  for (const OverlayMarker& m : c.markers()) {
    const float xa = static_cast<float>(std::max<double>(kLabelWidth, c.x_of(static_cast<double>(m.start))));
    const float xb = static_cast<float>(std::min<double>(W, c.x_of(static_cast<double>(std::max(m.end, m.start)))));
    if (xb < kLabelWidth || xa > W) continue;
    float top = -1, bottom = -1;
    for (const TrackDraw& d : frame.tracks) {
      if (m.rank >= 0 && c.tracks()[static_cast<std::size_t>(d.track)].rank != m.rank) continue;
      top = top < 0 ? d.y : std::min(top, d.y);
      bottom = std::max(bottom, d.y + d.height);
    }
    if (top < 0) continue;  // the rank's rows are scrolled out of view
    const float right = std::max(xb, xa + 2.0f);
    dl->AddRectFilled(ImVec2(xa, top), ImVec2(right, bottom), IM_COL32(255, 140, 60, 45));
    dl->AddRect(ImVec2(xa, top), ImVec2(right, bottom), IM_COL32(255, 140, 60, 200));
    if (m.label.empty()) continue;
    // Overlapping markers: each label goes one line lower until it clears the labels before it.
    float y = top + 1;
    const float w = ImGui::CalcTextSize(m.label.c_str()).x;
    while (std::any_of(labels.begin(), labels.end(), [&](const auto& l) { return l.first == y && l.second > xa; })) y += line;
    labels.emplace_back(y, xa + 3 + w);
    dl->AddText(ImVec2(xa + 3, y), IM_COL32(255, 190, 120, 255), m.label.c_str());
  }
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
  ImGui::End();
}

QString TimelineWidget::describe(const Profile& p, const EventRef& ref) {
  if (!ref.valid()) return {};
  const EventInfo e = event_info(p, ref);
  QStringList lines;
  lines << QString::fromUtf8(p.strings[e.name].data(), static_cast<qsizetype>(p.strings[e.name].size()));
  lines << QString("duration  %1").arg(QString::fromStdString(format_ns(static_cast<double>(e.end - e.start))));
  lines << QString("start     %1").arg(QString::fromStdString(format_ns(static_cast<double>(e.start - p.time_begin))));
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
