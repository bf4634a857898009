#include "app/gui/time_frames.h"

#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QImage>
#include <QPalette>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "storage/profile_reader.h"
#include "views/timeline/timeline_widget.h"

namespace ss::gui {

namespace {

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
}

void measure(timeline::TimelineWidget* tw, const Profile& p, int frames) {
  timeline::TimelineController& c = *tw->controller();
  std::printf("timeline %dx%d px, %zu tracks\n", tw->width(), tw->height(), c.tracks().size());
  std::printf("  %-16s %9s %9s %9s %11s %11s %12s\n", "visible span", "p50 ms", "p99 ms", "max ms", "CPU p50 ms", "CPU p99 ms",
              "items/frame");
  std::mt19937_64 rng(5);
  const double whole = static_cast<double>(p.time_end - p.time_begin);
  std::vector<double> all, all_cpu;
  for (int level = 0; level <= 5; ++level) {
    const double span = whole / std::pow(10.0, level);
    std::vector<double> times, cpu;
    std::size_t items = 0;
    for (int f = 0; f < frames; ++f) {
      const double start = static_cast<double>(p.time_begin) +
                           (level == 0 ? 0 : static_cast<double>(rng() % 1000000) / 1e6 * (whole - span));
      if (level == 0)
        c.fit_all();
      else
        c.viewport().fit(start, start + span);
      c.set_scroll_y(static_cast<float>(f % 3) * 200);  // different rows in view
      tw->grabFramebuffer();  // draws one frame
      times.push_back(tw->last_paint_ms());
      cpu.push_back(tw->last_cpu_ms());
      timeline::Frame frame;
      c.build_frame(frame);
      items += frame.items;
    }
    all.insert(all.end(), times.begin(), times.end());
    all_cpu.insert(all_cpu.end(), cpu.begin(), cpu.end());
    char label[32];
    std::snprintf(label, sizeof label, level == 0 ? "whole profile" : "1/%.0f of it", std::pow(10.0, level));
    std::printf("  %-16s %9.2f %9.2f %9.2f %11.2f %11.2f %12zu\n", label, percentile(times, 0.5), percentile(times, 0.99),
                *std::max_element(times.begin(), times.end()), percentile(cpu, 0.5), percentile(cpu, 0.99),
                items / static_cast<std::size_t>(frames));
  }
  std::printf("  all levels: p50 %.2f ms, p99 %.2f ms (CPU p50 %.2f ms, p99 %.2f ms) over %zu frames\n", percentile(all, 0.5),
              percentile(all, 0.99), percentile(all_cpu, 0.5), percentile(all_cpu, 0.99), all.size());
}

}  // namespace

int time_frames(const std::string& file, int frames, const QString& screenshot_dir) {
  QElapsedTimer clock;
  clock.start();
  std::shared_ptr<const Profile> profile;
  try {
    profile = std::make_shared<const Profile>(load_profile(file));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardscope gui: %s\n", e.what());
    return 2;
  }
  std::printf("%s: %lld kernels, %lld ranges, %lld memory events, loaded in %.1f s\n", file.c_str(),
              static_cast<long long>(profile->kernel_count), static_cast<long long>(profile->range_count),
              static_cast<long long>(profile->memory_event_count), static_cast<double>(clock.elapsed()) / 1000);
  timeline::TimelineWidget tw;
  QPalette dark = tw.palette();  // the app's default look (the widget follows the palette)
  dark.setColor(QPalette::Window, QColor(45, 45, 48));
  tw.setPalette(dark);
  tw.resize(1600, 1000);
  tw.show();
  for (int i = 0; i < 20; ++i) QApplication::processEvents();  // mapped and sized
  tw.set_profile(profile);
  tw.set_finish_frames(true);
  tw.grabFramebuffer();  // warm-up: GL state, font atlas
  measure(&tw, *profile, frames);
  std::fflush(stdout);
  tw.set_finish_frames(false);
  if (screenshot_dir.isEmpty()) return 0;
  tw.controller()->fit_all();
  tw.controller()->set_scroll_y(0);
  QDir().mkpath(screenshot_dir);
  const QString path = screenshot_dir + "/timeline-zoomed-out.png";
  if (!tw.grabFramebuffer().save(path, "PNG")) {
    std::fprintf(stderr, "shardscope gui: could not write %s\n", path.toLocal8Bit().constData());
    return 3;
  }
  std::fprintf(stderr, "wrote %s\n", path.toLocal8Bit().constData());
  return 0;
}

}  // namespace ss::gui
