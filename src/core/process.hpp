// SPDX-License-Identifier: Apache-2.0
#pragma once
// Child processes: fork + exec with chosen stdin/stdout/stderr, reading a line from a child's
// pipe with a deadline, and stopping a child (SIGTERM, bounded wait, SIGKILL). Used by
// `llmux demo` for its simulators and gateway and by the integration tests for the binary under
// test. POSIX (Linux: the parent-death signal is prctl(PR_SET_PDEATHSIG)).
//
// Free functions over plain pids and fds; nothing here owns them: the caller closes the fds it
// passes and reaps (stop/wait_for_exit/kill_and_reap) each pid it spawns, exactly once. Each
// function is thread-safe as far as the pid or fd it is given is used by one thread at a time.
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace llmux::proc {

using Clock = std::chrono::steady_clock;

/// For SpawnOptions' fds: the child keeps this process's own fd (0, 1 or 2).
inline constexpr int kInherit = -2;

struct SpawnOptions {
  // The child's stdin, stdout and stderr: an fd of this process (it may be O_CLOEXEC), -1 for
  // /dev/null, or kInherit.
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  // Signal the child gets when its parent dies (PR_SET_PDEATHSIG; on Linux that is when the
  // thread that called spawn() exits); 0 for none. If the parent is already gone by the time the
  // child sets it, the child exits 127 without exec.
  int death_signal = 0;
};

/// fork + execv(argv[0], argv): argv[0] is the program's path (no PATH search). Returns the
/// child's pid. The child side makes async-signal-safe calls only; if exec fails the child exits
/// with 127. Throws std::invalid_argument on an empty argv and std::runtime_error (with the errno
/// text) if fork fails.
pid_t spawn(const std::vector<std::string>& argv, const SpawnOptions& opts = {});

/// A waitpid status as a shell reports it: the exit code, 128 + signal when killed by a signal,
/// -1 for anything else.
int decode_status(int wait_status);

enum class LineStatus {
  line,       // a complete line came
  closed,     // end of file (or a read error) before a newline
  timed_out,  // `deadline` passed before a newline
};

/// Reads from `fd` (poll + read, retrying on EINTR) until `buffer` holds a '\n' or `deadline`
/// passes. On LineStatus::line, `line` gets the text before the first '\n' and `buffer` keeps
/// what was read past it (for the next call); otherwise `buffer` holds everything read so far.
LineStatus read_line(int fd, std::string& buffer, std::string& line, Clock::time_point deadline);

/// Waits up to `timeout` (0: just looks) for `pid` to exit and reaps it; returns its decoded
/// status, or nullopt while it is still running. A pid that is not (or no longer) a child of
/// this process reads as exited with status -1.
std::optional<int> wait_for_exit(pid_t pid, std::chrono::milliseconds timeout);

/// SIGKILLs `pid` and reaps it (blocking); returns its decoded status (-1 if it was not a child).
int kill_and_reap(pid_t pid);

/// Stops `pid`: if it has not exited yet, sends SIGTERM and waits up to `grace`, then SIGKILLs
/// it. Always reaps it. Returns its exit status (as decode_status), or nullopt if it had to be
/// killed; `final_status`, if given, gets the status it was reaped with in both cases.
std::optional<int> stop(pid_t pid, std::chrono::milliseconds grace, int* final_status = nullptr);

}  // namespace llmux::proc
