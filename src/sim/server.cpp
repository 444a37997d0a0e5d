// `llmux sim`'s server. One thread runs everything: the acceptor, every connection's coroutine
// and the engine driver, so nothing here takes a lock.
//
// Life of a generation request:
//   session() reads the request → handle_generate() validates it (sim/api) → a Job is created
//   and its sequence submitted to the Engine → the step timer fires at each step's absolute
//   deadline → on_step() completes the step and hands every token to its Job, which formats
//   the SSE frame and wakes the Job's writer → the writer sends it (one frame per token) while
//   a watcher notices a client that leaves (then the sequence is aborted at once).
#include "sim/server.hpp"

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include <csignal>
#include <deque>
#include <iostream>
#include <memory>
#include <random>
#include <unordered_map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/clock.hpp"
#include "core/ids.hpp"
#include "core/openai_error.hpp"
#include "http/linger.hpp"
#include "sim/api.hpp"
#include "sim/metrics.hpp"
#include "sim/textgen.hpp"

namespace llmux::sim {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = net::ip::tcp;
using net::awaitable;
using namespace net::experimental::awaitable_operators;
constexpr auto use_tuple = net::as_tuple(net::use_awaitable);

constexpr std::string_view kVersion = "0.11.0";  // the vLLM version whose dialect we speak

/// Faults that apply to one request (from flags, or the X-Llmux-Fault header).
struct RequestFaults {
  int error_status = 0;
  std::int64_t close_after = -1;
  std::int64_t stall_after = -1;
  double latency_ms = 0;
};

/// Ground truth of one request, served on /debug/requests (CLOCK_MONOTONIC nanoseconds).
struct Timing {
  std::string id, request_id;
  std::string endpoint;
  bool stream = false;
  std::int64_t arrival_ns = 0, scheduled_ns = 0, first_token_ns = 0, end_ns = 0;
  std::int64_t prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
  std::string finish_reason, outcome = "running";
  std::vector<std::int64_t> token_ns;        // when each token's frame went to the socket
  std::vector<std::int64_t> token_sched_ns;  // the engine deadline that produced it
};

struct Job {
  explicit Job(net::any_io_executor ex) : wake(ex, net::steady_timer::time_point::max()) {}
  std::uint64_t seq = 0;
  GenRequest req;
  ResponseMeta meta;
  std::vector<std::uint16_t> words;
  Usage usage;
  RequestFaults faults;
  std::string out;  // SSE bytes not yet written
  int emitted = 0, stamped = 0;
  std::int64_t seq_number = 0;  // Responses API event counter
  bool finished = false, aborted = false, fault_close = false, stalled = false;
  bool in_engine = false;
  std::int64_t last_emit_ns = 0;
  net::steady_timer wake;
  std::shared_ptr<Timing> timing;

  void notify() { wake.cancel(); }
  std::string text() const {
    std::string t;
    t.reserve(words.size() * 4);
    for (auto w : words) t += vocab_piece(w);
    return t;
  }
  std::string text_upto(int n) const {
    std::string t;
    for (int i = 0; i < n && i < static_cast<int>(words.size()); ++i) t += vocab_piece(words[i]);
    return t;
  }
};

struct StoredResponse {
  json::object response;
  std::vector<Message> conversation;
  bool background = false;
};

std::string chunk_frame(std::string_view data) {
  return fmt::format("{:x}\r\n{}\r\n", data.size(), data);
}

class Server {
 public:
  explicit Server(SimConfig cfg)
      : cfg_(std::move(cfg)),
        acceptor_(ioc_),
        engine_(cfg_.engine),
        step_timer_(ioc_),
        metrics_(cfg_.served_model_name, cfg_.max_model_len),
        base_ns_(mono_ns()),
        rng_(std::random_device{}()) {
    api_.served_model_name = cfg_.served_model_name;
    api_.max_model_len = cfg_.max_model_len;
    api_.lookup_conversation = [this](std::string_view id) -> std::optional<std::vector<Message>> {
      auto it = store_.find(std::string(id));
      if (it == store_.end()) return std::nullopt;
      return it->second.conversation;
    };
  }

  int run() {
    boost::system::error_code ec;
    auto addr = net::ip::make_address(cfg_.host, ec);
    if (ec) {
      spdlog::error("invalid --host '{}': {}", cfg_.host, ec.message());
      return 2;
    }
    tcp::endpoint ep(addr, static_cast<unsigned short>(cfg_.port));
    acceptor_.open(ep.protocol(), ec);
    if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(ep, ec);
    if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec) {
      spdlog::error("cannot listen on {}:{}: {}", cfg_.host, cfg_.port, ec.message());
      return 1;
    }
    const auto port = acceptor_.local_endpoint().port();
    net::signal_set signals(ioc_, SIGINT, SIGTERM);
    signals.async_wait([this](auto, int sig) {
      spdlog::info("signal {}: stopping", sig);
      ioc_.stop();
    });
    net::co_spawn(ioc_, accept_loop(), net::detached);
    spdlog::info(
        "llmux sim: serving {} on http://{}:{} (KV cache {} blocks = {} tokens, max_num_seqs {}, "
        "time scale {})",
        cfg_.served_model_name, cfg_.host, port, cfg_.engine.num_kv_blocks,
        cfg_.engine.num_kv_blocks * cfg_.engine.block_size, cfg_.engine.max_num_seqs,
        cfg_.time_scale);
    std::cout << fmt::format(R"({{"event":"ready","host":"{}","port":{},"pid":{}}})", cfg_.host,
                             port, ::getpid())
              << std::endl;
    ioc_.run();
    return 0;
  }

 private:
  // ---- time ----
  double model_now() const {
    return static_cast<double>(mono_ns() - base_ns_) * 1e-9 * cfg_.time_scale;
  }
  std::int64_t wall_ns(double model_s) const {
    return base_ns_ + static_cast<std::int64_t>(model_s / cfg_.time_scale * 1e9);
  }

  // ---- engine driver ----
  void arm() {
    if (timer_armed_) return;
    auto dl = engine_.deadline();
    if (!dl) return;
    timer_armed_ = true;
    step_timer_.expires_at(net::steady_timer::time_point(std::chrono::nanoseconds(wall_ns(*dl))));
    step_timer_.async_wait([this](boost::system::error_code) {
      timer_armed_ = false;
      on_step();
    });
  }

  void on_step() {
    auto dl = engine_.deadline();
    if (!dl) return;
    const std::int64_t due = wall_ns(*dl);
    const std::int64_t now = mono_ns();
    if (now < due) {  // woke early
      arm();
      return;
    }
    metrics_.engine_lag(static_cast<double>(now - due) * 1e-9);
    StepResult r = engine_.complete_step();
    for (auto id : r.scheduled) {
      auto it = jobs_.find(id);
      if (it != jobs_.end() && it->second->timing->scheduled_ns == 0)
        it->second->timing->scheduled_ns = wall_ns(r.start);
    }
    for (const TokenOut& t : r.tokens) {
      auto it = jobs_.find(t.id);
      if (it == jobs_.end()) continue;
      auto job = it->second;  // keep alive across erase
      on_token(*job, t, due, now);
    }
    metrics_.sync(engine_.stats());
    arm();
  }

  void on_token(Job& job, const TokenOut& t, std::int64_t due, std::int64_t now) {
    Timing& tm = *job.timing;
    if (t.index == 0) {
      job.usage.cached_tokens = t.cached_tokens;
      tm.cached_tokens = t.cached_tokens;
      if (tm.scheduled_ns == 0) tm.scheduled_ns = due;
      if (!job.req.stream) tm.first_token_ns = now;
      metrics_.ttft(static_cast<double>(now - tm.arrival_ns) * 1e-9);
    } else {
      metrics_.itl(static_cast<double>(now - job.last_emit_ns) * 1e-9);
    }
    job.last_emit_ns = now;
    job.emitted = t.index + 1;
    job.usage.completion_tokens = job.emitted;
    tm.token_sched_ns.push_back(due);
    if (job.req.stream) append_token_frame(job, t.index, t.last);
    if (t.last) {
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

  std::optional<Usage> continuous(const Job& job) const {
    if (!job.req.continuous_usage) return std::nullopt;
    return job.usage;
  }

  void append_token_frame(Job& job, int index, bool last) {
    const std::string_view piece = vocab_piece(job.words[index]);
    const std::string_view fr = last ? job.meta.finish_reason : std::string_view();
    switch (job.req.endpoint) {
      case Endpoint::Completions:
        job.out += completion_token_frame(job.meta, piece, fr, continuous(job));
        break;
      case Endpoint::Chat:
        job.out += chat_token_frame(job.meta, piece, fr, continuous(job));
        break;
      case Endpoint::Responses:
        job.out += fmt::format(
            "event: response.output_text.delta\ndata: {{\"content_index\":0,\"delta\":{},"
            "\"item_id\":\"{}\",\"logprobs\":[],\"output_index\":0,\"sequence_number\":{},"
            "\"type\":\"response.output_text.delta\"}}\n\n",
            json_quote(piece), job.meta.item_id, job.seq_number++);
        break;
    }
  }

  /// Removes a job from the engine (client left, or a fault) without finishing it.
  void drop(Job& job, std::string_view outcome) {
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

  void finish(Job& job, std::int64_t now) {
    job.finished = true;
    job.in_engine = false;
    jobs_.erase(job.seq);
    Timing& tm = *job.timing;
    tm.completion_tokens = job.emitted;
    tm.finish_reason = job.meta.finish_reason;
    tm.outcome = "ok";
    const double e2e = static_cast<double>(now - tm.arrival_ns) * 1e-9;
    const double queue =
        static_cast<double>(std::max<std::int64_t>(tm.scheduled_ns - tm.arrival_ns, 0)) * 1e-9;
    const std::int64_t first = tm.token_sched_ns.empty() ? now : tm.token_sched_ns.front();
    const double prefill =
        static_cast<double>(std::max<std::int64_t>(first - tm.scheduled_ns, 0)) * 1e-9;
    const double decode = static_cast<double>(std::max<std::int64_t>(now - first, 0)) * 1e-9;
    metrics_.request_done(job.meta.finish_reason, e2e, queue, prefill, decode,
                          job.usage.prompt_tokens, job.usage.completion_tokens);
    if (!job.req.stream) tm.end_ns = now;

    if (job.req.endpoint == Endpoint::Responses) {
      const std::string text = job.text();
      json::object resp = response_object(job.meta, job.req, "completed", text, job.usage);
      if (job.req.stream) {
        json::object part{{"annotations", json::array{}}, {"text", text}, {"type", "output_text"}};
        part["logprobs"] = nullptr;
        job.out += responses_event("response.output_text.done",
                                   {{"content_index", 0},
                                    {"item_id", job.meta.item_id},
                                    {"logprobs", json::array{}},
                                    {"output_index", 0},
                                    {"text", text}},
                                   job.seq_number++);
        job.out += responses_event("response.content_part.done",
                                   {{"content_index", 0},
                                    {"item_id", job.meta.item_id},
                                    {"output_index", 0},
                                    {"part", part}},
                                   job.seq_number++);
        job.out += responses_event("response.output_item.done",
                                   {{"item", resp["output"].as_array().at(0)}, {"output_index", 0}},
                                   job.seq_number++);
        job.out += responses_event("response.completed", {{"response", resp}}, job.seq_number++);
      }
      if (job.req.store) {
        StoredResponse st;
        st.response = std::move(resp);
        st.conversation = job.req.conversation;
        st.conversation.push_back(Message{"assistant", text});
        st.background = job.req.background;
        put_store(job.meta.id, std::move(st));
      }
      background_.erase(job.meta.id);
    } else if (job.req.stream) {
      if (job.req.include_usage) job.out += usage_frame(job.meta, job.usage);
      job.out += done_frame();
    }
  }

  void put_store(const std::string& id, StoredResponse st) {
    auto [it, inserted] = store_.insert_or_assign(id, std::move(st));
    if (inserted) store_order_.push_back(id);
    while (store_.size() > cfg_.response_store_max && !store_order_.empty()) {
      store_.erase(store_order_.front());
      store_order_.pop_front();
    }
  }

  void remember(std::shared_ptr<Timing> t) {
    timings_.push_back(t);
    timings_by_id_[t->id] = t;
    if (!t->request_id.empty()) timings_by_id_[t->request_id] = t;
    while (timings_.size() > cfg_.debug_timings_max) {
      auto old = timings_.front();
      timings_.pop_front();
      auto it = timings_by_id_.find(old->id);
      if (it != timings_by_id_.end() && it->second == old) timings_by_id_.erase(it);
      it = timings_by_id_.find(old->request_id);
      if (it != timings_by_id_.end() && it->second == old) timings_by_id_.erase(it);
    }
  }

  // ---- networking ----
  awaitable<void> accept_loop() {
    for (;;) {
      auto [ec, sock] = co_await acceptor_.async_accept(use_tuple);
      if (ec) {
        if (ec == net::error::operation_aborted) co_return;
        spdlog::warn("accept: {}", ec.message());
        continue;
      }
      sock.set_option(tcp::no_delay(true), ec);
      net::co_spawn(ioc_, session(std::move(sock)), net::detached);
    }
  }

  using Request = http::request<http::string_body>;

  struct Conn {
    beast::tcp_stream stream;
    beast::flat_buffer buf;
    bool keep_alive = true;
    explicit Conn(tcp::socket s) : stream(std::move(s)) {}
    tcp::socket& sock() { return stream.socket(); }
  };

  awaitable<void> session(tcp::socket sock) {
    Conn c(std::move(sock));
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(64 * 1024);
      parser.body_limit(static_cast<std::uint64_t>(cfg_.max_body_bytes));
      c.stream.expires_after(std::chrono::seconds(600));
      auto [ec, n] = co_await http::async_read_header(c.stream, c.buf, parser, use_tuple);
      // Only an HTTP/1.1 client waits for `100 Continue` (RFC 9110 §10.1.1), and only while the
      // body is still to come.
      if (!ec && parser.get().version() >= 11 && !parser.is_done() &&
          beast::iequals(parser.get()[http::field::expect], "100-continue")) {
        co_await net::async_write(
            c.sock(), net::buffer(std::string_view("HTTP/1.1 100 Continue\r\n\r\n")), use_tuple);
      }
      if (!ec && !parser.is_done()) {
        std::tie(ec, n) = co_await http::async_read(c.stream, c.buf, parser, use_tuple);
      }
      if (ec) {
        if (ec == http::error::end_of_stream || ec == net::error::eof ||
            ec == beast::error::timeout || ec == net::error::connection_reset ||
            ec == net::error::operation_aborted)
          break;
        int status = 400;
        if (ec == http::error::body_limit) status = 413;
        if (ec == http::error::header_limit) status = 431;
        c.stream.expires_after(std::chrono::seconds(5));
        co_await write_error(c, status, fmt::format("malformed HTTP request: {}", ec.message()),
                             false);
        // The request was not read to its end: closing now, with the client's bytes unread,
        // would reset the connection and the client would never read this answer.
        c.stream.expires_never();
        co_await ::llmux::http::lingering_close(c.sock());
        co_return;
      }
      c.stream.expires_never();
      Request req = parser.release();
      c.keep_alive = req.keep_alive();
      co_await dispatch(c, req);
      if (!c.keep_alive) break;
    }
    boost::system::error_code ignored;
    c.sock().shutdown(tcp::socket::shutdown_send, ignored);
    c.sock().close(ignored);
  }

  template <typename Body>
  void common_headers(http::response<Body>& res, const Request* req) {
    res.set(http::field::server, "llmux-sim");
    if (req) {
      auto rid = (*req)["x-request-id"];
      if (!rid.empty()) res.set("x-request-id", rid);
    }
  }

  awaitable<void> write_body(Conn& c, int status, std::string body, std::string_view content_type,
                             const Request* req) {
    http::response<http::string_body> res{static_cast<http::status>(status),
                                          req ? req->version() : 11};
    common_headers(res, req);
    res.set(http::field::content_type, content_type);
    res.keep_alive(c.keep_alive);
    res.body() = std::move(body);
    res.prepare_payload();
    auto [ec, n] = co_await http::async_write(c.stream, res, use_tuple);
    if (ec) c.keep_alive = false;
  }

  awaitable<void> write_json(Conn& c, int status, std::string body, const Request* req) {
    co_await write_body(c, status, std::move(body), "application/json", req);
  }

  awaitable<void> write_error(Conn& c, int status, std::string_view message, bool keep,
                              const Request* req = nullptr, std::string_view type = {},
                              std::optional<std::string_view> param = std::nullopt) {
    if (!keep) c.keep_alive = false;
    co_await write_json(c, status, openai_error_json(status, message, type, param), req);
  }

  awaitable<void> write_api_error(Conn& c, const ApiError& e, const Request& req) {
    std::optional<std::string_view> param;
    if (e.param) param = *e.param;
    co_await write_error(c, e.status, e.message, true, &req, e.type, param);
  }

  awaitable<void> dispatch(Conn& c, Request& req) {
    const std::string_view target = req.target();
    const std::string_view path = target.substr(0, target.find('?'));
    const auto method = req.method();
    const bool get = method == http::verb::get, post = method == http::verb::post;
    if (path == "/v1/completions" || path == "/v1/chat/completions" || path == "/v1/responses") {
      if (!post) co_return co_await write_error(c, 405, "Method Not Allowed", true, &req);
      const Endpoint ep = path == "/v1/completions" ? Endpoint::Completions
                          : path == "/v1/responses" ? Endpoint::Responses
                                                    : Endpoint::Chat;
      co_return co_await handle_generate(c, req, ep);
    }
    if (path == "/health" && get)
      co_return co_await write_body(c, 200, "", "application/json", &req);
    if (path == "/version" && get)
      co_return co_await write_json(c, 200, fmt::format(R"({{"version":"{}"}})", kVersion), &req);
    if (path == "/v1/models" && get) co_return co_await write_json(c, 200, models_json(), &req);
    if (path == "/metrics" && get)
      co_return co_await write_body(c, 200, metrics_.serialize(),
                                    "text/plain; version=0.0.4; charset=utf-8", &req);
    if (path.starts_with("/v1/responses/")) {
      std::string_view rest = path.substr(std::string_view("/v1/responses/").size());
      if (rest.ends_with("/cancel") && post)
        co_return co_await cancel_response(c, req, rest.substr(0, rest.size() - 7));
      if (get && rest.find('/') == std::string_view::npos)
        co_return co_await get_response(c, req, rest);
    }
    if (path == "/debug/requests" && get)
      co_return co_await write_json(c, 200, debug_list(target), &req);
    if (path.starts_with("/debug/requests/") && get) {
      auto it = timings_by_id_.find(std::string(path.substr(16)));
      if (it == timings_by_id_.end())
        co_return co_await write_error(
            c, 404, fmt::format("No timing record for '{}'.", path.substr(16)), true, &req);
      co_return co_await write_json(c, 200, json::serialize(timing_json(*it->second)), &req);
    }
    co_await write_error(
        c, 404, fmt::format("Not Found: {} {}", std::string_view(req.method_string()), path), true,
        &req);
  }

  std::string models_json() const {
    const auto created = unix_time();
    return fmt::format(
        R"({{"object":"list","data":[{{"id":{},"object":"model","created":{},"owned_by":"vllm","root":{},"parent":null,"max_model_len":{},"permission":[{{"id":"{}","object":"model_permission","created":{},"allow_create_engine":false,"allow_sampling":true,"allow_logprobs":true,"allow_search_indices":false,"allow_view":true,"allow_fine_tuning":false,"organization":"*","group":null,"is_blocking":false}}]}}]}})",
        json_quote(cfg_.served_model_name), created, json_quote(cfg_.model_root),
        cfg_.max_model_len, random_id("modelperm-"), created);
  }

  static json::object timing_json(const Timing& t) {
    json::object o;
    o["id"] = t.id;
    o["request_id"] = t.request_id;
    o["endpoint"] = t.endpoint;
    o["stream"] = t.stream;
    o["clock"] = "CLOCK_MONOTONIC_ns";
    o["arrival_ns"] = t.arrival_ns;
    o["scheduled_ns"] = t.scheduled_ns;
    o["first_token_ns"] = t.first_token_ns;
    o["end_ns"] = t.end_ns;
    o["prompt_tokens"] = t.prompt_tokens;
    o["cached_tokens"] = t.cached_tokens;
    o["completion_tokens"] = t.completion_tokens;
    o["finish_reason"] = t.finish_reason;
    o["outcome"] = t.outcome;
    o["token_ns"] = json::value_from(t.token_ns);
    o["token_sched_ns"] = json::value_from(t.token_sched_ns);
    return o;
  }

  std::string debug_list(std::string_view target) const {
    std::size_t limit = 100;
    if (auto q = target.find("limit="); q != std::string_view::npos) {
      limit = std::strtoull(std::string(target.substr(q + 6)).c_str(), nullptr, 10);
    }
    json::array arr;
    std::size_t start = timings_.size() > limit ? timings_.size() - limit : 0;
    for (std::size_t i = start; i < timings_.size(); ++i) arr.push_back(timing_json(*timings_[i]));
    return json::serialize(json::object{{"object", "list"}, {"data", std::move(arr)}});
  }

  awaitable<void> get_response(Conn& c, Request& req, std::string_view id) {
    auto it = store_.find(std::string(id));
    if (it != store_.end())
      co_return co_await write_json(c, 200, json::serialize(it->second.response), &req);
    auto bg = background_.find(std::string(id));
    if (bg != background_.end()) {
      auto& job = *bg->second;
      const char* status = job.timing->scheduled_ns ? "in_progress" : "queued";
      co_return co_await write_json(
          c, 200, json::serialize(response_object(job.meta, job.req, status, "", std::nullopt)),
          &req);
    }
    co_await write_error(c, 404, fmt::format("Response with id '{}' not found.", id), true, &req,
                         "invalid_request_error");
  }

  awaitable<void> cancel_response(Conn& c, Request& req, std::string_view id) {
    auto bg = background_.find(std::string(id));
    if (bg != background_.end()) {
      auto job = bg->second;
      background_.erase(bg);
      drop(*job, "cancelled");
      job->aborted = true;
      json::object resp = response_object(job->meta, job->req, "cancelled", "", std::nullopt);
      StoredResponse st{resp, job->req.conversation, true};
      put_store(job->meta.id, std::move(st));
      co_return co_await write_json(c, 200, json::serialize(resp), &req);
    }
    if (store_.count(std::string(id)))
      co_return co_await write_error(c, 400, "Cannot cancel a synchronous response.", true, &req,
                                     "invalid_request_error");
    co_await write_error(c, 404, fmt::format("Response with id '{}' not found.", id), true, &req,
                         "invalid_request_error");
  }

  RequestFaults faults_for(const Request& req) {
    RequestFaults f;
    std::uniform_real_distribution<double> u(0.0, 1.0);
    const FaultConfig& fc = cfg_.faults;
    if (fc.error_rate > 0 && u(rng_) < fc.error_rate && !fc.error_statuses.empty())
      f.error_status = fc.error_statuses[rng_() % fc.error_statuses.size()];
    if (fc.close_after >= 0 && u(rng_) < fc.close_rate) f.close_after = fc.close_after;
    if (fc.stall_after >= 0 && u(rng_) < fc.stall_rate) f.stall_after = fc.stall_after;
    f.latency_ms = fc.added_latency_ms;
    // Per-request override: "X-Llmux-Fault: close-after=5, error=503, stall-after=2, latency-ms=50"
    std::string_view h = req["x-llmux-fault"];
    while (!h.empty()) {
      auto comma = h.find(',');
      std::string_view item = h.substr(0, comma);
      h = comma == std::string_view::npos ? std::string_view() : h.substr(comma + 1);
      while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
      auto eq = item.find('=');
      if (eq == std::string_view::npos) continue;
      std::string_view k = item.substr(0, eq);
      double v = std::strtod(std::string(item.substr(eq + 1)).c_str(), nullptr);
      if (k == "error")
        f.error_status = static_cast<int>(v);
      else if (k == "close-after")
        f.close_after = static_cast<std::int64_t>(v);
      else if (k == "stall-after")
        f.stall_after = static_cast<std::int64_t>(v);
      else if (k == "latency-ms")
        f.latency_ms = v;
    }
    return f;
  }

  awaitable<void> handle_generate(Conn& c, Request& req, Endpoint ep) {
    const std::int64_t arrival = mono_ns();
    auto parsed = parse_request(ep, req.body(), api_);
    if (auto* e = std::get_if<ApiError>(&parsed)) co_return co_await write_api_error(c, *e, req);
    GenRequest g = std::move(std::get<GenRequest>(parsed));
    auto maxv = effective_max_tokens(g, cfg_.max_model_len);
    if (auto* e = std::get_if<ApiError>(&maxv)) co_return co_await write_api_error(c, *e, req);
    const std::int64_t max_tokens = std::get<std::int64_t>(maxv);
    if (ep == Endpoint::Responses) g.max_tokens = max_tokens;  // echoed resolved, as vLLM does

    auto job = std::make_shared<Job>(ioc_.get_executor());
    job->faults = faults_for(req);
    if (job->faults.latency_ms > 0) {
      net::steady_timer t(ioc_, std::chrono::microseconds(
                                    static_cast<std::int64_t>(job->faults.latency_ms * 1000)));
      co_await t.async_wait(use_tuple);
    }
    if (job->faults.error_status >= 400) {
      co_return co_await write_error(
          c, job->faults.error_status,
          fmt::format("Simulated fault: the server answered {}.", job->faults.error_status), true,
          &req);
    }

    // Output: greedy decoding is a function of the prompt; sampling of the seed.
    const std::uint64_t prompt_hash = hash_tokens(g.prompt_ids);
    const std::uint64_t seed = g.temperature == 0.0 ? prompt_hash
                               : g.seed             ? *g.seed ^ prompt_hash
                                                    : rng_();
    const std::int64_t natural = cfg_.output_len.draw(seed | 1);
    std::int64_t n_out = max_tokens;
    std::string finish = "length";
    if (!g.ignore_eos && natural <= max_tokens) {
      n_out = natural;
      finish = "stop";
    }
    job->words = generate_words(seed, static_cast<std::size_t>(n_out));
    job->seq = next_seq_++;
    job->meta.endpoint = ep;
    job->meta.model = g.model;
    job->meta.created = unix_time();
    job->meta.finish_reason = finish;
    job->meta.id = ep == Endpoint::Completions ? random_id("cmpl-")
                   : ep == Endpoint::Chat      ? random_id("chatcmpl-")
                                               : random_id("resp_");
    job->meta.item_id = random_id("msg_");
    job->usage.prompt_tokens = static_cast<std::int64_t>(g.prompt_ids.size());
    job->req = std::move(g);
    auto& tm = *(job->timing = std::make_shared<Timing>());
    tm.id = job->meta.id;
    tm.request_id = std::string(req["x-request-id"]);
    tm.endpoint = std::string(req.target());
    tm.stream = job->req.stream;
    tm.arrival_ns = arrival;
    tm.prompt_tokens = job->usage.prompt_tokens;
    remember(job->timing);

    SeqRequest sr;
    sr.id = job->seq;
    sr.prompt = job->req.prompt_ids;
    sr.output.reserve(job->words.size());
    for (auto w : job->words) sr.output.push_back(vocab_id(w));
    if (!engine_.submit(std::move(sr), model_now())) {
      tm.outcome = "rejected";
      co_return co_await write_error(
          c, 400,
          fmt::format("The request needs {} tokens of KV cache but the cache holds only {}.",
                      job->usage.prompt_tokens + n_out,
                      cfg_.engine.num_kv_blocks * cfg_.engine.block_size),
          true, &req);
    }
    job->in_engine = true;
    jobs_[job->seq] = job;
    metrics_.sync(engine_.stats());
    arm();

    if (ep == Endpoint::Responses && job->req.background) {
      background_[job->meta.id] = job;
      co_return co_await write_json(
          c, 200, json::serialize(response_object(job->meta, job->req, "queued", "", std::nullopt)),
          &req);
    }
    if (job->req.stream) co_return co_await stream_response(c, req, job);
    co_await plain_response(c, req, job);
  }

  /// Completes when the client closes its side or the connection fails. Bytes of a pipelined
  /// next request are kept in the connection's buffer and stop the watch.
  awaitable<void> watch_disconnect(Conn& c) {
    auto [ec, n] = co_await c.sock().async_read_some(c.buf.prepare(4096), use_tuple);
    if (!ec) {
      c.buf.commit(n);
      net::steady_timer forever(c.sock().get_executor(), net::steady_timer::time_point::max());
      co_await forever.async_wait(use_tuple);
      co_return;
    }
    if (ec == net::error::operation_aborted) {
      net::steady_timer forever(c.sock().get_executor(), net::steady_timer::time_point::max());
      co_await forever.async_wait(use_tuple);
    }
  }

  awaitable<void> wait_finished(std::shared_ptr<Job> job) {
    while (!job->finished && !job->fault_close && !job->stalled && !job->aborted) {
      job->wake.expires_at(net::steady_timer::time_point::max());
      co_await job->wake.async_wait(use_tuple);
    }
  }

  awaitable<void> plain_response(Conn& c, Request& req, std::shared_ptr<Job> job) {
    auto which = co_await (wait_finished(job) || watch_disconnect(c));
    if (which.index() == 1) {  // the client left: vLLM aborts the request
      drop(*job, "client_gone");
      c.keep_alive = false;
      co_return;
    }
    if (job->fault_close) {
      c.keep_alive = false;
      co_return;
    }
    if (job->stalled) {
      c.keep_alive = false;
      co_await watch_disconnect(c);
      co_return;
    }
    if (job->aborted) {
      co_return co_await write_error(c, 500, "The request was cancelled.", true, &req);
    }
    const std::string text = job->text();
    std::string body;
    switch (job->req.endpoint) {
      case Endpoint::Completions:
        body = completion_body(job->meta, text, job->usage);
        break;
      case Endpoint::Chat:
        body = chat_body(job->meta, text, job->usage);
        break;
      case Endpoint::Responses:
        body = json::serialize(response_object(job->meta, job->req, "completed", text, job->usage));
        break;
    }
    co_await write_json(c, 200, std::move(body), &req);
    job->timing->end_ns = mono_ns();
  }

  awaitable<void> stream_writer(Conn& c, std::shared_ptr<Job> job, bool chunked) {
    Timing& tm = *job->timing;
    std::string wire;
    for (;;) {
      if (!job->out.empty()) {
        wire.clear();
        if (chunked) {
          wire = chunk_frame(job->out);
        } else {
          wire.swap(job->out);
        }
        job->out.clear();
        const std::int64_t now = mono_ns();
        for (; job->stamped < job->emitted; ++job->stamped) {
          tm.token_ns.push_back(now);
          if (job->stamped == 0) tm.first_token_ns = now;
        }
        auto [ec, n] = co_await net::async_write(c.sock(), net::buffer(wire), use_tuple);
        if (ec) co_return;
        continue;
      }
      if (job->finished) {
        if (chunked) {
          auto [ec, n] = co_await net::async_write(
              c.sock(), net::buffer(std::string_view("0\r\n\r\n")), use_tuple);
          if (ec) co_return;
        }
        tm.end_ns = mono_ns();
        co_return;
      }
      if (job->fault_close || job->aborted) co_return;
      if (job->stalled) {
        net::steady_timer forever(c.sock().get_executor(), net::steady_timer::time_point::max());
        co_await forever.async_wait(use_tuple);
        co_return;
      }
      job->wake.expires_at(net::steady_timer::time_point::max());
      co_await job->wake.async_wait(use_tuple);
    }
  }

  awaitable<void> stream_response(Conn& c, Request& req, std::shared_ptr<Job> job) {
    const bool chunked = req.version() >= 11;
    http::response<http::empty_body> res{http::status::ok, req.version()};
    common_headers(res, &req);
    res.set(http::field::content_type, "text/event-stream; charset=utf-8");
    res.set(http::field::cache_control, "no-cache");
    if (chunked) {
      res.chunked(true);
    } else {
      c.keep_alive = false;
    }
    res.keep_alive(c.keep_alive);
    http::response_serializer<http::empty_body> sr{res};
    // Opening frames.
    if (job->req.endpoint == Endpoint::Chat) {
      job->out += chat_role_frame(
          job->meta, job->req.continuous_usage ? std::optional<Usage>(job->usage) : std::nullopt);
    } else if (job->req.endpoint == Endpoint::Responses) {
      json::object initial = response_object(job->meta, job->req, "in_progress", "", std::nullopt);
      job->out += responses_event("response.created", {{"response", initial}}, job->seq_number++);
      job->out +=
          responses_event("response.in_progress", {{"response", initial}}, job->seq_number++);
      json::object item{{"id", job->meta.item_id},
                        {"content", json::array{}},
                        {"role", "assistant"},
                        {"status", "in_progress"},
                        {"type", "message"}};
      job->out += responses_event("response.output_item.added",
                                  {{"item", item}, {"output_index", 0}}, job->seq_number++);
      json::object part{{"annotations", json::array{}},
                        {"text", ""},
                        {"type", "output_text"},
                        {"logprobs", json::array{}}};
      job->out += responses_event("response.content_part.added",
                                  {{"content_index", 0},
                                   {"item_id", job->meta.item_id},
                                   {"output_index", 0},
                                   {"part", part}},
                                  job->seq_number++);
    }
    auto [ec, n] = co_await http::async_write_header(c.stream, sr, use_tuple);
    if (ec) {
      drop(*job, "client_gone");
      c.keep_alive = false;
      co_return;
    }
    auto which = co_await (stream_writer(c, job, chunked) || watch_disconnect(c));
    if (!job->finished) {
      // Client gone, write error, or a fault: stop generating now.
      if (job->in_engine || jobs_.count(job->seq))
        drop(*job, which.index() == 1 ? "client_gone" : job->timing->outcome);
      c.keep_alive = false;
    }
  }

  SimConfig cfg_;
  net::io_context ioc_{1};
  tcp::acceptor acceptor_;
  Engine engine_;
  net::steady_timer step_timer_;
  bool timer_armed_ = false;
  SimMetrics metrics_;
  std::int64_t base_ns_;
  std::mt19937_64 rng_;
  ApiContext api_;
  std::uint64_t next_seq_ = 1;
  std::unordered_map<std::uint64_t, std::shared_ptr<Job>> jobs_;
  std::unordered_map<std::string, std::shared_ptr<Job>> background_;
  std::unordered_map<std::string, StoredResponse> store_;
  std::deque<std::string> store_order_;
  std::deque<std::shared_ptr<Timing>> timings_;
  std::unordered_map<std::string, std::shared_ptr<Timing>> timings_by_id_;
};

}  // namespace

int run_server(SimConfig cfg) {
  Server s(std::move(cfg));
  return s.run();
}

}  // namespace llmux::sim
