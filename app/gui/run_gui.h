// Entry point of the desktop app.
#pragma once

#include <string>

namespace ss::gui {

// Runs the Qt event loop; opens `file` when not empty. Options after the file (for scripted
// screenshots): --screenshot DIR writes main-window.png, timeline.png and memory.png there and
// exits; --time-first-frame prints the milliseconds from opening `file` to the first timeline
// frame drawn with it, and exits;
// --light starts with the light palette.
int run_gui(int argc, char** argv, const std::string& file);

}  // namespace ss::gui
