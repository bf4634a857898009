// Time from a "keep unsharded" toggle in the Unshard panel to updated numbers and timeline on
// screen: the model's setData (session change + compile_step + simulate + labels + the simulated
// step's profile for the timeline) and the repaint that follows, until the timeline has drawn a
// frame of the new simulation. Also the timeline profile's build alone (write_simulated_profile +
// load_profile). Issue 7's budget is 50 ms. The timeline needs OpenGL, so run it on an X server:
//   xvfb-run -a -s "-screen 0 1600x1000x24" build-gui2/bench/views/bench_unshard_toggle [PROFILE] [TOGGLES]
//   ... bench_unshard_toggle MODEL.json TOGGLES WORLD [PLAN.json]   (a model description, e.g. with
//   the plan's parallelism and micro-batches; a large step's timeline is built in the background)
#include <QApplication>
#include <QElapsedTimer>
#include <QFile>
#include <algorithm>
#include <cstdio>
#include <vector>

#include "views/timeline/timeline_widget.h"
#include "views/unshard/simulated_timeline.h"
#include "views/unshard/unshard_panel.h"
#include "views/unshard/unshard_session.h"
#include "views/unshard/unshard_unit_model.h"

#ifndef SS_SOURCE_DIR
#define SS_SOURCE_DIR "."
#endif

namespace {
void report(const char* what, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  std::printf("%s: median %.3f ms, p99 %.3f ms, max %.3f ms\n", what, ms[ms.size() / 2],
              ms[std::min(ms.size() - 1, ms.size() * 99 / 100)], ms.back());
}
}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  const QString path = argc > 1 ? QString::fromLocal8Bit(argv[1]) : QStringLiteral(SS_SOURCE_DIR "/resources/samples/synthetic-fsdp-4rank.ssdb");
  const int toggles = argc > 2 ? std::max(1, std::atoi(argv[2])) : 400;
  ss::unshard::UnshardPanel panel;
  panel.resize(1400, 900);
  panel.show();
  const bool description = path.endsWith(QStringLiteral(".json"));
  const bool opened = description ? panel.open_model_description(path, argc > 3 ? std::atoi(argv[3]) : 0) : panel.open_profile(path);
  if (!opened) {
    std::fprintf(stderr, "bench_unshard_toggle: %s\n", panel.last_error().toLocal8Bit().constData());
    return 1;
  }
  if (description && argc > 4) {
    if (!panel.apply_plan_file(QString::fromLocal8Bit(argv[4]))) {
      std::fprintf(stderr, "bench_unshard_toggle: plan %s: %s\n", argv[4], panel.last_error().toLocal8Bit().constData());
      return 1;
    }
    panel.wait_for_timeline();
  }
  auto* tl = panel.timeline();
  long frames = 0;
  long frames_at_set = -1;  // the frame count when the timeline got the new profile
  QObject::connect(tl, &ss::timeline::TimelineWidget::profileFrameDrawn, [&] { ++frames; });
  QObject::connect(&panel, &ss::unshard::UnshardPanel::timelineUpdated, [&] { frames_at_set = frames; });
  for (int i = 0; i < 20; ++i) QApplication::processEvents();  // first frames, GL set-up
  auto* s = panel.session();
  auto* m = panel.model();
  std::vector<int> units;
  for (int u = 0; u < s->unit_count(); ++u)
    if (!s->unit_fixed(u)) units.push_back(u);
  if (units.empty()) return 1;
  std::vector<double> change_ms, numbers_ms, frame_ms;
  int no_frame = 0;
  QElapsedTimer t;
  for (int i = 0; i < toggles; ++i) {
    const int u = units[static_cast<std::size_t>(i) % units.size()];
    const bool keep = !s->state().keep[static_cast<std::size_t>(u)];
    frames_at_set = -1;
    t.start();
    m->setData(m->index_of_unit(u), keep ? Qt::Checked : Qt::Unchecked, Qt::CheckStateRole);
    change_ms.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
    QApplication::processEvents();  // the labels and the tree repaint
    numbers_ms.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
    // The timeline draws on its next update; wait for the first frame of the new profile (set at
    // once, or when a background build lands).
    const auto drawn = [&] { return frames_at_set >= 0 && frames > frames_at_set; };
    while (!drawn() && t.elapsed() < 1000) QApplication::processEvents(QEventLoop::AllEvents, 5);
    if (!drawn()) ++no_frame;
    frame_ms.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
    // The widget's trailing frames (it draws a few so ImGui settles), not timed: until 20 ms pass
    // without a frame.
    for (long seen = -1; seen != frames;) {
      seen = frames;
      QElapsedTimer idle;
      idle.start();
      while (idle.elapsed() < 20) QApplication::processEvents(QEventLoop::AllEvents, 5);
    }
  }
  // Where the time goes: the same toggles with the timeline widget hidden (its profile is still
  // built and set), so no OpenGL frame is drawn or composed into the window.
  panel.timeline()->hide();
  for (int i = 0; i < 20; ++i) QApplication::processEvents();
  std::vector<double> hidden_ms;
  for (int i = 0; i < toggles; ++i) {
    const int u = units[static_cast<std::size_t>(i) % units.size()];
    const bool keep = !s->state().keep[static_cast<std::size_t>(u)];
    t.start();
    m->setData(m->index_of_unit(u), keep ? Qt::Checked : Qt::Unchecked, Qt::CheckStateRole);
    QApplication::processEvents();
    panel.wait_for_timeline();
    hidden_ms.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
  }
  std::vector<double> build_ms;
  const std::string scratch = ss::unshard::timeline_scratch_path();
  for (int i = 0; i < 200; ++i) {
    t.start();
    auto p = ss::unshard::simulated_timeline_profile(s->inputs(), s->prediction().step, s->prediction().result, scratch);
    build_ms.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
  }
  // The timeline widget's own work on a new profile: its controller (tracks, counter indexes).
  std::vector<double> controller_ms;
  const auto shown = panel.timeline_profile();
  for (int i = 0; i < 200; ++i) {
    t.start();
    ss::timeline::TimelineController c(*shown);
    c.set_size(1200, 400);
    c.fit_all();
    controller_ms.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
  }
  // The session's change alone (compile_step + simulate + per-unit exposed all-gather).
  std::vector<double> session_ms;
  for (int i = 0; i < 200; ++i) {
    const int u = units[static_cast<std::size_t>(i) % units.size()];
    t.start();
    s->set_keep(u, !s->state().keep[static_cast<std::size_t>(u)]);
    session_ms.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
  }
  std::printf("profile %s, %d FSDP units, %d toggles, %zu simulated ops\n", path.toLocal8Bit().constData(), s->unit_count(),
              toggles, s->prediction().result.ops.size());
  report("setData alone (re-simulate, labels, timeline profile built and set; no repaint)", change_ms);
  report("toggle -> numbers (+ timeline profile set), repaint", numbers_ms);
  report("toggle -> numbers and timeline frame drawn", frame_ms);
  report("same, timeline widget hidden (no GL frame)", hidden_ms);
  report("timeline profile build (write_simulated_profile + load_profile)", build_ms);
  report("timeline controller for the new profile (TimelineController, fit_all)", controller_ms);
  report("session change alone (compile_step + simulate)", session_ms);
  if (no_frame) std::printf("WARNING: %d toggles drew no timeline frame within 1 s (no OpenGL?)\n", no_frame);
  return 0;
}
