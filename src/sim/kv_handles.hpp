// SPDX-License-Identifier: Apache-2.0
#pragma once
// A producer's held KV: the handles it answered with, until a consumer reads them or
// VLLM_NIXL_ABORT_REQUEST_TIMEOUT passes (nixl/scheduler.py request_finished at 053da34b: the
// blocks of a request handed over are freed when the consumer's read is done or at
// now + timeout). Pure: times are model seconds given to it; the engine's blocks are freed by
// the caller for every handle it gets back.
// Not thread-safe: the server's one thread.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace llmux::sim {

struct HeldKv {
  std::string request_id;  // remote_request_id
  std::uint64_t seq = 0;   // the engine's sequence holding the blocks
  std::vector<std::int64_t> block_ids;
  std::int64_t tokens = 0;  // prompt tokens whose KV the blocks hold
  double expires_at = 0;
};

class KvHandles {
 public:
  void add(HeldKv held);
  /// The handle `request_id` with exactly these block ids (a consumer's read): removed and
  /// returned; nullopt when unknown, expired or for other blocks.
  std::optional<HeldKv> take(std::string_view request_id,
                             const std::vector<std::int64_t>& block_ids);
  /// Every handle whose time is up at `now`, removed.
  std::vector<HeldKv> take_expired(double now);
  std::optional<double> next_expiry() const;
  std::size_t size() const { return held_.size(); }

 private:
  std::unordered_map<std::string, HeldKv> held_;
  std::multimap<double, std::string> by_expiry_;
};

}  // namespace llmux::sim
