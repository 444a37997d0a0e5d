// SPDX-License-Identifier: Apache-2.0
#include "gateway/disaggregation.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/json.hpp>

#include "core/clock.hpp"
#include "core/tokenizer.hpp"
#include "core/use_tuple.hpp"
#include "gateway/upstream_attempt.hpp"
#include "gateway/upstream_body.hpp"

namespace llmux::gateway {

namespace json = boost::json;

namespace {

/// A prefill's answer is one token and its transfer parameters: anything longer is not one.
constexpr std::size_t kMaxPrefillAnswer = 1 << 20;

/// Prefill backends tried before the request is served unified.
constexpr int kPrefillAttempts = 2;

bool disaggregated_path(std::string_view path) {
  return path == "/v1/chat/completions" || path == "/v1/completions";
}

std::optional<json::object> parse_object(std::string_view text) {
  boost::system::error_code error;
  json::value value = json::parse(text, error);
  if (error || !value.is_object()) return std::nullopt;
  return std::move(value.as_object());
}

/// The usable prefill backend of the route with the fewest prompt tokens in prefill, not tried
/// yet, with one of its in-flight slots (held while the leg runs); an empty slot when none.
upstream::Slot take_prefill_backend(const RouteRuntime& route, const upstream::TriedSet& tried,
                                    std::int64_t prompt_tokens) {
  const std::int64_t now = mono_ns();
  std::vector<upstream::Backend*> order;
  for (upstream::Backend* backend : route.prefillers)
    if (!tried.contains(*backend) && backend->usable(now) &&
        !backend->draining.load(std::memory_order_relaxed))
      order.push_back(backend);
  std::stable_sort(order.begin(), order.end(), [](const auto* left, const auto* right) {
    return left->prefill_tokens.load(std::memory_order_relaxed) <
           right->prefill_tokens.load(std::memory_order_relaxed);
  });
  for (upstream::Backend* backend : order)
    if (backend->try_acquire()) return upstream::Slot{backend, false, prompt_tokens};
  return {};
}

/// The rest of a response whose header `attempt` holds, whole (at most kMaxPrefillAnswer bytes,
/// each read within `idle`); nullopt when it broke, timed out or was longer.
net::awaitable<std::optional<std::string>> read_answer(Attempt& attempt,
                                                       std::chrono::milliseconds idle) {
  UpstreamResponse& parser = *attempt.parser;
  upstream::BackendConnection& connection = *attempt.up;
  std::string answer;
  std::array<char, 16 * 1024> piece;
  while (!parser.is_done()) {
    boost::system::error_code error;
    if (connection.buf.size() > 0) {
      parser.body_buffer(piece.data(), piece.size());
      const Fed fed = feed(parser, connection.buf, error);
      answer.append(piece.data(), piece.size() - parser.body_room());
      if (fed == Fed::error || answer.size() > kMaxPrefillAnswer) co_return std::nullopt;
      if (fed != Fed::need_more) continue;
    }
    connection.dl.arm(idle, /*close_on_expiry=*/true);
    const auto room = connection.buf.prepare(16 * 1024);
    auto [read_error, bytes] = co_await connection.sock.async_read_some(room, use_tuple);
    connection.dl.disarm();
    connection.buf.commit(bytes);
    if (read_error == net::error::eof) {
      parser.put_eof(error);
      if (error || !parser.is_done()) co_return std::nullopt;
      break;
    }
    if (read_error) co_return std::nullopt;
  }
  co_return answer;
}

}  // namespace

bool disaggregates(const RouteRuntime& route, const Request& req, const BodyFields& fields) {
  const config::Disaggregation& settings = route.cfg->disaggregation;
  if (!settings.enabled() || !fields.parsed || req.method() != bhttp::verb::post ||
      !disaggregated_path(req.path()) || route.prefillers.empty())
    return false;
  if (settings.mode == config::Disaggregation::Mode::always) return true;
  // auto: a long uncached prompt, and room on the prefill side.
  std::int64_t queued = 0;
  for (const upstream::Backend* backend : route.prefillers)
    queued += backend->prefill_tokens.load(std::memory_order_relaxed);
  if (queued >= settings.max_queued_prefill_tokens) return false;
  thread_local std::string prompt;
  prompt.clear();
  read_prompt_text(req.body(), prompt);
  const auto prompt_tokens = static_cast<double>(Tokenizer::count(prompt));
  if (prompt_tokens <= static_cast<double>(settings.threshold_tokens)) return false;
  policy::PickContext context;
  context.route = route.cfg->name;
  context.prompt = prompt;
  // What a backend that answers (not prefill-only) most likely has cached already.
  std::vector<upstream::Backend*> answering;
  for (upstream::Backend* backend : route.backends)
    if (!route.prefill_only.contains(*backend)) answering.push_back(backend);
  const double cached = route.policy->cached_share(context, answering);
  return prompt_tokens * (1.0 - cached) > static_cast<double>(settings.threshold_tokens);
}

void serve_unified(const Fleet& fleet, const Request& req, const BodyFields& fields,
                   UsageRequest& usage) {
  usage = fleet.cfg.metrics.stream_usage
              ? ask_for_usage(req.method_string(), req.path(), req.body(), fields)
              : UsageRequest{};
}

std::optional<std::string> prefill_body(std::string_view client_body) {
  std::optional<json::object> body = parse_object(client_body);
  if (!body) return std::nullopt;
  body->insert_or_assign("kv_transfer_params", json::object{{"do_remote_decode", true},
                                                            {"do_remote_prefill", false},
                                                            {"remote_engine_id", nullptr},
                                                            {"remote_block_ids", nullptr},
                                                            {"remote_host", nullptr},
                                                            {"remote_port", nullptr}});
  body->insert_or_assign("stream", false);
  body->insert_or_assign("max_tokens", 1);
  if (body->contains("max_completion_tokens")) body->insert_or_assign("max_completion_tokens", 1);
  for (std::string_view key : {"stream_options", "min_tokens", "min_completion_tokens"})
    body->erase(key);
  return json::serialize(*body);
}

std::optional<std::string> decode_body(std::string_view client_body,
                                       std::string_view kv_transfer_params, bool ask_usage) {
  std::optional<json::object> body = parse_object(client_body);
  if (!body) return std::nullopt;
  if (kv_transfer_params.empty()) {
    body->erase("kv_transfer_params");
  } else {
    boost::system::error_code error;
    json::value params = json::parse(kv_transfer_params, error);
    if (error) return std::nullopt;
    body->insert_or_assign("kv_transfer_params", std::move(params));
  }
  if (ask_usage) {
    json::value& options = (*body)["stream_options"];
    if (!options.is_object()) options = json::object{};
    options.as_object().insert_or_assign("include_usage", true);
  }
  return json::serialize(*body);
}

std::string kv_transfer_params_of(std::string_view prefill_answer) {
  const std::optional<json::object> answer = parse_object(prefill_answer);
  if (!answer) return {};
  const json::value* params = answer->if_contains("kv_transfer_params");
  if (!params || params->is_null()) return {};
  return json::serialize(*params);
}

net::awaitable<void> prefill_first(const Fleet& fleet, Worker& worker, const RouteRuntime& route,
                                   const Request& req, const BodyFields& fields,
                                   ClientConnection& client, const std::string& request_id,
                                   UsageRequest& decode, upstream::TriedSet& tried,
                                   AccessRecord& rec) {
  const std::optional<std::string> body = prefill_body(req.body());
  if (!body) co_return;
  const std::int64_t started = mono_ns();
  const auto prompt_tokens = static_cast<std::int64_t>(fields.body_bytes / 4);
  upstream::TriedSet prefill_tried;
  std::string kv_transfer_params;
  bool prefilled = false;
  for (int attempt_number = 0; attempt_number < kPrefillAttempts && !prefilled; ++attempt_number) {
    upstream::Slot slot = take_prefill_backend(route, prefill_tried, prompt_tokens);
    if (!slot) break;
    upstream::Backend& backend = *slot.backend();
    prefill_tried.add(backend);
    backend.prefill_tokens.fetch_add(prompt_tokens, std::memory_order_relaxed);
    UsageRequest prefill;
    prefill.asked = true;
    prefill.owned = *body;
    upstream::Outcome outcome;
    const std::int64_t attempt_start = mono_ns();
    Attempt attempt = co_await send(fleet, worker, backend, req, fields, client, request_id,
                                    prefill, /*queued=*/false, outcome);
    std::optional<std::string> answer;
    if (attempt.up) {
      if (attempt.parser->status() == 200)
        answer = co_await read_answer(attempt, fleet.cfg.timeouts.idle);
      if (!answer) {
        outcome.kind = upstream::Outcome::Kind::bad_response;
        outcome.status = attempt.parser->status();
        outcome.message =
            fmt::format("{} answered the prefill with {}", backend.name, outcome.status);
      }
    }
    backend.prefill_tokens.fetch_sub(prompt_tokens, std::memory_order_relaxed);
    client.watch.up = nullptr;
    const std::int64_t now = mono_ns();
    outcome.total = std::chrono::nanoseconds(now - attempt_start);
    if (answer && attempt.parser->keep_alive()) release(worker, backend, std::move(attempt.up));
    report_outcome(fleet, backend, nullptr, outcome, request_id, now);
    if (!answer) {
      spdlog::info("request {}: prefill on {} failed: {}", request_id, backend.name,
                   outcome.message);
      if (client.watch.client_gone) co_return;
      continue;
    }
    prefilled = true;
    kv_transfer_params = kv_transfer_params_of(*answer);
    const auto position = std::find(route.backends.begin(), route.backends.end(), &backend);
    rec.prefill_backend = static_cast<std::int8_t>(position - route.backends.begin());
    tried.add(backend);
  }
  rec.prefill_ms = static_cast<std::uint16_t>(
      std::min<std::int64_t>((mono_ns() - started) / 1'000'000, UINT16_MAX));
  if (!prefilled) {
    rec.prefill_backend = AccessRecord::kPrefillFailed;  // the decode backend does it all
    co_return;
  }
  // The decode leg asks for usage as the gateway asks every stream (stream_usage.hpp).
  const bool ask_usage =
      fleet.cfg.metrics.stream_usage && fields.stream && fields.include_usage != 1;
  std::optional<std::string> next = decode_body(req.body(), kv_transfer_params, ask_usage);
  if (!next) co_return;
  decode = UsageRequest{};
  decode.asked = true;
  decode.owned = std::move(*next);
}

}  // namespace llmux::gateway
