// `shardscope gui FILE --time-frames N`: frame times of the timeline widget in the app binary,
// under the same Qt, ImGui and OpenGL as the main window (Xvfb: Mesa llvmpipe): the widget alone
// in a 1600x1000 window, N frames per zoom level from the whole profile down to 1/100000 of it.
// Each frame's time covers the draw lists, ImGui and the GL rendering (glFinish included); the CPU
// part alone (up to ImGui::Render, what a GPU does not take over) is printed beside it.
// Prints p50 / p99 / max per level (docs/benchmarks.md). The main window is left out: its other
// docks (the Unshard panel's re-simulation inputs) take minutes to open a 10M-kernel profile.
#pragma once

#include <QString>
#include <string>

namespace ss::gui {

// Loads `file`, measures and returns the exit code. With `screenshot_dir`, also writes
// DIR/timeline-zoomed-out.png: the whole profile in view.
int time_frames(const std::string& file, int frames, const QString& screenshot_dir);

}  // namespace ss::gui
