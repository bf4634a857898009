// The desktop app as a library that `shardscope` loads only for `gui` / `shardscope FILE`
// (app/gui_loader.cpp): the CLI commands then start without loading Qt and ICU, ~10 ms per
// command on the 2-core CI machine (docs/benchmarks.md), and run where Qt is not installed.
#include "app/gui/run_gui.h"

extern "C" __attribute__((visibility("default"))) int shardscope_gui_main(int argc, char** argv, int first_arg) {
  return ss::gui::run_gui(argc, argv, first_arg);
}
