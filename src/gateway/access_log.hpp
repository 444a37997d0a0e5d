// SPDX-License-Identifier: Apache-2.0
#pragma once
// One JSON line per request (stdout, a file, or off). Thread-safe: each line is formatted in
// the calling thread and written with a single fwrite under a mutex.
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace llmux::gateway {

/// Whether a request's first attempt raced a hedge (gateway/hedge.hpp), and which won.
enum class HedgeResult : std::uint8_t { none, first_won, hedge_won };

struct AccessRecord {
  std::string_view request_id, client, method, path, route, backend, model;
  // Whom it is for (gateway/sharing.hpp): the client API key's name when auth.keys is on
  // (tenant_is_key), else the tenant header's value, else "anonymous"; "" until it is known.
  std::string_view tenant;
  // Response affinity (gateway/affinity.hpp): "known" (the table said), "found" (by asking the
  // backends), "not_found", "unavailable" (owner down or silent); "" when the request named none.
  std::string_view affinity;
  std::string error;  // owned: often built while the request unwinds
  int status = 0;
  int attempts = 0;
  int migrations = 0;   // continuation legs of a cut stream (gateway/migration.hpp)
  int queue_depth = 0;  // waited in the route's queue: requests waiting when it joined (0: no)
  std::string_view migrated_from;  // the backend whose stream was cut first
  double queue_ms = -1;            // how long it waited there
  // Tokens its tenant was charged when it left the route's queue (estimated; 0: it did not
  // wait), corrected by its real tokens when it ends (gateway/fair_queue.hpp).
  float queue_charge = 0;
  HedgeResult hedge = HedgeResult::none;  // raced a hedge (gateway/hedge.hpp), and who won
  std::uint64_t bytes_in = 0, bytes_out = 0;
  double ttfb_ms = -1, total_ms = 0;
  bool stream = false;
  bool tenant_is_key = false;
  std::int8_t priority = -1;  // its priority class: an index into priorities.classes (-1: none)
  // Disaggregation (gateway/disaggregation.hpp): the route's backend (an index into its
  // backends) that ran its prefill leg; -1: none was asked, kPrefillFailed: none answered (served
  // unified). Its time, whole milliseconds (at most 65,535). (Small: a proxy frame holds it.)
  std::int8_t prefill_backend = -1;
  std::uint16_t prefill_ms = 0;
  static constexpr std::int8_t kPrefillFailed = -2;
  std::optional<std::int64_t> prompt_tokens, completion_tokens, cached_tokens;
  std::int64_t received_ns = 0;  // when the gateway had the request (mono_ns; not logged)
  // Generated tokens the metrics counted while the stream passed (one per content event; the
  // rest of the usage's count is added when it ends). Not logged.
  std::uint64_t streamed_tokens = 0;
};

class AccessLog {
 public:
  /// "stdout", "off", or a file path (appended). Returns false with `error` set on failure.
  bool open(const std::string& target, std::string& error);
  ~AccessLog();
  bool enabled() const { return enabled_; }
  /// Appends the request's line to a buffer (a write per line would cost ~10% of a small
  /// request's CPU): the lines reach the file in one write of whole lines when kBuffer bytes
  /// have gathered, at flush() (the gateway calls it every 100 ms), at reopen() and when the log
  /// is destroyed.
  /// `priority`: the name of record.priority's class; `prefill_backend`: the name of the backend
  /// record.prefill_backend is (or "unified").
  void write(const AccessRecord& record, std::string_view priority = {},
             std::string_view prefill_backend = {});
  /// Writes out what is buffered.
  void flush();
  static constexpr std::size_t kBuffer = 64 * 1024;
  /// A file target is closed and opened again by its path (after log rotation moved it: the
  /// gateway does this on SIGUSR1). False with `error` set when it cannot be opened; the old
  /// file is then kept. Nothing to do for stdout or off.
  bool reopen(std::string& error);

 private:
  std::FILE* file_ = nullptr;  // changed by reopen() only, under mu_
  std::string path_;
  bool enabled_ = false;
  bool owned_ = false;
  std::mutex mu_;
  std::string pending_;  // whole lines not written yet (under mu_)
  void write_pending();  // under mu_
};

}  // namespace llmux::gateway
