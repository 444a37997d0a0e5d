// SPDX-License-Identifier: Apache-2.0
#include "support/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/process.hpp"

#ifndef LLMUX_BINARY
#define LLMUX_BINARY "llmux"
#endif

namespace llmux::test {
namespace {

using Clock = proc::Clock;

// fork + exec with the given fds as the child's stdout/stderr (-1: /dev/null) and stdin
// /dev/null. The child dies with the test (SIGKILL as its parent-death signal), so a crashed
// test leaves no server behind.
pid_t spawn(const std::vector<std::string>& argv, int out_fd, int err_fd) {
  return proc::spawn(
      argv, {.stdin_fd = -1, .stdout_fd = out_fd, .stderr_fd = err_fd, .death_signal = SIGKILL});
}

int make_temp_file(std::string& path) {
  const char* dir = std::getenv("TMPDIR");
  std::string tmpl = std::string(dir && *dir ? dir : "/tmp") + "/llmux-test-stderr-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  const int fd = ::mkostemp(buf.data(), O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(std::string("mkostemp: ") + std::strerror(errno));
  path = buf.data();
  return fd;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int ms_left(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<std::int64_t>(0, left.count()));
}

}  // namespace

std::string llmux_binary() {
  if (const char* env = std::getenv("LLMUX_BINARY"); env && *env) return env;
  return LLMUX_BINARY;
}

RunResult run_to_completion(const std::vector<std::string>& argv,
                            std::chrono::milliseconds timeout) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
  const pid_t pid = spawn(argv, out_pipe[1], err_pipe[1]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  RunResult r;
  const auto deadline = Clock::now() + timeout;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  while (open_fds > 0) {
    const int left = ms_left(deadline);
    if (left == 0) {
      r.timed_out = true;
      break;
    }
    const int n = ::poll(fds, 2, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      const ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  if (r.timed_out) {
    proc::kill_and_reap(pid);
    r.exit_code = -1;
    return r;
  }
  // Both pipes are closed: the child is exiting. Bounded wait all the same.
  if (auto st = proc::wait_for_exit(pid, std::chrono::milliseconds(ms_left(deadline)))) {
    r.exit_code = *st;
    return r;
  }
  proc::kill_and_reap(pid);
  r.timed_out = true;
  return r;
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv,
                           std::chrono::milliseconds ready_timeout)
    : ChildProcess(argv, ready_timeout, true) {}

ChildProcess::ChildProcess(const std::vector<std::string>& argv,
                           std::chrono::milliseconds ready_timeout, bool require_host) {
  int out_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
  const int err_fd = make_temp_file(stderr_path_);
  pid_ = spawn(argv, out_pipe[1], err_fd);
  ::close(out_pipe[1]);
  ::close(err_fd);
  stdout_fd_ = out_pipe[0];

  // Read stdout until the first complete line, bounded by ready_timeout. `got`: all of stdout
  // read, for the error message.
  std::string got;
  std::string why;
  switch (proc::read_line(stdout_fd_, got, ready_line_, Clock::now() + ready_timeout)) {
    case proc::LineStatus::line:
      got = ready_line_ + '\n' + got;
      break;
    case proc::LineStatus::timed_out:
      why = "no ready line within the timeout";
      break;
    case proc::LineStatus::closed:
      why = "the child closed stdout (exited?) before its ready line";
      break;
  }
  if (why.empty()) {
    boost::system::error_code ec;
    auto v = boost::json::parse(ready_line_, ec);
    const auto* o = ec ? nullptr : v.if_object();
    if (!o || !o->contains("event") || o->at("event") != "ready" || !o->contains("port") ||
        !o->at("port").is_int64() || !o->contains("pid") ||
        (require_host && !o->contains("host"))) {
      why = "malformed ready line: " + ready_line_;
    } else if (o->at("pid").to_number<std::int64_t>() != pid_) {
      why = "ready line names another pid: " + ready_line_;
    } else if (o->contains("host") && o->at("host") != "127.0.0.1") {
      why = "ready line names another host: " + ready_line_;
    } else {
      port_ = static_cast<int>(o->at("port").as_int64());
      if (port_ <= 0 || port_ > 65535) why = "ready line has a bad port: " + ready_line_;
    }
  }
  if (!why.empty()) {
    terminate(std::chrono::seconds(2));
    const std::string err = stderr_text();
    ::close(stdout_fd_);
    stdout_fd_ = -1;
    ::unlink(stderr_path_.c_str());
    throw std::runtime_error("starting " + argv[0] + ": " + why + "; stdout: '" + got +
                             "'; stderr: '" + err + "'");
  }
}

ChildProcess::~ChildProcess() {
  terminate(std::chrono::seconds(5));
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
  if (!stderr_path_.empty()) ::unlink(stderr_path_.c_str());
}

std::string ChildProcess::stderr_text() const {
  return read_file(stderr_path_);
}

// proc's -1 (not our child any more: reaped elsewhere) reads as exited with no status.
bool ChildProcess::alive() {
  if (exit_status_) return false;
  const auto st = proc::wait_for_exit(pid_, std::chrono::milliseconds(0));
  if (!st) return true;
  if (*st >= 0) exit_status_ = st;
  return false;
}

std::optional<int> ChildProcess::wait_for_exit(std::chrono::milliseconds timeout) {
  if (exit_status_) return exit_status_;
  const auto st = proc::wait_for_exit(pid_, timeout);
  if (st && *st >= 0) exit_status_ = st;
  return exit_status_;
}

std::optional<int> ChildProcess::terminate(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return exit_status_;
  if (!alive()) return exit_status_;
  int final_status = -1;
  const auto st = proc::stop(pid_, timeout, &final_status);
  if (final_status >= 0) exit_status_ = final_status;
  return st;
}

bool has_sanitizer_report(const std::string& stderr_text) {
  // "Sanitizer" alone covers AddressSanitizer, LeakSanitizer and ThreadSanitizer
  // ("WARNING: ThreadSanitizer: data race", "ThreadSanitizer: reported 2 warnings"); the TSan
  // pattern is spelled out so that nobody narrows the first one without noticing.
  for (const char* pattern : {"Sanitizer", "WARNING: ThreadSanitizer", "runtime error:"})
    if (stderr_text.find(pattern) != std::string::npos) return true;
  return false;
}

namespace {
std::vector<std::string> sim_argv(const std::vector<std::string>& extra) {
  std::vector<std::string> argv{llmux_binary(), "sim", "--host", "127.0.0.1", "--port", "0"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}
}  // namespace

SimServer::SimServer(const std::vector<std::string>& extra_args)
    : ChildProcess(sim_argv(extra_args)) {}

}  // namespace llmux::test
