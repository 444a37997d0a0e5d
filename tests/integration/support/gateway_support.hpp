#pragma once
// `llmux gateway` as a child process for integration tests, with its config and access log in
// a temporary directory of its own. Loopback only; every wait is bounded.
//
// Not thread-safe: one test thread owns each object.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "support/process.hpp"

namespace llmux::test {

/// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  /// Writes `text` to path()/name and returns the file's path.
  std::string write(const std::string& name, const std::string& text) const;

 private:
  std::string path_;
};

/// Reads a whole file ("" when it does not exist).
std::string read_text_file(const std::string& path);

/// The repository's source directory (examples/, docs/), from the build.
std::string source_dir();

/// `llmux gateway <args> --access-log DIR/access.log` (unless args name --access-log): the
/// access log always goes to a file, since nothing reads the child's stdout after its ready
/// line. The ready line is {"event":"ready","ports":[P],"port":P,"pid":N}.
class GatewayServer : public ChildProcess {
 public:
  /// The quick form or any other arguments after `llmux gateway`.
  explicit GatewayServer(const std::vector<std::string>& args,
                         std::chrono::milliseconds ready_timeout = std::chrono::seconds(10));
  /// `--config` with `yaml` written to a file in the gateway's own directory (`extra` after it).
  static std::unique_ptr<GatewayServer> with_config(const std::string& yaml,
                                                    const std::vector<std::string>& extra = {});
  /// Stops the gateway; a sanitizer report in its stderr (ASan, UBSan, TSan, LSan) fails the
  /// current test even when the test did not call expect_clean_exit().
  ~GatewayServer();

  const std::string& access_log_path() const { return access_log_; }
  /// The access log's JSON lines so far. A line that is not a JSON object goes to `bad`, or
  /// fails the calling test when `bad` is null.
  std::vector<boost::json::object> access_log(std::vector<std::string>* bad = nullptr) const;
  /// Waits up to `timeout` until the access log has a line whose request_id is `id`; returns
  /// it (empty object when none came). Lines that are not JSON objects fail the calling test.
  boost::json::object wait_access_record(const std::string& request_id,
                                         std::chrono::milliseconds timeout) const;
  /// SIGTERMs the gateway and checks it exited 0 with no sanitizer report: non-fatal gtest
  /// failures otherwise. Call at the end of a test.
  void expect_clean_exit(std::chrono::milliseconds timeout = std::chrono::seconds(10));

 private:
  GatewayServer(std::shared_ptr<TempDir> dir, const std::vector<std::string>& args,
                std::chrono::milliseconds ready_timeout);
  std::shared_ptr<TempDir> dir_;
  std::string access_log_;
  bool checked_ = false;  // expect_clean_exit() already looked at the exit and stderr
};

/// True if `stderr_text` holds a sanitizer report: "ERROR: AddressSanitizer", "WARNING:
/// ThreadSanitizer: data race", LeakSanitizer, or UBSan's "runtime error:".
bool has_sanitizer_report(const std::string& stderr_text);

/// examples/seed.yaml with server1/server2 at 127.0.0.1:port1/port2, listening on
/// 127.0.0.1:0, `threads` worker threads and the access log left to the command line.
std::string seed_config(int port1, int port2, int threads = 2);

}  // namespace llmux::test
