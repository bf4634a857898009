// Runs the recorded command as a child in its own process group and waits for it. SIGINT,
// SIGTERM, SIGHUP and SIGQUIT sent to the launcher are forwarded to the child's whole group
// (torchrun and its ranks), so Ctrl+C stops the job and the launcher still merges afterwards.
// When the launcher owns the terminal, the child's group becomes the foreground group for the
// run, so the terminal's Ctrl+C reaches the job directly and interactive input still works.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace ss::record {

struct ChildResult {
  bool started = false;
  std::string error;     // why it did not start ("cannot run 'x': No such file or directory")
  int exit_code = 0;     // the child's code, 128 + signal when a signal ended it, 127 when not started
  int signal = 0;        // the signal that ended it, 0 when it exited
  int forwarded = 0;     // signals forwarded to the child's group
};

ChildResult run_child(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env);

}  // namespace ss::record
