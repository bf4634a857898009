// Catch2 main shared by every test executable. A test built with REALDATA exits 77 (ctest
// reports it as skipped) with a clear message when the real traces folder is absent.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>
#include <iostream>

#include "tests/support/test_paths.h"

int main(int argc, char** argv) {
  if (std::getenv("SHARDSCOPE_REALDATA") && !ss::test::traces_available()) {
    std::cout << "SKIPPED: real traces folder '" << ss::test::traces_dir()
              << "' is absent; realdata tests need ../shared/data/traces beside the checkout\n";
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
