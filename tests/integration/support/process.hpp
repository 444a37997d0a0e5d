// SPDX-License-Identifier: Apache-2.0
#pragma once
// Child processes for integration tests: the real `llmux` binary, started and stopped by the
// test. Loopback only; every wait is bounded.
//
// Not thread-safe: one test thread owns each object.
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace llmux::test {

/// Path of the llmux binary under test: $LLMUX_BINARY if set, else the build's own
/// (the compile definition LLMUX_BINARY, so an ASan build dir tests its own binary).
std::string llmux_binary();

/// Result of a process run to completion.
struct RunResult {
  int exit_code = -1;  // exit status, or 128 + signal; -1 if it had to be killed on timeout
  bool timed_out = false;
  std::string out, err;
};

/// Runs `argv` (argv[0] is the program path) to completion, capturing stdout and stderr.
/// Kills it after `timeout`.
RunResult run_to_completion(const std::vector<std::string>& argv,
                            std::chrono::milliseconds timeout = std::chrono::seconds(10));

/// A long-running child whose stdout carries one JSON ready line
/// `{"event":"ready","host":"127.0.0.1","port":N,"pid":P}`. Its stderr goes to a temporary
/// file (see stderr_text()). The destructor sends SIGTERM, waits up to 5 s, then SIGKILLs.
class ChildProcess {
 public:
  /// Spawns `argv` and waits up to `ready_timeout` for the ready line. Throws
  /// std::runtime_error (with the child's stderr) if it exits or stays silent.
  ChildProcess(const std::vector<std::string>& argv,
               std::chrono::milliseconds ready_timeout = std::chrono::seconds(10));
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& ready_line() const { return ready_line_; }
  /// Everything the child wrote to stderr so far.
  std::string stderr_text() const;
  /// True while the child has not exited (reaps it if it has).
  bool alive();
  /// Sends SIGTERM and waits up to `timeout`; returns the exit status (128 + signal when killed
  /// by a signal), or nullopt if it did not exit in time (it is then SIGKILLed).
  std::optional<int> terminate(std::chrono::milliseconds timeout = std::chrono::seconds(5));
  /// Waits up to `timeout` for the child to exit on its own (sends nothing); returns its exit
  /// status, or nullopt if it is still running.
  std::optional<int> wait(std::chrono::milliseconds timeout) { return wait_for_exit(timeout); }

 protected:
  /// As the public constructor; `require_host` false also accepts a ready line without "host"
  /// (the gateway's: `{"event":"ready","ports":[P],"port":P,"pid":N}`).
  ChildProcess(const std::vector<std::string>& argv, std::chrono::milliseconds ready_timeout,
               bool require_host);

 private:
  std::optional<int> wait_for_exit(std::chrono::milliseconds timeout);

  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  int port_ = 0;
  std::string ready_line_;
  std::string stderr_path_;
  std::optional<int> exit_status_;
};

/// True if `stderr_text` (a child's) holds a sanitizer report: "ERROR: AddressSanitizer",
/// "WARNING: ThreadSanitizer: data race", LeakSanitizer, or UBSan's "runtime error:".
bool has_sanitizer_report(const std::string& stderr_text);

/// `llmux sim --host 127.0.0.1 --port 0 <extra>` as a child process.
class SimServer : public ChildProcess {
 public:
  explicit SimServer(const std::vector<std::string>& extra_args);
};

}  // namespace llmux::test
