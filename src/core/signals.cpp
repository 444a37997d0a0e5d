// SPDX-License-Identifier: Apache-2.0
#include "core/signals.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <unistd.h>

namespace llmux {

std::string signal_name(int sig) {
  if (sig >= SIGRTMIN && sig <= SIGRTMAX)
    return sig == SIGRTMIN ? "SIGRTMIN" : fmt::format("SIGRTMIN+{}", sig - SIGRTMIN);
  if (const char* abbrev = sigabbrev_np(sig)) return fmt::format("SIG{}", abbrev);
  return fmt::format("signal {}", sig);
}

namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer) || __has_feature(undefined_behavior_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

void fatal_signal(int sig) {
  // Async-signal-safe only: write(2) of a message built without allocation.
  char msg[96] = "llmux: fatal signal ";
  std::size_t length = std::strlen(msg);
  const char* abbrev = sigabbrev_np(sig);
  if (abbrev) {
    msg[length++] = 'S', msg[length++] = 'I', msg[length++] = 'G';
    for (const char* p = abbrev; *p && length < sizeof msg - 40; ++p) msg[length++] = *p;
  }
  const char tail[] = "; the process ends (a bug: please report it)\n";
  for (const char* p = tail; *p && length < sizeof msg; ++p) msg[length++] = *p;
  [[maybe_unused]] auto ignored = ::write(STDERR_FILENO, msg, length);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

void install_fatal_signal_report() {
  if (kSanitized) return;
  struct sigaction action {};
  action.sa_handler = fatal_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND;
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGSYS, SIGTRAP})
    ::sigaction(sig, &action, nullptr);
}

PidFile::~PidFile() {
  if (path_.empty()) return;
  std::ifstream file(path_);
  long pid = 0;
  if (file >> pid && pid == static_cast<long>(::getpid())) ::unlink(path_.c_str());
}

bool PidFile::write(const std::string& path, std::string& error) {
  std::ofstream out(path, std::ios::trunc);
  if (out) out << ::getpid() << "\n";
  out.close();
  if (!out) {
    error = fmt::format("cannot write pid file '{}': {}", path, std::strerror(errno));
    return false;
  }
  path_ = path;
  return true;
}

pid_t read_pid_file(const std::string& path, std::string& error) {
  std::ifstream file(path);
  if (!file) {
    error = fmt::format("cannot read pid file '{}': {}", path, std::strerror(errno));
    return -1;
  }
  std::stringstream text;
  text << file.rdbuf();
  long pid = 0;
  std::string rest;
  if (!(text >> pid) || pid <= 1 || (text >> rest)) {
    error = fmt::format("pid file '{}' does not hold a process id", path);
    return -1;
  }
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
    error = fmt::format("pid file '{}' names process {}, which is not running", path, pid);
    return -1;
  }
  return static_cast<pid_t>(pid);
}

}  // namespace llmux
