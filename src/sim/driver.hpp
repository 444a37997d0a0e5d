// SPDX-License-Identifier: Apache-2.0
#pragma once
// The engine driver: runs the Engine on absolute deadlines (step k ends at start + the sum of
// the step durations, on the model clock scaled by --time-scale), records how late each step is
// handled (engine lag), and hands every token to its Job, which it finishes or drops.
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <unordered_map>

#include "sim/config.hpp"
#include "sim/engine.hpp"
#include "sim/job.hpp"
#include "sim/metrics.hpp"
#include "sim/store.hpp"

namespace llmux::sim {

class EngineDriver {
 public:
  /// `cfg`, `metrics` and `store` must outlive the driver.
  EngineDriver(const SimConfig& cfg, boost::asio::io_context& ioc, SimMetrics& metrics,
               ResponseStore& store);

  /// Now on the model clock (seconds since the driver started, times --time-scale).
  double model_now() const;
  /// A new sequence id for the engine.
  std::uint64_t next_seq() { return next_seq_++; }

  /// Submits `seq_request` (the sequence of `job`) at the current model time and tracks the job.
  /// False when the KV cache could never hold it (then nothing is tracked).
  bool submit(const std::shared_ptr<Job>& job, SeqRequest seq_request);
  /// Removes a job from the engine (client left, cancelled, or a fault) without finishing it.
  void drop(Job& job, std::string_view outcome);
  /// Whether the driver still tracks the job of sequence `seq` (submitted, not finished/dropped).
  bool tracks(std::uint64_t seq) const { return jobs_.count(seq) != 0; }
  /// Stops the engine (no step runs, the model clock stands still: every running stream stops
  /// where it is, new requests wait) or lets it go on from where it stood.
  void freeze(bool frozen);
  /// Runs the model clock `factor` times slower than --time-scale from now on (1: as set): every
  /// step takes that much longer, from where the clock stands.
  void slow_down(double factor);

  /// Called when a job whose sequence holds its KV on finishing (a producer's request handed
  /// over, SeqRequest::hold_on_finish) has finished, with the blocks held: before its answer is
  /// written, so the answer can carry the handle.
  using HoldCallback = std::function<void(Job&, std::span<const std::int64_t> blocks)>;
  void on_hold(HoldCallback callback) { on_hold_ = std::move(callback); }
  /// Frees the blocks a finished sequence held (read by a consumer, or timed out).
  void release_held(std::uint64_t seq);
  /// CLOCK_MONOTONIC nanoseconds at which the model clock reads `model_s` (at today's speed).
  std::int64_t wall_time_ns(double model_s) const { return wall_ns(model_s); }

 private:
  std::int64_t wall_ns(double model_s) const;
  void arm();
  void on_step();
  void on_token(Job& job, const TokenOut& token, std::int64_t due, std::int64_t now);
  void finish(Job& job, std::int64_t now);

  const SimConfig& cfg_;
  SimMetrics& metrics_;
  ResponseStore& store_;
  Engine engine_;
  boost::asio::steady_timer step_timer_;
  bool timer_armed_ = false;
  // Model time = model_at_base_ + (wall - base_ns_) x speed_ (model seconds per wall second).
  std::int64_t base_ns_;
  double model_at_base_ = 0;
  double speed_;
  bool frozen_ = false;  // freeze(): no step runs, model time stands still
  std::int64_t frozen_at_ns_ = 0;
  std::uint64_t next_seq_ = 1;
  std::unordered_map<std::uint64_t, std::shared_ptr<Job>> jobs_;
  HoldCallback on_hold_;
};

}  // namespace llmux::sim
