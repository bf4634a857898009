// Entry point of the desktop app.
#pragma once

namespace ss::gui {

// Runs the Qt event loop. argv[first_arg..] are the app's arguments: an optional profile to open
// and options (`shardscope gui --help` lists them: --compare B, --light, and for scripted
// screenshots and timing --screenshot DIR, --time-first-frame). Returns the exit code; 1 for a
// usage error or when there is no display to open a window on.
int run_gui(int argc, char** argv, int first_arg);

}  // namespace ss::gui
