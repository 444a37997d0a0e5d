// SPDX-License-Identifier: Apache-2.0
#pragma once
// What a chat or completions stream keeps so that another backend can continue it, the request
// that asks for the continuation, and the rewriting that makes the continuation's events read as
// the same stream (gateway/migration.hpp runs the legs). Pure: no I/O.
//
// Two ways on, chosen at the cut by what the client has been sent:
//   continue  the generated content is non-empty, no tool call began: chat is asked to continue
//             the final assistant message (`continue_final_message: true`,
//             `add_generation_prompt: false`, the reasoning whole and the content so far);
//             completions get the prompt followed by the text so far. `max_tokens` (and
//             `min_tokens`) shrink by the tokens generated.
//   replay    nothing of the content yet (before the first token, or inside the reasoning, which
//             Qwen3's template cannot reopen: it closes the `<think>` block of a final assistant
//             message): the client's request is sent again whole and the text the client already
//             has is cut from the new leg's events, which must begin with exactly that text (a
//             greedy request does; a sampled one diverges, and then the stream ends with an error
//             event).
// A cut inside a tool call's arguments is not continued (its JSON cannot be reopened), nor a
// stream whose kept text passed the limit (`migration.max_kept_bytes`).
//
// A Responses stream (`store: false`) goes on only before its output begins (a rescue): the
// client has `response.created` and `response.in_progress`, the next leg is the client's request
// again, and its events read as the first leg's: those two dropped, the first leg's response id
// and `created_at`, the sequence numbers going on from the client's last. vLLM's Responses API
// cannot be asked to continue a partial output item through its request.
//
// The continuation reads as the same stream: the first leg's `id`, `created`, `model` and
// `system_fingerprint`, no second role delta, and usage as the client's own view: the first
// leg's prompt tokens, every leg's completion tokens.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/value.hpp>

#include "openai/stream.hpp"

namespace llmux::gateway {

enum class ContinuationWay { continue_output, replay };

/// Why a stream broke (llmux_migrations_total's `reason`): the connection failed or closed, the
/// backend stalled (upstream/stall.hpp), it sent nothing for the idle timeout, or it was declared
/// down (ejected, failed checks) while the stream waited.
enum class CutReason : std::uint8_t { broken, stalled, idle, ejected };
std::string_view to_string(CutReason reason);

/// Token counts of one leg as its stream reported them: usage when it came, else the estimates
/// of its events (core/tokenizer.hpp).
struct LegTokens {
  std::uint64_t prompt = 0;
  std::uint64_t completion = 0;
};

class StreamContinuation {
 public:
  /// The metric id of the backend cut first (llmux_migrations_total's `from`).
  int first_backend_metric_id = 0;

  /// `dialect`: chat, completions or responses. `max_kept_bytes`: the generated text kept at
  /// most.
  StreamContinuation(openai::Dialect dialect, std::size_t max_kept_bytes);

  openai::Dialect dialect() const { return dialect_; }
  /// What the legs generated so far (the relay's tap keeps it: ResponseTap::keep_generated).
  openai::GeneratedText& generated() { return generated_; }

  /// Why the stream, cut now, cannot go on elsewhere; null when it can. (A tool call began, the
  /// kept text passed its limit, a Responses stream's output began.)
  const char* why_not_continuable() const;

  /// The stream was cut (for `reason`) after its leg relayed `leg_tokens` (completion tokens, the
  /// events' estimate): decides how the next leg goes on, and counts the leg.
  void cut(std::uint64_t leg_tokens, CutReason reason);
  ContinuationWay way() const { return way_; }
  CutReason last_cut_reason() const { return last_cut_reason_; }
  /// Legs cut so far (the next leg is migration number `cuts()`).
  int cuts() const { return cuts_; }
  /// Responses: the last `sequence_number` the client got (-1: none).
  std::int64_t last_sequence_number() const {
    return cuts_ > 0 ? client_sequence_ : generated_.last_sequence_number;
  }

  /// The body of the next leg, from the client's `client_body`: always a stream that reports
  /// usage (`stream_options.include_usage`); nullopt when `client_body` is not a JSON object.
  std::optional<std::string> next_leg_body(std::string_view client_body) const;

  /// A leg's whole SSE events as the client gets them, into rewritten(): the first leg's
  /// identity, no role delta, the text the client has already had cut off (replay), usage as the
  /// client's view. False when a replayed leg said something else than what the client already
  /// has (the stream cannot go on); rewritten() then holds what came before.
  bool rewrite_events(std::string_view events);
  std::string_view rewritten() const { return rewritten_; }

  /// The client's view of the usage a leg reported (`leg`: its prompt and completion tokens):
  /// the first leg's prompt tokens, every leg's completion tokens.
  LegTokens client_view(LegTokens leg) const;
  /// What every leg computed, for the usage ledger and quotas: the earlier legs' prompts and
  /// completions (estimated from their events) and the last leg's `leg`.
  LegTokens computed(LegTokens leg) const;

 private:
  enum class EventFate { keep, drop, diverged };
  EventFate rewrite_chunk(boost::json::object& chunk);
  EventFate rewrite_responses_event(boost::json::object& event);
  bool trim_replayed(boost::json::object& holder, std::string_view key, std::string& pending);
  void learn_identity();

  openai::Dialect dialect_;
  openai::GeneratedText generated_;
  ContinuationWay way_ = ContinuationWay::continue_output;
  CutReason last_cut_reason_ = CutReason::broken;
  int cuts_ = 0;
  // The first leg's identity, read from its first event at the first cut.
  bool identity_known_ = false;
  boost::json::value id_, created_, model_, system_fingerprint_;
  // Completion tokens this leg's prompt already holds (0 for a replay), and the earlier legs:
  // how many, their carried tokens and their completion tokens (the events' estimates).
  std::uint64_t carried_ = 0;
  std::uint64_t earlier_legs_ = 0;
  std::uint64_t earlier_carried_ = 0;
  std::uint64_t earlier_completion_ = 0;
  std::string rewritten_;  // the last rewrite_events(): kept here, not in the relay's frame
  // Replay: what this leg must say first (the client has it already).
  std::string replay_reasoning_;
  std::string replay_content_;
  // Responses: the events the client has had (its opening ones), and the last sequence number
  // it got (the next leg's events are numbered on from it).
  std::int64_t client_events_ = 0;
  std::int64_t client_sequence_ = -1;
};

/// Whether a request's stream is on a continuation leg: it was cut at least once and another
/// backend goes on with it (null: a request that is not continued).
inline bool on_continuation_leg(const StreamContinuation* continuation) {
  return continuation && continuation->cuts() > 0;
}

}  // namespace llmux::gateway
