// SPDX-License-Identifier: Apache-2.0
#include "sim/driver.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <string>

#include "core/clock.hpp"
#include "sim/frames.hpp"

namespace llmux::sim {

namespace net = boost::asio;
namespace json = boost::json;

EngineDriver::EngineDriver(const SimConfig& cfg, net::io_context& ioc, SimMetrics& metrics,
                           ResponseStore& store)
    : cfg_(cfg),
      metrics_(metrics),
      store_(store),
      engine_(cfg.engine),
      step_timer_(ioc),
      base_ns_(mono_ns()),
      speed_(cfg.time_scale) {}

double EngineDriver::model_now() const {
  const std::int64_t now = frozen_ ? frozen_at_ns_ : mono_ns();
  return model_at_base_ + static_cast<double>(now - base_ns_) * 1e-9 * speed_;
}

void EngineDriver::slow_down(double factor) {
  // From the model time of now on, at the new speed (a frozen clock rebases at its stop).
  const double model = model_now();
  base_ns_ = frozen_ ? frozen_at_ns_ : mono_ns();
  model_at_base_ = model;
  speed_ = cfg_.time_scale / std::max(factor, 1.0);
  if (timer_armed_) {
    step_timer_.cancel();  // its handler clears timer_armed_ and re-arms at the new deadline
  }
}

void EngineDriver::freeze(bool frozen) {
  if (frozen == frozen_) return;
  if (frozen) {
    frozen_ = true;
    frozen_at_ns_ = mono_ns();
    step_timer_.cancel();
    return;
  }
  // The model clock goes on from where it stood: every deadline moves by the frozen time.
  base_ns_ += mono_ns() - frozen_at_ns_;
  frozen_ = false;
  arm();
}

std::int64_t EngineDriver::wall_ns(double model_s) const {
  return base_ns_ + static_cast<std::int64_t>((model_s - model_at_base_) / speed_ * 1e9);
}

bool EngineDriver::submit(const std::shared_ptr<Job>& job, SeqRequest seq_request) {
  if (!engine_.submit(std::move(seq_request), model_now())) return false;
  job->in_engine = true;
  jobs_[job->seq] = job;
  metrics_.sync(engine_.stats());
  arm();
  return true;
}

void EngineDriver::arm() {
  if (timer_armed_ || frozen_) return;
  auto deadline = engine_.deadline();
  if (!deadline) return;
  timer_armed_ = true;
  step_timer_.expires_at(
      net::steady_timer::time_point(std::chrono::nanoseconds(wall_ns(*deadline))));
  step_timer_.async_wait([this](boost::system::error_code) {
    timer_armed_ = false;
    on_step();
  });
}

void EngineDriver::on_step() {
  if (frozen_) return;
  auto deadline = engine_.deadline();
  if (!deadline) return;
  const std::int64_t due = wall_ns(*deadline);
  const std::int64_t now = mono_ns();
  if (now < due) {  // woke early
    arm();
    return;
  }
  metrics_.engine_lag(static_cast<double>(now - due) * 1e-9);
  StepResult step = engine_.complete_step();
  for (auto id : step.scheduled) {
    auto it = jobs_.find(id);
    if (it != jobs_.end() && it->second->timing->scheduled_ns == 0)
      it->second->timing->scheduled_ns = wall_ns(step.start);
  }
  for (const TokenOut& token : step.tokens) {
    auto it = jobs_.find(token.id);
    if (it == jobs_.end()) continue;
    auto job = it->second;  // keep alive across erase
    on_token(*job, token, due, now);
  }
  metrics_.sync(engine_.stats());
  arm();
}

void EngineDriver::on_token(Job& job, const TokenOut& token, std::int64_t due, std::int64_t now) {
  Timing& timing = *job.timing;
  if (token.index == 0) {
    job.usage.cached_tokens = token.cached_tokens;
    timing.cached_tokens = token.cached_tokens;
    timing.kv_transfer_tokens = token.external_tokens;
    timing.kv_transfer_seconds = cfg_.engine.kv_link.seconds(token.external_tokens);
    if (token.external_tokens > 0)
      metrics_.kv_transfer(timing.kv_transfer_seconds,
                           cfg_.engine.kv_link.bytes(token.external_tokens));
    if (timing.scheduled_ns == 0) timing.scheduled_ns = due;
    if (!job.req.stream) timing.first_token_ns = now;
    metrics_.ttft(static_cast<double>(now - timing.arrival_ns) * 1e-9);
  } else {
    metrics_.itl(static_cast<double>(now - job.last_emit_ns) * 1e-9);
  }
  job.last_emit_ns = now;
  job.emitted = token.index + 1;
  job.usage.completion_tokens = job.emitted;
  timing.token_sched_ns.push_back(due);
  if (job.req.stream) append_token_frame(job, token.index, token.last);
  if (token.last) {
    finish(job, now);
  } else if (job.faults.close_after >= 0 && job.emitted >= job.faults.close_after) {
    job.fault_close = true;
    drop(job, "fault_close");
  } else if (job.faults.stall_after >= 0 && job.emitted >= job.faults.stall_after) {
    job.stalled = true;
    drop(job, "fault_stall");
  }
  job.notify();
}

void EngineDriver::drop(Job& job, std::string_view outcome) {
  if (job.in_engine) {
    engine_.abort(job.seq);
    job.in_engine = false;
    metrics_.sync(engine_.stats());
  }
  jobs_.erase(job.seq);
  job.timing->outcome = std::string(outcome);
  job.timing->completion_tokens = job.emitted;
  if (job.timing->end_ns == 0) job.timing->end_ns = mono_ns();
}

void EngineDriver::release_held(std::uint64_t seq) {
  if (!engine_.release_held(seq, model_now())) return;
  metrics_.sync(engine_.stats());
  arm();  // the freed blocks may have let a waiting request in
}

void EngineDriver::finish(Job& job, std::int64_t now) {
  job.finished = true;
  job.in_engine = false;
  jobs_.erase(job.seq);
  if (const auto* held = engine_.held_blocks(job.seq); held && on_hold_) on_hold_(job, *held);
  Timing& timing = *job.timing;
  timing.completion_tokens = job.emitted;
  timing.finish_reason = job.meta.finish_reason;
  timing.outcome = "ok";
  const double e2e = static_cast<double>(now - timing.arrival_ns) * 1e-9;
  const double queue =
      static_cast<double>(std::max<std::int64_t>(timing.scheduled_ns - timing.arrival_ns, 0)) *
      1e-9;
  const std::int64_t first = timing.token_sched_ns.empty() ? now : timing.token_sched_ns.front();
  const double prefill =
      static_cast<double>(std::max<std::int64_t>(first - timing.scheduled_ns, 0)) * 1e-9;
  const double decode = static_cast<double>(std::max<std::int64_t>(now - first, 0)) * 1e-9;
  metrics_.request_done(job.meta.finish_reason, e2e, queue, prefill, decode,
                        job.usage.prompt_tokens, job.usage.completion_tokens);
  if (!job.req.stream) timing.end_ns = now;

  if (job.req.endpoint == Endpoint::Responses) {
    std::optional<TurnOutput> turn;
    if (job.turn_plan) turn = job.turn_plan->emitted(static_cast<std::size_t>(job.emitted));
    const std::string text = turn ? turn->text : job.text();
    json::object resp = response_object(job.meta, job.req, finished_status(job.meta), text,
                                        job.usage, turn ? &*turn : nullptr);
    if (job.req.stream) append_responses_done_events(job, text, resp);
    if (job.req.store) {
      StoredResponse stored;
      stored.response = std::move(resp);
      stored.conversation = job.req.conversation;
      stored.conversation.push_back(Message{"assistant", turn ? assistant_history(*turn) : text});
      stored.background = job.req.background;
      store_.put(job.meta.id, std::move(stored));
    }
    store_.erase_running(job.meta.id);
  } else if (job.req.stream) {
    append_done_frames(job);
  }
}

}  // namespace llmux::sim
