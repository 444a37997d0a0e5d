// SPDX-License-Identifier: Apache-2.0
#include "gateway/relay.hpp"

#include <array>
#include <cstring>

#include <fmt/format.h>
#include <boost/asio/write.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/json.hpp>

#include "core/anthropic_error.hpp"
#include "core/clock.hpp"
#include "core/openai_error.hpp"
#include "gateway/health_checker.hpp"
#include "gateway/http_rules.hpp"
#include "gateway/relay_write.hpp"
#include "gateway/stream_usage.hpp"
#include "gateway/taps.hpp"
#include "gateway/upstream_body.hpp"
#include "upstream/stall.hpp"

namespace llmux::gateway {

std::string mid_stream_error_tail(openai::Dialect dialect, std::int64_t sequence_number,
                                  const std::string& message) {
  if (dialect == openai::Dialect::messages)
    return "event: error\ndata: " + anthropic_error_json(502, message) + "\n\n";
  if (dialect == openai::Dialect::responses) {
    boost::json::object event;
    event["type"] = "error";
    event["code"] = "upstream_error";
    event["message"] = message;
    event["param"] = nullptr;
    event["sequence_number"] = sequence_number;
    return "event: error\ndata: " + boost::json::serialize(event) + "\n\n";
  }
  return "data: " + openai_error_json(502, message) + "\n\ndata: [DONE]\n\n";
}

namespace {

/// How the relay ended, for the policy (a plain function: a coroutine's locals all live in its
/// frame, and a held-open stream should cost little).
void set_outcome(upstream::Outcome& outcome, const AccessRecord& rec, bool client_left,
                 bool upstream_failed, const std::string& upstream_error) {
  const auto ttfb = outcome.ttfb;  // the proxy's, at the response header
  outcome = upstream::Outcome{};
  outcome.ttfb = ttfb;
  outcome.status = rec.status;
  outcome.prompt_tokens = rec.prompt_tokens;
  outcome.completion_tokens = rec.completion_tokens;
  if (client_left) {
    outcome.kind = upstream::Outcome::Kind::client_left;
    outcome.message = rec.error;
  } else if (upstream_failed) {
    outcome.kind = upstream::Outcome::Kind::broken_mid_stream;
    outcome.message = upstream_error;
  }
}

/// A judged stream's wait ended with nothing (upstream/stall.hpp): false while it may wait on;
/// true when it ends, with `error` set when the backend stalled (recorded against it).
bool stalled(const Fleet& fleet, upstream::Backend& backend, const upstream::StallWatch& stall,
             std::string_view request_id, std::string& error) {
  std::string why;
  const auto verdict = stall.judge(mono_ns(), why);
  if (verdict == upstream::StallWatch::Verdict::wait) return false;
  if (verdict == upstream::StallWatch::Verdict::stalled) {
    error = fmt::format("{} stalled: {}", backend.name, why);
    if (auto event = upstream::record_stall(backend, mono_ns(), fleet.outlier, why))
      log_health_event(*event, request_id);
  }
  return true;
}

/// The most one read of the backend's socket takes.
constexpr std::size_t kMaxBackendRead = 64 * 1024;

/// The response header the client gets, and whether the gateway frames the body in chunks.
struct ClientHeader {
  ByteBuilder bytes;
  bool chunked = false;
};

/// The client's header: the status line and the backend's end-to-end fields (the parser wrote
/// them as it read them: gateway/upstream_response.hpp), then the gateway's own and the framing.
/// A worker-pooled builder, given back as soon as the header is out: a held-open stream keeps
/// no copy of its header. (Apart from relay(), whose coroutine frame keeps every local.)
ClientHeader client_header(const Request& req, UpstreamResponse& response,
                           const upstream::Backend& backend, const AccessRecord& record,
                           ClientConnection& client) {
  using namespace std::string_view_literals;
  ClientHeader header{std::move(response.header())};
  header.bytes.append("x-llmux-backend: "sv, backend.name, "\r\nx-request-id: "sv,
                      record.request_id, "\r\n"sv);
  if (record.queue_depth > 0) {
    char digits[16];
    const auto formatted = fmt::format_to_n(digits, sizeof digits, "{}", record.queue_depth);
    header.bytes.append("x-llmux-queue-depth: "sv, std::string_view(digits, formatted.size),
                        "\r\n"sv);
  }
  // The body is framed here (chunk size, data, CRLF) when the backend's is delimited otherwise
  // than by a length (chunked, or by the close): an HTTP/1.0 client gets it until the close.
  const bool head = req.method() == bhttp::verb::head;
  if (!response.has_content_length() && !head && !response.is_done() && record.status >= 200 &&
      record.status != 204 && record.status != 304) {
    if (req.version() >= 11) {
      header.chunked = true;
      header.bytes.append("Transfer-Encoding: chunked\r\n"sv);
    } else {
      client.keep_alive = false;
    }
  }
  if (!client.keep_alive)
    header.bytes.append("Connection: close\r\n"sv);
  else if (req.version() < 11)
    header.bytes.append("Connection: keep-alive\r\n"sv);
  header.bytes.append("\r\n"sv);
  return header;
}

/// A continuation leg's header: none (the client has the first leg's), the parser's given back;
/// the body framed in chunks, as only a chunked stream goes on elsewhere.
ClientHeader continued_header(Worker& worker, UpstreamResponse& response) {
  worker.give_bytes(std::move(response.header()));
  return ClientHeader{ByteBuilder(), true};
}

/// The stream's content tokens so far (`tokens`) to the policy's observer, when more than the
/// `told` before: the first ones as such, then each running count. Returns what it was told.
std::uint64_t tell_tokens(policy::AttemptObserver& observer, std::uint64_t tokens,
                          std::uint64_t told, std::int64_t now_ns) {
  if (tokens <= told) return told;
  if (told == 0)
    observer.on_first_token(tokens, now_ns);
  else
    observer.on_tokens(tokens, now_ns);
  return tokens;
}

/// A write's new content events (the `written` before it, now `events`; the previous one went
/// out at `last_content_ns`), written at `now`: to the metrics when `counting` — the first
/// token, the gaps after it, the tokens as they pass — and, where a route that hedges watches
/// the backend, its pace. A continuation leg's first events are neither a first token nor a gap
/// between two of one backend's. (A plain function: the relay's frame stays small.)
void count_content_events(metrics::WorkerMetrics& worker_metrics, bool counting,
                          upstream::Backend& backend, AccessRecord& rec, int& model_id,
                          bool continuation_begins, std::uint64_t written, std::uint64_t events,
                          std::int64_t last_content_ns, std::int64_t now) {
  const int mid = backend.metric_id;
  const std::uint64_t added = events - written;
  if (continuation_begins) {
    // (Counted below as tokens; no time.)
  } else if (written == 0) {
    if (counting) {
      worker_metrics.ttft[mid].record(metrics::bounds(metrics::HistKind::ttft),
                                      now - rec.received_ns);
      // Events that came in the same read as the first reach the client with it: no gap.
      if (events > 1)
        worker_metrics.itl[mid].record(metrics::bounds(metrics::HistKind::itl), 0, events - 1);
    }
  } else {
    const std::int64_t gap = (now - last_content_ns) / static_cast<std::int64_t>(added);
    if (counting)
      worker_metrics.itl[mid].record(metrics::bounds(metrics::HistKind::itl), gap, added);
    if (backend.observations.pace.watched()) backend.observations.pace.record(gap, added, now);
  }
  // Counted as they pass (the dashboard's tokens/s moves with the stream); the usage at the end
  // adds what events do not show (finish.cpp: finish).
  if (counting && rec.status >= 200 && rec.status < 300) {
    if (model_id < 0) model_id = metrics::names().models.id(rec.model);
    worker_metrics.count(metrics::Family::generation_tokens, mid, model_id, 0, added);
    rec.streamed_tokens += added;
  }
}

}  // namespace

net::awaitable<void> relay(const Fleet& fleet, Worker& worker, ClientConnection& client,
                           const Request& req, upstream::Backend& backend, Attempt& attempt,
                           AccessRecord& rec, upstream::Outcome& outcome,
                           state::ResponseStore* affinity_store, bool strip_usage) {
  using namespace std::string_view_literals;
  UpstreamResponse& parser = *attempt.parser;
  ResponseTap tap(dialect_of(rec.path), parser.content_type(), worker.json);
  const bool sse = tap.kind() == ResponseTap::Kind::sse;
  rec.status = parser.status();
  if (rec.status < 200 || rec.status > 299) affinity_store = nullptr;
  const bool head = req.method() == bhttp::verb::head;
  // A stream another backend may continue keeps what it generates; a continuation leg's client
  // has its header already, and its events are rewritten to read as the first leg's
  // (gateway/continuation.hpp).
  StreamContinuation* const continuation =
      sse && rec.status >= 200 && rec.status < 300 ? attempt.continuation : nullptr;
  if (continuation) tap.keep_generated(&continuation->generated());
  auto [header_bytes, chunked] = on_continuation_leg(continuation)
                                     ? continued_header(worker, parser)
                                     : client_header(req, parser, backend, rec, client);

  upstream::BackendConnection* connection = attempt.up.get();
  client.watch.up = connection;
  bool upstream_failed = false;
  std::string upstream_error;
  bool client_failed = false;
  std::uint64_t bytes_out = 0;
  const auto idle = fleet.cfg.timeouts.idle;
  // An event stream's reads are judged for a stalled backend (upstream/stall.hpp).
  upstream::StallWatch stall(
      backend,
      sse && fleet.outlier.enabled ? fleet.outlier.stall_timeout : std::chrono::milliseconds(0),
      idle);

  // What write_at_once() could not write at once, awaited (a slow client; TLS).
  std::string rest;
  boost::system::error_code wec;
  if (sse && !header_bytes.empty()) {
    // A stream's header goes out at once: the client sees the response begin (TTFB) even
    // while the first event is still being computed (a long prefill).
    write_at_once(client.sock, ClientWrite{.header = header_bytes.view()}, rest, wec);
    if (!wec && !rest.empty()) wec = co_await write_remainder(client, rest, idle);
    if (wec) client_failed = true;
    worker.give_bytes(std::move(header_bytes));
  }

  // The body passes through a worker's buffer. An event stream holds none while it waits for
  // its backend's next event: when everything read so far went out, its buffer goes back to the
  // worker, the parser's read buffer is freed, and it waits for the socket to become readable
  // (a held-open stream then costs its frames and sockets only).
  Worker::RelayBuf relay_buf;
  char* buf = nullptr;
  const std::size_t buf_size = sse ? Worker::kStreamBuf : Worker::kRelayBuf;
  Leftover leftover;
  std::size_t have = 0;
  std::string tail;       // the error event appended when the upstream dies mid-stream
  bool diverged = false;  // a replayed continuation said something else
  CutReason cut_reason = CutReason::broken;
  // Metrics: TTFT and inter-token latency as the client gets them (content events written), and
  // the relay's own delay (the read that completed what is written → its write done).
  metrics::WorkerMetrics& worker_metrics = *worker.worker_metrics;
  const bool counting = fleet.cfg.metrics.enabled;
  std::uint64_t events_written = 0;
  std::uint64_t tokens_told = 0;  // content tokens the policy's observer was told of
  std::int64_t last_content_ns = 0;
  std::int64_t read_ns = 0;   // when the last read with body bytes completed (metrics or SSE)
  std::int64_t wrote_ns = 0;  // when the last write completed (metrics on), else 0
  int model_id = -1;
  while (!client_failed && !head) {
    bool done = parser.is_done();
    if (!done) {
      boost::system::error_code ec;
      std::size_t got = 0;
      for (;;) {
        // What the parser's read buffer holds goes first; the socket is read only when the
        // parser needs more.
        if (connection->buf.size() > 0) {
          if (!buf) {
            relay_buf = worker.take_buf(sse);
            buf = relay_buf.data.get();
          }
          parser.body_buffer(buf + have, buf_size - have);
          const Fed fed = feed(parser, connection->buf, ec);
          got = (buf_size - have) - parser.body_room();
          if (fed != Fed::need_more) break;
        }
        // A stream being judged for a stall waits in short steps (its deadline cancels the
        // wait, which then goes on), and so does one another backend may continue: its backend
        // declared down meanwhile ends the wait. Any other wait has the idle timeout and is
        // closed by it.
        const bool judged = stall.active();
        const bool stepped = judged || continuation;
        connection->dl.arm(
            continuation ? std::min(stall.read_wait(), kDownCheckStep) : stall.read_wait(),
            /*close_on_expiry=*/!stepped);
        // (Not over TLS: bytes OpenSSL already decrypted would not make the socket readable.)
        if (sse && have == 0 && !connection->sock.tls() && park(connection->buf, leftover)) {
          if (buf) {
            worker.give_buf(std::move(relay_buf));
            buf = nullptr;
          }
          // The read buffer's memory goes to the worker while the stream waits, and the read
          // that ends the wait borrows one (no allocation per event). The wait re-arms nothing
          // (no system call: it is parked in the worker's ReadinessSet, http/readiness.hpp).
          worker.take_back_read_buf(connection->buf);
          std::tie(ec) = co_await connection->sock.async_wait_readable(use_tuple);
          worker.lend_read_buf(connection->buf);
          unpark(connection->buf, leftover);
        }
        if (!ec) {
          // What has arrived at once; else the read waits for the socket's next event (no
          // system call first when the socket is known to be drained: http/readiness.hpp).
          const auto room =
              connection->buf.prepare(beast::read_size(connection->buf, kMaxBackendRead));
          std::size_t bytes_read = 0;
          if (connection->sock.may_read_now()) bytes_read = connection->sock.read_now(room, ec);
          if (bytes_read == 0 && !ec)
            std::tie(ec, bytes_read) = co_await connection->sock.async_read_some(room, use_tuple);
          connection->buf.commit(bytes_read);
        }
        connection->dl.disarm();
        if (ec == net::error::eof) {
          // The backend closed: the end of a body delimited by the close, else a truncation.
          ec = {};
          parser.put_eof(ec);
          break;
        }
        if (!ec) continue;
        if (!stepped || !connection->dl.fired || client.watch.client_gone) break;
        const std::int64_t now = mono_ns();
        if (continuation && !backend.usable(now)) {
          // Declared down (ejected, failed checks) while this stream waited: another goes on.
          upstream_error =
              fmt::format("{} was declared down while the stream waited", backend.name);
          cut_reason = CutReason::ejected;
          break;
        }
        if (!judged) {
          // Silent since the last body bytes, or since the request went.
          if (now - std::max(read_ns, attempt.sent_ns) < std::chrono::nanoseconds(idle).count()) {
            ec = {};  // not yet: wait on
            continue;
          }
          break;  // silent for the idle timeout
        }
        if (!stalled(fleet, backend, stall, rec.request_id, upstream_error)) {
          ec = {};  // not yet: wait on
          continue;
        }
        break;
      }
      have += got;
      if (got > 0 && (counting || sse)) {
        read_ns = mono_ns();  // one clock read for the metrics, the stall watch and the policy
        if (sse) stall.on_bytes(read_ns);
      }
      if (ec) {
        upstream_failed = true;
        if (client.watch.client_gone) {
          upstream_error = "client left";
        } else if (connection->dl.fired && upstream_error.empty()) {
          upstream_error = fmt::format("{} sent nothing for {} ms", backend.name, idle.count());
          cut_reason = CutReason::idle;
        } else if (upstream_error.empty()) {
          upstream_error = fmt::format("{} failed mid-response: {}", backend.name, ec.message());
        } else if (cut_reason != CutReason::ejected) {
          cut_reason = CutReason::stalled;  // stalled() said why
        }
      }
      done = parser.is_done();
    }
    if (client.watch.client_gone) break;
    // SSE goes out event by event: everything up to the last complete event now, the rest
    // when it is complete.
    std::size_t cut = have;
    if (sse && !done) {
      cut = last_event_boundary(buf, have);
      if (cut == 0 && have == buf_size && !upstream_failed) cut = have;  // a giant event
    }
    tap.feed(std::string_view(buf, cut), done);
    // The response id is learned before the bytes that carry it go out: the client's next turn
    // may reach another worker as soon as it has them.
    if (affinity_store && !tap.reader().id().empty()) {
      affinity_store->record_owner(tap.reader().id(), backend.name);
      affinity_store = nullptr;
    }
    if (strip_usage && sse && cut > 0) {
      // The usage chunk the gateway asked for (gateway/stream_usage.hpp): counted by the tap,
      // not seen by the client.
      const ByteRange usage_event = find_usage_only_event(buf, cut);
      if (!usage_event.empty()) {
        std::memmove(buf + usage_event.begin, buf + usage_event.end, have - usage_event.end);
        have -= usage_event.end - usage_event.begin;
        cut -= usage_event.end - usage_event.begin;
        strip_usage = false;
      }
    }
    // The route's policy follows the stream's tokens (adaptive learns the decode rate), at the
    // read that completed the events: the bytes of an event are all read by then.
    if (attempt.observer && sse && cut > 0)
      tokens_told =
          tell_tokens(*attempt.observer, tap.reader().content_events(), tokens_told, read_ns);
    std::string_view body(buf, cut);
    if (on_continuation_leg(continuation) && cut > 0) {
      // A continuation leg's events, rewritten to read as the first leg's stream.
      if (!continuation->rewrite_events(body) && !upstream_failed) {
        upstream_failed = diverged = true;
        upstream_error =
            fmt::format("{} said something else than the stream it continued", backend.name);
      }
      body = continuation->rewritten();
    }
    const bool can_end_cleanly = upstream_failed && sse && chunked;
    // A broken stream that another backend can continue stays open for it.
    const bool goes_on_elsewhere = can_end_cleanly && continuation && !diverged &&
                                   !client.watch.client_gone &&
                                   continuation->cuts() < fleet.cfg.migration.max_migrations &&
                                   !continuation->why_not_continuable();
    if (can_end_cleanly && !goes_on_elsewhere) {
      tail = mid_stream_error_tail(
          tap.reader().dialect(), tap.next_sequence_number(),
          fmt::format("The upstream server failed mid-stream: {}.", upstream_error));
    }
    const bool last = done || can_end_cleanly;
    if (cut == 0 && tail.empty() && !last && !upstream_failed) continue;

    const bool last_chunk = last && chunked && !goes_on_elsewhere;
    if (!header_bytes.empty() || !body.empty() || !tail.empty() || last_chunk) {
      write_at_once(client.sock, ClientWrite{header_bytes.view(), chunked, body, tail, last_chunk},
                    rest, wec);
      if (!wec && !rest.empty()) wec = co_await write_remainder(client, rest, idle);
      if (wec) {
        client_failed = true;
        break;
      }
      bytes_out += body.size() + tail.size();
      // (A route that hedges times the backend's tokens too: upstream/decode_pace.hpp.)
      const std::int64_t now = counting || backend.observations.pace.watched() ? mono_ns() : 0;
      wrote_ns = now;
      if (counting && read_ns > 0)
        worker_metrics.relay_overhead.record(metrics::bounds(metrics::HistKind::relay_overhead),
                                             now - read_ns);
      if (const std::uint64_t content_events = tap.reader().content_events();
          now > 0 && sse && content_events > events_written) {
        count_content_events(worker_metrics, counting, backend, rec, model_id,
                             events_written == 0 && on_continuation_leg(continuation),
                             events_written, content_events, last_content_ns, now);
        events_written = content_events;
        last_content_ns = now;
      }
      if (!header_bytes.empty()) {
        worker.give_bytes(std::move(header_bytes));
      }
    }
    if (upstream_failed && !can_end_cleanly) {
      // A fixed-length or non-SSE body cannot be ended cleanly: close, so the client sees
      // the truncation.
      client.keep_alive = false;
      break;
    }
    if (goes_on_elsewhere) {
      continuation->cut(tap.reader().tokens(), cut_reason);
      attempt.continues_elsewhere = true;
    }
    if (last) break;
    if (cut < have) std::memmove(buf, buf + cut, have - cut);
    have -= cut;
  }
  if (!header_bytes.empty() && !client_failed && !client.watch.client_gone) {
    // Nothing of the body was written (HEAD, or an empty body): send the header alone.
    write_at_once(client.sock, ClientWrite{.header = header_bytes.view()}, rest, wec);
    if (!wec && !rest.empty()) wec = co_await write_remainder(client, rest, idle);
    if (wec) client_failed = true;
  }
  if (header_bytes.capacity() > 0) worker.give_bytes(std::move(header_bytes));
  stall.end();
  if (parser.is_done() && !upstream_failed && rec.status < 500)
    upstream::note_progress(backend, wrote_ns > 0 ? wrote_ns : mono_ns());
  parser.body_buffer(nullptr, 0);
  if (buf) worker.give_buf(std::move(relay_buf));
  client.watch.up = nullptr;  // from here on the connection may go back to the pool
  rec.bytes_out = bytes_out;
  rec.prompt_tokens = tap.prompt_tokens();
  rec.completion_tokens = tap.completion_tokens();
  rec.cached_tokens = tap.cached_tokens();
  if (client.watch.client_gone || client_failed) {
    rec.error = "client left before the response ended";
    client.keep_alive = false;
  } else if (upstream_failed) {
    rec.error = upstream_error;
  }
  // Reusable only when the exchange ended cleanly on both sides and the response neither ended
  // by close nor asked for it (the parser's keep_alive() says both): the caller gives it back.
  if (!parser.is_done() || upstream_failed || client.watch.client_gone || !parser.keep_alive()) {
    boost::system::error_code ignored;
    attempt.up->sock.close(ignored);
    attempt.up.reset();
  }
  set_outcome(outcome, rec, client.watch.client_gone || client_failed, upstream_failed,
              upstream_error);
}

}  // namespace llmux::gateway
