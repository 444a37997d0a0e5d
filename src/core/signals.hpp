// SPDX-License-Identifier: Apache-2.0
#pragma once
// Signals and pid files for a long-running server (the gateway): a signal's name for log
// lines, a last word on stderr before a crash, and the pid file `llmux gateway --reload` reads.
#include <sys/types.h>
#include <string>

namespace llmux {

/// "SIGHUP", "SIGRTMIN+3", ... ("signal N" when unknown).
std::string signal_name(int sig);

/// On SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGSYS or SIGTRAP: one line on stderr naming the
/// signal, then the default action (a core dump where enabled). Not installed in sanitizer
/// builds, whose own reports say more.
void install_fatal_signal_report();

/// A pid file: written with this process's pid, removed on destruction if it still holds it.
class PidFile {
 public:
  PidFile() = default;
  PidFile(const PidFile&) = delete;
  PidFile& operator=(const PidFile&) = delete;
  ~PidFile();
  /// False with `error` set when the file cannot be written.
  bool write(const std::string& path, std::string& error);

 private:
  std::string path_;
};

/// The pid a pid file holds, or -1 with `error` set (missing, unreadable, not a pid, or no such
/// process).
pid_t read_pid_file(const std::string& path, std::string& error);

}  // namespace llmux
