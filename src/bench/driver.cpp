// SPDX-License-Identifier: Apache-2.0
#include "bench/driver.hpp"

#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <random>

#include <fmt/format.h>

#include "core/clock.hpp"

namespace llmux::bench {
namespace {

namespace net = boost::asio;
namespace json = boost::json;

constexpr std::size_t kMaxErrorBody = 64 * 1024;

/// Per in-flight request state, reused from one request to the next.
struct Slot {
  Slot(net::any_io_executor executor, const RunOptions& opt)
      : conn(executor, opt.url, opt.client),
        // A replayed conversation sends the assistant's replies back: keep their text.
        interp(opt.body.dialect,
               opt.conversation.enabled() && opt.conversation.mode == ConversationMode::replay),
        headers(opt.headers) {
    if (opt.conversation.enabled()) {
      session_header = headers.size();
      headers.push_back(http::Header{"X-Session-ID", ""});
    }
    headers.push_back(http::Header{"X-Request-Id", ""});
    on_head = [this](int status, std::string_view content_type) {
      sse_mode = status >= 200 && status < 300 &&
                 content_type.find("text/event-stream") != std::string_view::npos;
    };
    on_body = [this](std::string_view bytes, std::int64_t t_ns) {
      if (!sse_mode) {
        if (body.size() < kMaxErrorBody * 64) body.append(bytes);
        return;
      }
      sse.feed(bytes, [&](const SseEvent& event) {
        const EventInfo info = interp.on_event(event);
        if (info.content && !cur->first_token_ns) cur->first_token_ns = t_ns;
        if (info.tokens > 0) cur->events.push_back(TokenEvent{t_ns, info.tokens});
      });
    };
  }
  http::Connection conn;
  SseParser sse;
  StreamInterpreter interp;
  std::string body;
  std::vector<http::Header> headers;
  http::HeadCallback on_head;
  http::BodyCallback on_body;
  RequestTiming* cur = nullptr;
  bool sse_mode = false;
  std::size_t session_header = 0;  ///< index of X-Session-ID in `headers` (conversations)
};

class Runner {
 public:
  Runner(const RunOptions& opt, const LoadSpec& spec, std::span<const PromptItem> prompts)
      : opt_(opt), spec_(spec), prompts_(prompts), slot_free_(ioc_), progress_timer_(ioc_) {
    if (!opt.conversation.enabled()) {
      bodies_.reserve(prompts.size());
      for (const auto& prompt : prompts) bodies_.push_back(build_body(prompt, opt.body));
    }
    target_ = std::string(endpoint_path(opt.body.dialect));
    limit_ = spec.num_requests ? spec.num_requests + spec.warmup_requests : 0;
    if (spec.burst) limit_ = spec.concurrency;
  }

  RunResult run() {
    t0_ = mono_ns();
    const double warm_s = spec_.warmup_s;
    warmup_end_ns_ = warm_s > 0 ? t0_ + static_cast<std::int64_t>(warm_s * 1e9) : 0;
    stop_ns_ = spec_.duration_s > 0
                   ? t0_ + static_cast<std::int64_t>((warm_s + spec_.duration_s) * 1e9)
                   : 0;
    if (spec_.mode == LoadSpec::Mode::open && spec_.request_rate > 0 &&
        !opt_.conversation.enabled()) {
      net::co_spawn(ioc_, generator(), net::detached);
    } else {
      const std::size_t worker_count = std::max<std::size_t>(1, spec_.concurrency);
      workers_ = worker_count;
      for (std::size_t i = 0; i < worker_count; ++i) {
        slots_.push_back(std::make_unique<Slot>(ioc_.get_executor(), opt_));
        if (opt_.conversation.enabled())
          net::co_spawn(ioc_, conversation(*slots_.back(), i), net::detached);
        else
          net::co_spawn(ioc_, worker(*slots_.back()), net::detached);
      }
      if (opt_.conversation.enabled()) conversation_total_ = worker_count * opt_.conversation.turns;
    }
    if (opt_.progress) net::co_spawn(ioc_, progress(), net::detached);
    ioc_.run();
    if (opt_.progress) std::fprintf(stderr, "\r\033[K");

    RunResult res;
    res.records.assign(std::make_move_iterator(records_.begin()),
                       std::make_move_iterator(records_.end()));
    std::sort(res.records.begin(), res.records.end(),
              [](const Record& left, const Record& right) { return left.index < right.index; });
    std::int64_t first = 0, last = 0;
    for (const Record& record : res.records) {
      if (record.warmup) continue;
      if (!first || record.t.start_ns < first) first = record.t.start_ns;
      last = std::max(last, record.t.end_ns);
    }
    res.wall_s = first ? static_cast<double>(last - first) * 1e-9 : 0;
    for (const auto& slot : slots_) res.connections += slot->conn.connects();
    for (const auto& slot : free_) res.connections += slot->conn.connects();
    res.max_in_flight = max_in_flight_;
    return res;
  }

 private:
  bool may_start() const {
    if (limit_ && started_ >= limit_) return false;
    if (stop_ns_ && mono_ns() >= stop_ns_) return false;
    if (!limit_ && !stop_ns_ && !opt_.conversation.enabled() &&
        started_ >= std::max<std::size_t>(1, spec_.concurrency))
      return false;  // no bound given: one round (a conversation is bounded by its turns)
    return true;
  }

  /// Sends `body` (prompt `prompt`'s) as request `idx` and records it.
  net::awaitable<Record*> one(Slot& slot, std::size_t idx, std::size_t prompt,
                              const std::string& body) {
    Record& rec = records_.emplace_back();
    rec.index = idx;
    rec.prompt = prompt;
    rec.request_id = fmt::format("{}-{}", opt_.request_id_prefix, idx);
    slot.headers.back().value = rec.request_id;
    slot.sse.reset();
    slot.interp.reset();
    slot.body.clear();
    slot.sse_mode = false;
    slot.cur = &rec.t;
    http::RequestSpec req;
    req.method = "POST";
    req.target = target_;
    req.body = body;
    req.headers = slot.headers;
    req.capture_header = "X-Llmux-Backend";
    ++in_flight_;
    max_in_flight_ = std::max(max_in_flight_, in_flight_);
    http::Response response = co_await slot.conn.request(req, slot.on_head, slot.on_body);
    --in_flight_;
    RequestTiming& timing = rec.t;
    timing.start_ns = response.start_ns;
    if (response.first_byte_ns) timing.first_byte_ns = response.first_byte_ns;
    timing.end_ns = response.end_ns;
    timing.backend = std::move(response.captured);
    if (!slot.sse_mode && !slot.body.empty()) {
      const EventInfo info = slot.interp.on_body(slot.body);
      if (response.status >= 200 && response.status < 300 &&
          !slot.interp.usage().completion_tokens && info.tokens)
        timing.events.push_back(TokenEvent{timing.end_ns, info.tokens});
    }
    classify(response, slot.sse_mode, slot.interp, slot.sse.failed(), timing);
    rec.response_id = slot.interp.id();
    rec.warmup =
        idx < spec_.warmup_requests || (warmup_end_ns_ && timing.start_ns < warmup_end_ns_);
    if (timing.ok()) {
      ++ok_;
      tokens_ += timing.output_tokens.value_or(0);
    } else {
      ++failed_;
    }
    slot.cur = nullptr;
    co_return &rec;
  }

  net::awaitable<void> one_of_prompts(Slot& slot, std::size_t idx) {
    const std::size_t prompt_index = idx % prompts_.size();
    co_await one(slot, idx, prompt_index, bodies_[prompt_index]);
  }

  net::awaitable<void> worker(Slot& slot) {
    while (may_start()) co_await one_of_prompts(slot, started_++);
    if (--workers_ == 0) finish();
  }

  /// User `user`'s conversation: its turns one after the other.
  net::awaitable<void> conversation(Slot& slot, std::size_t user) {
    const ConversationSpec& conversation_spec = opt_.conversation;
    Conversation user_conversation;
    user_conversation.key = fmt::format("{}-{}", conversation_spec.key_prefix, user);
    slot.headers[slot.session_header].value = user_conversation.key;
    for (std::size_t k = 0; k < conversation_spec.turns && may_start(); ++k) {
      const std::size_t prompt_index = (user * conversation_spec.turns + k) % prompts_.size();
      const PromptItem& item = prompts_[prompt_index];
      if (k == 0) user_conversation.system = item.system;
      const std::string body =
          build_turn_body(user_conversation, item, conversation_spec.mode, opt_.body);
      Record& rec = *co_await one(slot, started_++, prompt_index, body);
      rec.user = user;
      rec.turn = k + 1;
      rec.session = user_conversation.key;
      std::string reply;
      if (rec.t.ok() && conversation_spec.mode == ConversationMode::replay) {
        reply = slot.interp.text();
        if (reply.empty())
          reply = stand_in_reply(derive(rec.t).output_tokens, user * conversation_spec.turns + k);
      }
      const bool ok = rec.t.ok();
      finish_turn(user_conversation, item, ok, rec.response_id, std::move(reply));
      if (!ok && conversation_spec.error_pause_s > 0) {
        net::steady_timer pause(
            ioc_, std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::duration<double>(conversation_spec.error_pause_s)));
        co_await pause.async_wait(net::as_tuple(net::use_awaitable));
      }
    }
    if (--workers_ == 0) finish();
  }

  net::awaitable<void> open_one(std::unique_ptr<Slot> slot, std::size_t idx) {
    co_await one_of_prompts(*slot, idx);
    free_.push_back(std::move(slot));
    slot_free_.cancel();
    if (generator_done_ && in_flight_ == 0) finish();
  }

  net::awaitable<void> generator() {
    std::mt19937_64 rng(spec_.seed);
    std::exponential_distribution<double> gap(spec_.request_rate);
    net::steady_timer timer(ioc_);
    double next_s = 0;
    const std::size_t cap = spec_.concurrency;
    while (may_start()) {
      next_s += gap(rng);
      timer.expires_at(net::steady_timer::time_point(
          std::chrono::nanoseconds(t0_ + static_cast<std::int64_t>(next_s * 1e9))));
      co_await timer.async_wait(net::as_tuple(net::use_awaitable));
      while (cap && in_flight_ >= cap) {
        slot_free_.expires_at(net::steady_timer::time_point::max());
        co_await slot_free_.async_wait(net::as_tuple(net::use_awaitable));
      }
      if (!may_start()) break;
      std::unique_ptr<Slot> slot;
      if (!free_.empty()) {
        slot = std::move(free_.back());
        free_.pop_back();
      } else {
        slot = std::make_unique<Slot>(ioc_.get_executor(), opt_);
      }
      net::co_spawn(ioc_, open_one(std::move(slot), started_++), net::detached);
    }
    generator_done_ = true;
    if (in_flight_ == 0) finish();
  }

  void finish() {
    done_ = true;
    progress_timer_.cancel();
  }

  net::awaitable<void> progress() {
    while (!done_) {
      progress_timer_.expires_after(std::chrono::milliseconds(500));
      co_await progress_timer_.async_wait(net::as_tuple(net::use_awaitable));
      if (done_) break;
      const double elapsed_s = static_cast<double>(mono_ns() - t0_) * 1e-9;
      const std::size_t bound = limit_ && conversation_total_
                                    ? std::min(limit_, conversation_total_)
                                    : std::max(limit_, conversation_total_);
      std::string total = bound ? fmt::format("/{}", bound) : "";
      std::fprintf(stderr, "\r\033[K%s %zu%s done, %zu in flight, %zu failed, %.1fs, %.0f tok/s",
                   opt_.label.c_str(), ok_ + failed_, total.c_str(), in_flight_, failed_, elapsed_s,
                   elapsed_s > 0 ? tokens_ / elapsed_s : 0.0);
      std::fflush(stderr);
    }
  }

  const RunOptions& opt_;
  const LoadSpec& spec_;
  std::span<const PromptItem> prompts_;
  net::io_context ioc_{1};
  std::vector<std::string> bodies_;
  std::string target_;
  std::deque<Record> records_;
  std::vector<std::unique_ptr<Slot>> slots_, free_;
  net::steady_timer slot_free_, progress_timer_;
  std::size_t limit_ = 0, started_ = 0, in_flight_ = 0, max_in_flight_ = 0, workers_ = 0;
  std::size_t ok_ = 0, failed_ = 0, conversation_total_ = 0;
  std::uint64_t tokens_ = 0;
  std::int64_t t0_ = 0, warmup_end_ns_ = 0, stop_ns_ = 0;
  bool generator_done_ = false, done_ = false;
};

}  // namespace

std::vector<RequestTiming> RunResult::measured() const {
  std::vector<RequestTiming> out;
  out.reserve(records.size());
  for (const Record& record : records)
    if (!record.warmup) out.push_back(record.t);
  return out;
}

RunResult run_load(const RunOptions& opt, const LoadSpec& spec,
                   std::span<const PromptItem> prompts) {
  if (prompts.empty()) return {};
  Runner runner(opt, spec, prompts);
  return runner.run();
}

void classify(const http::Response& response, bool stream, const StreamInterpreter& interp,
              bool sse_failed, RequestTiming& timing) {
  timing.http_status = response.status;
  const StreamUsage& usage = interp.usage();
  if (usage.completion_tokens) timing.output_tokens = usage.completion_tokens;
  if (usage.prompt_tokens) timing.prompt_tokens = usage.prompt_tokens;
  if (usage.cached_tokens) timing.cached_tokens = usage.cached_tokens;
  const auto& err = interp.error();
  if (response.status != 0 && (response.status < 200 || response.status >= 300)) {
    timing.error = ErrorKind::http_status;
    timing.error_message = err ? fmt::format("HTTP {}: {}", response.status, err->message)
                               : fmt::format("HTTP {}", response.status);
    return;
  }
  if (err && stream) {
    timing.error = ErrorKind::error_event;
    timing.error_message = err->message;
    return;
  }
  switch (response.failure) {
    case http::Failure::none:
      break;
    case http::Failure::connect:
    case http::Failure::send:
      timing.error = ErrorKind::connect;
      timing.error_message = response.message;
      return;
    case http::Failure::timeout:
      timing.error = ErrorKind::timeout;
      timing.error_message = response.message;
      return;
    case http::Failure::closed:
      timing.error = response.status ? ErrorKind::broken_stream : ErrorKind::connect;
      timing.error_message = response.message;
      return;
    case http::Failure::protocol:
      timing.error = ErrorKind::malformed;
      timing.error_message = response.message;
      return;
  }
  if (sse_failed) {
    timing.error = ErrorKind::malformed;
    timing.error_message = "SSE line or event over the size limit";
    return;
  }
  if (stream && !interp.done()) {
    timing.error = ErrorKind::broken_stream;
    timing.error_message = "the stream ended without its end marker";
    return;
  }
  if (!stream && err) {
    timing.error = ErrorKind::error_event;
    timing.error_message = err->message;
  }
}

std::string discover_model(const http::Url& url, std::string* error,
                           const http::ClientOptions& client,
                           std::span<const http::Header> headers) {
  http::RequestSpec req;
  req.method = "GET";
  req.target = "/v1/models";
  req.headers = headers;
  auto res =
      http::fetch_blocking(url, req, std::chrono::seconds(10), client.tls, client.tls_verify);
  auto fail = [&](std::string msg) {
    if (error) *error = std::move(msg);
    return std::string();
  };
  if (res.result.failure != http::Failure::none) return fail(res.result.message);
  if (res.result.status != 200)
    return fail(fmt::format("GET /v1/models answered {}", res.result.status));
  boost::system::error_code ec;
  json::value document = json::parse(res.body, ec);
  if (ec || !document.is_object()) return fail("GET /v1/models: not JSON");
  const json::value* data = document.get_object().if_contains("data");
  if (!data || !data->is_array() || data->get_array().empty())
    return fail("GET /v1/models: no models");
  const json::value& model = data->get_array().front();
  if (!model.is_object() || !model.get_object().contains("id") ||
      !model.get_object().at("id").is_string())
    return fail("GET /v1/models: no model id");
  return std::string(model.get_object().at("id").get_string());
}

GroundTruthCheck check_against_sim(const http::Url& url, std::span<const Record> records,
                                   std::size_t max_requests, const http::ClientOptions& client) {
  GroundTruthCheck out;
  net::io_context ioc{1};
  http::ClientOptions copt;
  copt.tls = client.tls;
  copt.tls_verify = client.tls_verify;
  copt.timeouts.total = std::chrono::seconds(10);
  http::Connection conn(ioc.get_executor(), url, copt);
  net::co_spawn(
      ioc,
      [&]() -> net::awaitable<void> {
        for (const Record& rec : records) {
          if (out.requests >= max_requests) break;
          const RequestTiming& timing = rec.t;
          if (rec.warmup || !timing.ok() || !timing.first_token_ns || timing.events.empty())
            continue;
          const std::string target = "/debug/requests/" + rec.request_id;
          http::RequestSpec req;
          req.method = "GET";
          req.target = target;
          auto res = co_await http::fetch(conn, req);
          if (res.result.status != 200) {
            ++out.missing;
            continue;
          }
          boost::system::error_code ec;
          json::value document = json::parse(res.body, ec);
          if (ec || !document.is_object()) {
            ++out.missing;
            continue;
          }
          const auto& sim_record = document.get_object();
          const auto* tok = sim_record.if_contains("token_ns");
          const auto* arr = sim_record.if_contains("arrival_ns");
          if (!tok || !tok->is_array() || tok->get_array().empty() || !arr) {
            ++out.missing;
            continue;
          }
          ++out.requests;
          std::vector<std::int64_t> sim;
          for (const auto& token_ns : tok->get_array())
            sim.push_back(json::value_to<std::int64_t>(token_ns));
          const std::int64_t arrival = json::value_to<std::int64_t>(*arr);
          const double client_ttft =
              static_cast<double>(*timing.first_token_ns - timing.start_ns) * 1e-9;
          const double sim_ttft = static_cast<double>(sim.front() - arrival) * 1e-9;
          out.ttft_err_s.push_back(client_ttft - sim_ttft);
          out.request_delay_s.push_back(static_cast<double>(arrival - timing.start_ns) * 1e-9);
          std::vector<std::int64_t> client_ns;
          for (const TokenEvent& event : timing.events)
            for (std::uint32_t k = 0; k < event.tokens; ++k) client_ns.push_back(event.time_ns);
          const std::size_t compared = std::min(client_ns.size(), sim.size());
          for (std::size_t j = 0; j < compared; ++j) {
            out.token_err_s.push_back(static_cast<double>(client_ns[j] - sim[j]) * 1e-9);
            if (j > 0)
              out.itl_err_s.push_back(
                  static_cast<double>((client_ns[j] - client_ns[j - 1]) - (sim[j] - sim[j - 1])) *
                  1e-9);
          }
        }
      },
      net::detached);
  ioc.run();
  return out;
}

RunResult merge_concurrent(std::vector<RunResult> parts) {
  RunResult out;
  for (auto& part : parts) {
    out.connections += part.connections;
    out.max_in_flight += part.max_in_flight;
    for (auto& record : part.records) out.records.push_back(std::move(record));
  }
  std::stable_sort(
      out.records.begin(), out.records.end(),
      [](const Record& left, const Record& right) { return left.t.start_ns < right.t.start_ns; });
  std::int64_t first = 0, last = 0;
  for (std::size_t i = 0; i < out.records.size(); ++i) {
    auto& record = out.records[i];
    record.index = i;
    if (record.warmup) continue;
    if (first == 0 || record.t.start_ns < first) first = record.t.start_ns;
    last = std::max(last, record.t.end_ns);
  }
  out.wall_s = last > first ? static_cast<double>(last - first) / 1e9 : 0.0;
  return out;
}

}  // namespace llmux::bench
