// SPDX-License-Identifier: Apache-2.0
#pragma once
// The load drivers of `llmux bench`: closed loop (fixed concurrency, a new request when one
// ends; with `burst`, exactly N requests started together as the seed's scripts do) and open
// loop (Poisson arrivals at a rate), bounded by a request count and/or a duration, with a
// warm-up that is excluded from the figures. With RunOptions::conversation, each closed-loop
// client is a user holding a multi-turn /v1/responses conversation (bench/conversation.hpp). Each
// request's timings are taken at the socket by llmux::http::Connection and interpreted with the
// pure core (SSE parser, OpenAI stream interpreter) into a RequestTiming.
//
// One run uses one single-threaded io_context on the calling thread: no locks, no atomics, and
// one core drives tens of thousands of requests per second (bench/bench_client_ceiling.sh).
//
// Thread safety: run_load() blocks the calling thread; distinct calls share nothing.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "bench/conversation.hpp"
#include "bench/stats.hpp"
#include "bench/workload.hpp"
#include "http/client.hpp"
#include "openai/stream.hpp"

namespace llmux::bench {

struct LoadSpec {
  enum class Mode { closed, open };
  Mode mode = Mode::closed;
  std::size_t concurrency = 1;   ///< closed: streams in flight; open: cap on in flight (0 = none)
  double request_rate = 0;       ///< open loop: mean arrivals per second (Poisson)
  std::size_t num_requests = 0;  ///< measured requests; 0 = bounded by duration only
  double duration_s = 0;         ///< stop starting requests after this long (0 = no limit)
  std::size_t warmup_requests = 0;  ///< requests before these are excluded
  double warmup_s = 0;              ///< requests started in the first warmup_s are excluded
  bool burst = false;      ///< closed loop, one round: `concurrency` requests started together
  std::uint64_t seed = 1;  ///< open-loop arrivals
};

struct RunOptions {
  http::Url url;
  BodyOptions body;  ///< dialect, model, stream, ...
  http::ClientOptions client;
  std::vector<http::Header> headers;        ///< sent with every request
  std::string request_id_prefix = "bench";  ///< X-Request-Id = prefix-index
  bool progress = false;                    ///< a progress line on stderr
  std::string label;                        ///< shown on the progress line
  /// Multi-turn conversations (closed loop, /v1/responses): client u is user u and sends the
  /// turns of one conversation, turn k's user message being prompts[(u * turns + k) %
  /// prompts.size()] (the conversation's system prompt: that of its first turn's prompt), each
  /// turn with `X-Session-ID: <key_prefix>-<u>`. The run ends when every user has sent its
  /// turns, or earlier by the LoadSpec's count or duration. Off when turns is 0. Closed loop
  /// only: an open-loop spec then runs closed at its concurrency (at least 1).
  ConversationSpec conversation;
};

/// One request as the driver saw it.
struct Record {
  RequestTiming t;
  std::size_t index = 0;    ///< order of starting
  std::size_t prompt = 0;   ///< index into the prompt list
  bool warmup = false;      ///< excluded from the figures
  std::string request_id;   ///< the X-Request-Id sent
  std::string response_id;  ///< the id the server gave (cmpl-…, chatcmpl-…, resp_…)
  // Conversations only:
  std::size_t user = 0;  ///< the user (closed-loop client) whose conversation it belongs to
  std::size_t turn = 0;  ///< its turn, from 1; 0 = not a conversation turn
  std::string session;   ///< the conversation key (X-Session-ID)
  std::string group;     ///< --tenant or --mix: the client group whose request it was
};

struct RunResult {
  std::vector<Record> records;    ///< every request, warm-up included, in start order
  double wall_s = 0;              ///< measured window: first measured start to last measured end
  std::uint64_t connections = 0;  ///< TCP connections opened
  std::size_t max_in_flight = 0;
  /// The measured (non-warm-up) timings, in start order.
  std::vector<RequestTiming> measured() const;
};

/// Runs `spec` against `opt.url` with prompts taken round-robin from `prompts` (not empty).
RunResult run_load(const RunOptions& opt, const LoadSpec& spec,
                   std::span<const PromptItem> prompts);

/// Loads that ran at the same time (a split's targets, tenants) as one: every record in start
/// order and renumbered, the connections and in-flight maxima added, the measured window from
/// the first measured start to the last measured end.
RunResult merge_concurrent(std::vector<RunResult> parts);

/// Turns what the transport saw into a RequestTiming (exposed for tests): the error kind from
/// the transport failure, the HTTP status, an error event, or a stream that ended before its
/// end marker; output tokens from usage.
void classify(const http::Response& response, bool stream, const StreamInterpreter& interp,
              bool sse_failed, RequestTiming& timing);

/// GET /v1/models and return the first model id ("" when it cannot be found; `error` says why).
/// `client`: an https:// URL's TLS context; `headers`: sent too (an API key).
std::string discover_model(const http::Url& url, std::string* error = nullptr,
                           const http::ClientOptions& client = {},
                           std::span<const http::Header> headers = {});

/// Timing error against `llmux sim`'s ground truth (GET /debug/requests/{X-Request-Id}).
struct GroundTruthCheck {
  std::size_t requests = 0;         ///< records compared
  std::vector<double> ttft_err_s;   ///< client TTFT - sim TTFT (arrival to first token sent)
  std::vector<double> token_err_s;  ///< client arrival - sim send time, per token
  std::vector<double> itl_err_s;    ///< client gap - sim gap, per token after the first
  /// sim arrival - client start: the request's trip and the sim's own queueing before it read
  /// the request (part of the TTFT error that is the server's, not the client's clock).
  std::vector<double> request_delay_s;
  std::size_t missing = 0;  ///< records the sim had no timing for
};
GroundTruthCheck check_against_sim(const http::Url& url, std::span<const Record> records,
                                   std::size_t max_requests = 2000,
                                   const http::ClientOptions& client = {});

}  // namespace llmux::bench
