// SPDX-License-Identifier: Apache-2.0
#include "core/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace llmux::proc {
namespace {

int ms_left(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<std::int64_t>(0, left.count()));
}

// The child between fork and exec: async-signal-safe calls only (no allocation, no locks).
[[noreturn]] void exec_child(char* const* args, const SpawnOptions& opts, pid_t parent) {
  if (opts.death_signal != 0) {
    ::prctl(PR_SET_PDEATHSIG, opts.death_signal);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
  }
  int src[3] = {opts.stdin_fd, opts.stdout_fd, opts.stderr_fd};
  int devnull = -1;
  for (int& fd : src) {
    if (fd != -1) continue;
    if (devnull < 0) devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    fd = devnull;
  }
  // Move every source off 0..2 first, so that no dup2 below overwrites another one's source.
  for (int& fd : src)
    if (fd >= 0 && fd <= 2) fd = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  for (int i = 0; i < 3; ++i)
    if (src[i] >= 0) ::dup2(src[i], i);  // the copy on 0..2 is not close-on-exec
  ::execv(args[0], args);
  ::_exit(127);
}

}  // namespace

pid_t spawn(const std::vector<std::string>& argv, const SpawnOptions& opts) {
  if (argv.empty()) throw std::invalid_argument("spawn: empty argv");
  // Everything the child needs is built here: it must not allocate.
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) exec_child(args.data(), opts, parent);
  return pid;
}

int decode_status(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return -1;
}

LineStatus read_line(int fd, std::string& buffer, std::string& line, Clock::time_point deadline) {
  for (;;) {
    if (const auto newline = buffer.find('\n'); newline != std::string::npos) {
      line.assign(buffer, 0, newline);
      buffer.erase(0, newline + 1);
      return LineStatus::line;
    }
    const int left = ms_left(deadline);
    if (left == 0) return LineStatus::timed_out;
    pollfd poll_entry{fd, POLLIN, 0};
    if (::poll(&poll_entry, 1, left) <= 0) continue;  // timeout, EINTR: the deadline decides
    char buf[1024];
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got > 0) {
      buffer.append(buf, static_cast<std::size_t>(got));
    } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
      return LineStatus::closed;
    }
  }
}

std::optional<int> wait_for_exit(pid_t pid, std::chrono::milliseconds timeout) {
  if (pid <= 0) return -1;  // waitpid would take it for "any child"
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    int wait_status = 0;
    const pid_t waited = ::waitpid(pid, &wait_status, WNOHANG);
    if (waited == pid) return decode_status(wait_status);
    if (waited < 0 && errno != EINTR) return -1;  // not (or no longer) our child
    if (waited == 0 && Clock::now() >= deadline) return std::nullopt;
    if (waited == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling interval
  }
}

int kill_and_reap(pid_t pid) {
  if (pid <= 0) return -1;
  ::kill(pid, SIGKILL);
  int wait_status = 0;
  pid_t waited;
  do {
    waited = ::waitpid(pid, &wait_status, 0);
  } while (waited < 0 && errno == EINTR);
  return waited == pid ? decode_status(wait_status) : -1;
}

std::optional<int> stop(pid_t pid, std::chrono::milliseconds grace, int* final_status) {
  auto status = wait_for_exit(pid, std::chrono::milliseconds(0));
  if (!status) {
    ::kill(pid, SIGTERM);
    status = wait_for_exit(pid, grace);
  }
  if (status) {
    if (final_status) *final_status = *status;
    return status;
  }
  const int killed = kill_and_reap(pid);
  if (final_status) *final_status = killed;
  return std::nullopt;
}

}  // namespace llmux::proc
