// Finds and runs the desktop app library (app/gui/gui_module.cpp) for `shardscope gui` and
// `shardscope FILE`, so that the CLI commands never load Qt.
#pragma once

namespace ss::cli {

// The file name the build and the installation give the library, beside the plugins'
// <exe_dir>/../lib/shardscope/.
inline constexpr const char* kGuiLibraryName = "shardscope_gui.so";

// Loads the library and runs the app: its exit code, or 3 with a message on stderr when the
// library is missing or cannot be loaded (a missing Qt library says which).
int run_gui_library(int argc, char** argv, int first_arg);

}  // namespace ss::cli
