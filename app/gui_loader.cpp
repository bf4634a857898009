#include "app/gui_loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "app/cli/command.h"
#include "storage/install_paths.h"

namespace ss::cli {

namespace {

// SHARDSCOPE_GUI_LIBRARY names the library (tests, relocated installs); otherwise it is looked
// for where the build and `cmake --install` put it, relative to the running executable.
std::string gui_library_path() {
  if (const char* env = std::getenv("SHARDSCOPE_GUI_LIBRARY"); env && *env) return env;
  const std::string path = shardscope_lib_path(kGuiLibraryName);
  return path.empty() ? kGuiLibraryName : path;  // else the dynamic loader's search path
}

}  // namespace

int run_gui_library(int argc, char** argv, int first_arg) {
  const std::string path = gui_library_path();
  // RTLD_LOCAL: the app's own copies of the storage / simulator code stay out of the global scope.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    std::cerr << "shardscope: cannot load the desktop app (" << (why ? why : path) << ").\n"
              << "The command-line tools work without it; 'shardscope --help' lists them.\n";
    return kExitInternal;
  }
  using Main = int (*)(int, char**, int);
  auto run = reinterpret_cast<Main>(dlsym(handle, "shardscope_gui_main"));
  if (!run) {
    std::cerr << "shardscope: '" << path << "' is not the ShardScope desktop app library (no shardscope_gui_main)\n";
    return kExitInternal;
  }
  // Not dlclose'd: Qt's global objects are destroyed at process exit, after the app returns.
  return run(argc, argv, first_arg);
}

}  // namespace ss::cli
