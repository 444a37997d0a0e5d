// SPDX-License-Identifier: Apache-2.0
#include "sim/dispatch.hpp"

#include <boost/asio.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include <chrono>
#include <cstdlib>
#include <memory>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/clock.hpp"
#include "core/ids.hpp"
#include "core/tokenizer.hpp"
#include "core/use_tuple.hpp"
#include "sim/continuation.hpp"
#include "sim/faults.hpp"
#include "sim/job.hpp"
#include "sim/kv_consumer.hpp"
#include "sim/kv_params.hpp"
#include "sim/messages_request.hpp"
#include "sim/stream.hpp"
#include "sim/textgen.hpp"

namespace llmux::sim {
namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
namespace json = boost::json;
using core::use_tuple;
using net::awaitable;

constexpr std::string_view kVersion = "0.11.0";  // the vLLM version whose dialect we speak

/// `?limit=N` of /debug/requests (100 by default).
std::size_t debug_limit(std::string_view target) {
  std::size_t limit = 100;
  if (auto pos = target.find("limit="); pos != std::string_view::npos) {
    limit = std::strtoull(std::string(target.substr(pos + 6)).c_str(), nullptr, 10);
  }
  return limit;
}

/// An error of the serving layer: on /v1/messages vLLM translates it to Anthropic's shape.
ApiError translated_error(int status, std::string message, bool messages_api) {
  ApiError error{status, std::move(message), "", std::nullopt};
  error.anthropic = messages_api;
  return error;
}

}  // namespace

Dispatcher::Dispatcher(const SimConfig& cfg, net::io_context& ioc, EngineDriver& driver,
                       SimMetrics& metrics, ResponseStore& store, TimingLog& timings,
                       FaultControl& control, KvProducer& kv_producer)
    : cfg_(cfg),
      ioc_(ioc),
      driver_(driver),
      metrics_(metrics),
      store_(store),
      timings_(timings),
      control_(control),
      kv_producer_(kv_producer),
      rng_(std::random_device{}()) {
  api_.served_model_name = cfg_.served_model_name;
  api_.max_model_len = cfg_.max_model_len;
  api_.priority_scheduling = cfg_.engine.priority_scheduling;
  api_.lookup_conversation = [this](std::string_view id) { return store_.conversation(id); };
  if (cfg_.script) script_.emplace(cfg_.script);
}

awaitable<void> Dispatcher::dispatch(Conn& connection, Request& req) {
  const std::string_view target = req.target();
  const std::string_view path = target.substr(0, target.find('?'));
  const auto method = req.method();
  const bool get = method == http::verb::get, post = method == http::verb::post;
  if (path == "/v1/completions" || path == "/v1/chat/completions" || path == "/v1/responses") {
    if (!post) co_return co_await write_method_not_allowed(connection, req, "POST");
    const Endpoint endpoint = path == "/v1/completions" ? Endpoint::Completions
                              : path == "/v1/responses" ? Endpoint::Responses
                                                        : Endpoint::Chat;
    control_.count_generation();  // the crash_after_requests-th dies here, unanswered
    co_return co_await handle_generate(connection, req, endpoint);
  }
  // Anthropic's Messages API (vLLM serves it beside the OpenAI one; Claude Code adds ?beta=true).
  if (path == "/v1/messages") {
    if (!post) co_return co_await write_method_not_allowed(connection, req, "POST");
    control_.count_generation();
    co_return co_await handle_generate(connection, req, Endpoint::Chat, true);
  }
  if (path == "/v1/messages/count_tokens") {
    if (!post) co_return co_await write_method_not_allowed(connection, req, "POST");
    co_return co_await count_tokens(connection, req);
  }
  if (path == kAdminFaultsPath) co_return co_await control_.handle(connection, req);
  if (path == kNixlReadPath) {  // not in vLLM: the sim's stand-in for NIXL (sim/kv_producer)
    if (!post) co_return co_await write_method_not_allowed(connection, req, "POST");
    co_return co_await kv_producer_.handle_read(connection, req);
  }
  if (path == "/health" && get) {
    // vLLM's /health: an empty 200, or an empty 503 while the engine is not up.
    co_return co_await write_body(connection, control_.not_ready() ? 503 : 200, "",
                                  "application/json", &req);
  }
  if (path == "/version" && get)
    co_return co_await write_json(connection, 200, fmt::format(R"({{"version":"{}"}})", kVersion),
                                  &req);
  if (path == "/v1/models" && get)
    co_return co_await write_json(connection, 200, models_json(), &req);
  if (path == "/metrics" && get)
    co_return co_await write_body(connection, 200, metrics_.serialize(),
                                  "text/plain; version=0.0.4; charset=utf-8", &req);
  if (path.starts_with("/v1/responses/")) {
    std::string_view rest = path.substr(std::string_view("/v1/responses/").size());
    if (rest.ends_with("/cancel") && post)
      co_return co_await cancel_response(connection, req, rest.substr(0, rest.size() - 7));
    if (get && rest.find('/') == std::string_view::npos)
      co_return co_await get_response(connection, req, rest);
  }
  if (path == "/debug/requests" && get)
    co_return co_await write_json(connection, 200, timings_.list_json(debug_limit(target)), &req);
  if (path.starts_with("/debug/requests/") && get) {
    const Timing* timing = timings_.find(path.substr(16));
    if (!timing)
      co_return co_await write_error(
          connection, 404, fmt::format("No timing record for '{}'.", path.substr(16)), true, &req);
    co_return co_await write_json(connection, 200, json::serialize(timing_json(*timing)), &req);
  }
  // vLLM's GET-only routes called with another method, then any other path: Starlette's 405/404.
  if (!get && method != http::verb::head &&
      (path == "/health" || path == "/version" || path == "/v1/models"))
    co_return co_await write_method_not_allowed(connection, req, "GET");
  co_await write_not_found(connection, req);
}

std::string Dispatcher::models_json() const {
  const auto created = unix_time();
  return fmt::format(
      R"({{"object":"list","data":[{{"id":{},"object":"model","created":{},"owned_by":"vllm","root":{},"parent":null,"max_model_len":{},"permission":[{{"id":"{}","object":"model_permission","created":{},"allow_create_engine":false,"allow_sampling":true,"allow_logprobs":true,"allow_search_indices":false,"allow_view":true,"allow_fine_tuning":false,"organization":"*","group":null,"is_blocking":false}}]}}]}})",
      json_quote(cfg_.served_model_name), created, json_quote(cfg_.model_root), cfg_.max_model_len,
      random_id("modelperm-"), created);
}

awaitable<void> Dispatcher::get_response(Conn& connection, Request& req, std::string_view id) {
  if (const StoredResponse* stored = store_.find(id))
    co_return co_await write_json(connection, 200, json::serialize(stored->response), &req);
  if (auto running = store_.running(id)) {
    auto& job = *running;
    const char* status = job.timing->scheduled_ns ? "in_progress" : "queued";
    co_return co_await write_json(
        connection, 200,
        json::serialize(response_object(job.meta, job.req, status, "", std::nullopt)), &req);
  }
  co_await write_error(connection, 404, fmt::format("Response with id '{}' not found.", id), true,
                       &req, "invalid_request_error");
}

awaitable<void> Dispatcher::cancel_response(Conn& connection, Request& req, std::string_view id) {
  if (auto job = store_.running(id)) {
    store_.erase_running(id);
    driver_.drop(*job, "cancelled");
    job->aborted = true;
    json::object resp = response_object(job->meta, job->req, "cancelled", "", std::nullopt);
    StoredResponse stored{resp, job->req.conversation, true};
    store_.put(job->meta.id, std::move(stored));
    co_return co_await write_json(connection, 200, json::serialize(resp), &req);
  }
  if (store_.contains(id))
    co_return co_await write_error(connection, 400, "Cannot cancel a synchronous response.", true,
                                   &req, "invalid_request_error");
  co_await write_error(connection, 404, fmt::format("Response with id '{}' not found.", id), true,
                       &req, "invalid_request_error");
}

std::shared_ptr<const TurnPlan> Dispatcher::plan_turn(const GenRequest& gen_request,
                                                      std::uint64_t seed) {
  if (gen_request.endpoint == Endpoint::Completions) return nullptr;
  // Call ids as vLLM draws them: chat bodies `chatcmpl-tool-<32 hex>` (ToolCall's default),
  // chat streams `call_<24 hex>` (qwen3_coder's parser), Responses `call_<32 hex>`.
  const bool chat_body = gen_request.endpoint == Endpoint::Chat && !gen_request.stream;
  const std::string_view prefix = chat_body ? "chatcmpl-tool-" : "call_";
  const int hex = gen_request.endpoint == Endpoint::Chat && gen_request.stream ? 24 : 32;
  std::shared_ptr<const TurnPlan> whole;
  if (script_) {
    const ScriptTurn* turn = script_->pick(gen_request.last_input);
    if (!turn) return nullptr;
    whole = std::make_shared<TurnPlan>(
        make_plan(turn->reasoning, turn->text, turn->calls, prefix, hex));
  } else {
    if (cfg_.tool_call_share <= 0 || gen_request.function_tools.empty()) return nullptr;
    // Drawn from the request's seed: greedy requests with the same prompt decide alike.
    std::mt19937_64 draw(seed ^ 0x746f6f6c63616c6cull);
    const double roll = std::uniform_real_distribution<double>(0.0, 1.0)(draw);
    auto call = statistical_call(gen_request, cfg_.tool_call_share, roll, draw());
    if (!call) return nullptr;
    whole = std::make_shared<TurnPlan>(make_plan("", "", {std::move(*call)}, prefix, hex));
  }
  // A greedy request continuing this very turn (sim/continuation.hpp) says the rest of it.
  if (gen_request.continue_final_message && gen_request.temperature == 0.0)
    if (auto rest = continue_turn(gen_request, *whole, prefix, hex)) return rest;
  return whole;
}

awaitable<void> Dispatcher::count_tokens(Conn& connection, Request& req) {
  auto counted = count_message_tokens(req.body(), api_);
  if (auto* error = std::get_if<ApiError>(&counted))
    co_return co_await write_api_error(connection, *error, req);
  co_await write_json(connection, 200, count_tokens_body(std::get<std::int64_t>(counted)), &req);
}

awaitable<void> Dispatcher::handle_generate(Conn& connection, Request& req, Endpoint endpoint,
                                            bool messages_api) {
  const std::int64_t arrival = mono_ns();
  auto parsed = messages_api ? parse_messages_request(req.body(), api_)
                             : parse_request(endpoint, req.body(), api_);
  if (auto* error = std::get_if<ApiError>(&parsed))
    co_return co_await write_api_error(connection, *error, req);
  GenRequest gen_request = std::move(std::get<GenRequest>(parsed));
  auto maxv = effective_max_tokens(gen_request, cfg_.max_model_len);
  if (auto* error = std::get_if<ApiError>(&maxv)) {
    error->anthropic = messages_api;
    co_return co_await write_api_error(connection, *error, req);
  }
  const std::int64_t max_tokens = std::get<std::int64_t>(maxv);
  if (endpoint == Endpoint::Responses)
    gen_request.max_tokens = max_tokens;  // echoed resolved, as vLLM does
  // Prefill/decode disaggregation: without a KV role the params are ignored, as vLLM without a
  // KV connector ignores them.
  std::optional<KvRequest> kv;
  if (cfg_.kv.role != KvRole::none) {
    auto read = read_kv_request(req.body());
    if (auto* error = std::get_if<ApiError>(&read)) {
      error->anthropic = messages_api;
      co_return co_await write_api_error(connection, *error, req);
    }
    kv = std::get<std::optional<KvRequest>>(std::move(read));
  }

  auto job = std::make_shared<Job>(ioc_.get_executor());
  job->faults = draw_faults(cfg_.faults, rng_);
  control_.apply(job->faults, rng_);
  apply_fault_header(job->faults, req["x-llmux-fault"]);
  if (job->faults.latency_ms > 0) {
    net::steady_timer timer(
        ioc_, std::chrono::microseconds(static_cast<std::int64_t>(job->faults.latency_ms * 1000)));
    co_await timer.async_wait(use_tuple);
  }
  if (cfg_.api_server_seconds > 0) {  // the API server's own time, on the model clock
    net::steady_timer timer(ioc_, std::chrono::microseconds(static_cast<std::int64_t>(
                                      cfg_.api_server_seconds / cfg_.time_scale * 1e6)));
    co_await timer.async_wait(use_tuple);
  }
  if (job->faults.error_status >= 400) {
    co_return co_await write_api_error(
        connection,
        translated_error(
            job->faults.error_status,
            fmt::format("Simulated fault: the server answered {}.", job->faults.error_status),
            messages_api),
        req);
  }

  // Output: greedy decoding is a function of the prompt; sampling of the seed. A greedy prompt
  // that holds the beginning of an earlier prompt's output continues that output
  // (sim/continuation.hpp): the earlier prompt decides, `generated` of its tokens are said.
  const auto continued = find_continued_words(gen_request);
  const std::span<const std::uint32_t> deciding_prompt =
      std::span<const std::uint32_t>(gen_request.prompt_ids)
          .first(continued ? continued->earlier_prompt_size : gen_request.prompt_ids.size());
  const std::int64_t generated =
      continued ? static_cast<std::int64_t>(continued->generated) : std::int64_t{0};
  const std::uint64_t prompt_hash = hash_tokens(deciding_prompt);
  const std::uint64_t seed = gen_request.temperature == 0.0 ? prompt_hash
                             : gen_request.seed             ? *gen_request.seed ^ prompt_hash
                                                            : rng_();
  const std::int64_t natural = cfg_.output_len.draw(seed | 1);
  std::int64_t n_out = max_tokens;
  std::string finish = "length";
  if (auto turn_plan = plan_turn(gen_request, seed)) {
    // A scripted or statistical turn: its tokens, cut by max_tokens.
    const auto len = static_cast<std::int64_t>(turn_plan->pieces.size());
    n_out = std::min(len, max_tokens);
    if (n_out == len) finish = "stop";
    job->turn_plan = std::move(turn_plan);
  } else if (!gen_request.ignore_eos && natural - generated <= max_tokens) {
    n_out = std::max<std::int64_t>(natural - generated, 1);
    finish = "stop";
  }
  if (!job->turn_plan) {
    job->words = generate_words(seed, static_cast<std::size_t>(generated + n_out));
    job->words.erase(job->words.begin(), job->words.begin() + generated);
  }
  job->seq = driver_.next_seq();
  job->meta.endpoint = endpoint;
  job->meta.model = gen_request.model;
  job->meta.created = unix_time();
  job->meta.finish_reason = finish;
  job->meta.id = endpoint == Endpoint::Completions ? random_id("cmpl-")
                 : endpoint == Endpoint::Chat      ? random_id("chatcmpl-")
                                                   : random_id("resp_");
  job->meta.item_id = random_id("msg_");
  job->usage.prompt_tokens = static_cast<std::int64_t>(gen_request.prompt_ids.size());
  job->usage.prompt_tokens_details = cfg_.enable_prompt_tokens_details;
  job->req = std::move(gen_request);
  auto& timing = *(job->timing = std::make_shared<Timing>());
  timing.id = job->meta.id;
  timing.request_id = std::string(req["x-request-id"]);
  timing.endpoint = std::string(req.target());
  timing.stream = job->req.stream;
  timing.arrival_ns = arrival;
  timing.prompt_tokens = job->usage.prompt_tokens;
  timings_.remember(job->timing);

  SeqRequest seq_request;
  seq_request.id = job->seq;
  seq_request.prompt = job->req.prompt_ids;
  seq_request.priority = job->req.priority;
  seq_request.output.reserve(static_cast<std::size_t>(n_out));
  for (auto word : job->words) seq_request.output.push_back(vocab_id(word));
  if (job->turn_plan) {
    for (std::int64_t i = 0; i < n_out; ++i) {
      const TurnPiece& piece = job->turn_plan->pieces[static_cast<std::size_t>(i)];
      seq_request.output.push_back(Tokenizer::piece_id(
          piece.seg == Seg::CallHeader ? job->turn_plan->full.calls[piece.call].name : piece.text));
    }
  }
  // A producer holds the KV of a request handed over (finished by length, vLLM's condition).
  seq_request.hold_on_finish =
      kv && kv->remote_decode && produces(cfg_.kv.role) && hands_over(finish);
  if (kv && kv->remote_prefill && consumes(cfg_.kv.role)) {
    if (!kv->handle) {
      spdlog::warn("Got invalid KVTransferParams: {}. This request will not utilize KVTransfer",
                   req.body().substr(0, 200));
    } else {
      const KvReadResult read =
          co_await read_remote_kv(ioc_.get_executor(), *kv->handle, std::chrono::seconds(5));
      timing.kv_transfer = read.ok ? "loaded" : "load_failed";
      seq_request.remote_prefill = read.ok;
      seq_request.remote_tokens = static_cast<std::int32_t>(read.tokens);
      if (!read.ok) {
        metrics_.kv_load_failed();
        spdlog::warn("KV load of request {} failed ({}): {}", job->meta.id, read.error,
                     cfg_.kv.load_failure_policy == LoadFailurePolicy::fail ? "failing it"
                                                                            : "prefilling it here");
        if (cfg_.kv.load_failure_policy == LoadFailurePolicy::fail) {
          timing.outcome = "error";
          timing.finish_reason = "error";
          timing.end_ns = mono_ns();
          co_return co_await write_kv_load_failure(connection, req, job->req);
        }
      }
    }
  }
  if (!driver_.submit(job, std::move(seq_request))) {
    timing.outcome = "rejected";
    co_return co_await write_api_error(
        connection,
        translated_error(400,
                         fmt::format("The request needs {} tokens of KV cache but the cache holds "
                                     "only {}.",
                                     job->usage.prompt_tokens + n_out,
                                     cfg_.engine.num_kv_blocks * cfg_.engine.block_size),
                         messages_api),
        req);
  }

  if (endpoint == Endpoint::Responses && job->req.background) {
    store_.add_running(job->meta.id, job);
    co_return co_await write_json(
        connection, 200,
        json::serialize(response_object(job->meta, job->req, "queued", "", std::nullopt)), &req);
  }
  if (job->req.stream) co_return co_await stream_response(connection, req, job, driver_);
  co_await plain_response(connection, req, job, driver_);
}

}  // namespace llmux::sim
