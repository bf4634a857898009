// The launcher's child handling with small shell children: exit codes, exec failures, and a
// SIGINT to the launcher reaching the child's process group.
#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "profiler/collector/launcher/child_process.h"
#include "profiler/collector/launcher/record_env.h"
#include "tests/support/test_paths.h"

using namespace ss::record;

TEST_CASE("the child's exit code is passed through") {
  auto r = run_child({"sh", "-c", "exit 7"}, current_environment());
  CHECK(r.started);
  CHECK(r.exit_code == 7);
  CHECK(r.signal == 0);
  CHECK(run_child({"true"}, current_environment()).exit_code == 0);
}

TEST_CASE("the environment given is the child's environment") {
  ss::test::TempDir dir;
  auto env = current_environment();
  env["SS_TEST_VALUE"] = "hello";
  auto r = run_child({"sh", "-c", "printf %s \"$SS_TEST_VALUE\" > " + dir.file("out")}, env);
  CHECK(r.exit_code == 0);
  CHECK(ss::test::read_file(dir.file("out")) == "hello");
}

TEST_CASE("a command that cannot run gives a clear error and 127") {
  auto r = run_child({"/nonexistent/definitely-not-here"}, current_environment());
  CHECK_FALSE(r.started);
  CHECK(r.exit_code == 127);
  CHECK_THAT(r.error, Catch::Contains("cannot run '/nonexistent/definitely-not-here'"));
}

TEST_CASE("SIGINT to the launcher reaches the child's whole group; the child's handler decides the code") {
  ss::test::TempDir dir;
  // The foreground `sleep` is in the child's group too: the forwarded SIGINT ends it, then sh runs
  // its trap. Without forwarding the loop would run until the 20 s check below fails.
  const std::string script = "trap 'echo got-int > " + dir.file("trap") + "; exit 42' INT; while :; do sleep 0.1; done";
  std::thread killer([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    kill(getpid(), SIGINT);
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run_child({"sh", "-c", script}, current_environment());
  killer.join();
  CHECK(r.exit_code == 42);
  CHECK(r.forwarded >= 1);
  CHECK(ss::test::read_file(dir.file("trap")) == "got-int\n");
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20));
}

TEST_CASE("a child killed by a signal reports 128 + signal") {
  auto r = run_child({"sh", "-c", "kill -TERM $$"}, current_environment());
  CHECK(r.signal == SIGTERM);
  CHECK(r.exit_code == 128 + SIGTERM);
}
