#include "profiler/collector/launcher/child_process.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace ss::record {
namespace {

volatile sig_atomic_t g_child_pgid = 0;
volatile sig_atomic_t g_forwarded = 0;
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

void forward(int sig) {
  if (g_child_pgid > 0) {
    kill(-static_cast<pid_t>(g_child_pgid), sig);
    g_forwarded = g_forwarded + 1;
  }
}

}  // namespace

ChildResult run_child(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
  ChildResult r;
  if (argv.empty()) {
    r.error = "no command to run";
    r.exit_code = 127;
    return r;
  }
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  // The child reports an exec failure through a close-on-exec pipe.
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    r.error = std::string("pipe: ") + std::strerror(errno);
    r.exit_code = 127;
    return r;
  }
  const bool own_terminal = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();

  // Forwarding handlers go in before fork so that no signal falls between fork and sigaction.
  struct sigaction sa {}, old[4];
  sa.sa_handler = forward;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int i = 0; i < 4; ++i) sigaction(kForwarded[i], &sa, &old[i]);

  const pid_t pid = fork();
  if (pid < 0) {
    r.error = std::string("fork: ") + std::strerror(errno);
    r.exit_code = 127;
    for (int i = 0; i < 4; ++i) sigaction(kForwarded[i], &old[i], nullptr);
    close(fds[0]);
    close(fds[1]);
    return r;
  }
  if (pid == 0) {
    setpgid(0, 0);
    for (int i = 0; i < 4; ++i) {
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      sigemptyset(&dfl.sa_mask);
      sigaction(kForwarded[i], &dfl, nullptr);
    }
    close(fds[0]);
    execvpe(args[0], args.data(), envp.data());
    int err = errno;
    ssize_t ignored = write(fds[1], &err, sizeof err);
    (void)ignored;
    _exit(127);
  }
  setpgid(pid, pid);  // also in the parent: whichever runs first wins the race
  g_child_pgid = pid;
  close(fds[1]);
  int child_errno = 0;
  ssize_t n;
  do n = read(fds[0], &child_errno, sizeof child_errno);
  while (n < 0 && errno == EINTR);
  close(fds[0]);
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    r.error = "cannot run '" + argv[0] + "': " + std::strerror(child_errno);
  } else {
    r.started = true;
  }

  struct sigaction ign {}, old_ttou {};
  if (own_terminal && r.started) {
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGTTOU, &ign, &old_ttou);
    tcsetpgrp(STDIN_FILENO, pid);
  }

  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (own_terminal && r.started) {
    tcsetpgrp(STDIN_FILENO, getpgrp());
    sigaction(SIGTTOU, &old_ttou, nullptr);
  }
  g_child_pgid = 0;
  for (int i = 0; i < 4; ++i) sigaction(kForwarded[i], &old[i], nullptr);
  r.forwarded = g_forwarded;

  if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
    r.exit_code = 128 + r.signal;
  }
  return r;
}

}  // namespace ss::record
