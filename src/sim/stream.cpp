// SPDX-License-Identifier: Apache-2.0
#include "sim/stream.hpp"

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include <fmt/format.h>

#include "core/clock.hpp"
#include "core/use_tuple.hpp"
#include "http/peer_watch.hpp"
#include "sim/faults.hpp"
#include "sim/frames.hpp"
#include "sim/messages_frames.hpp"

namespace llmux::sim {
namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
namespace json = boost::json;
using net::awaitable;
using namespace net::experimental::awaitable_operators;
using core::use_tuple;

std::string chunk_frame(std::string_view data) {
  return fmt::format("{:x}\r\n{}\r\n", data.size(), data);
}

/// The most a watch reads at once: bytes of a pipelined next request, kept in connection.buf.
constexpr std::size_t kStreamWatchRead = 4096;

awaitable<void> wait_finished(std::shared_ptr<Job> job) {
  while (!job->finished && !job->fault_close && !job->stalled && !job->aborted) {
    job->wake.expires_at(net::steady_timer::time_point::max());
    co_await job->wake.async_wait(use_tuple);
  }
}

awaitable<void> stream_writer(Conn& connection, std::shared_ptr<Job> job, bool chunked) {
  Timing& timing = *job->timing;
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
        timing.token_ns.push_back(now);
        if (job->stamped == 0) timing.first_token_ns = now;
      }
      auto [ec, n] = co_await net::async_write(connection.sock(), net::buffer(wire), use_tuple);
      if (ec) co_return;
      continue;
    }
    if (job->finished) {
      if (chunked) {
        auto [ec, n] = co_await net::async_write(
            connection.sock(), net::buffer(std::string_view("0\r\n\r\n")), use_tuple);
        if (ec) co_return;
      }
      timing.end_ns = mono_ns();
      co_return;
    }
    if (job->fault_close || job->aborted) co_return;
    if (job->stalled) {
      net::steady_timer forever(connection.sock().get_executor(),
                                net::steady_timer::time_point::max());
      co_await forever.async_wait(use_tuple);
      co_return;
    }
    job->wake.expires_at(net::steady_timer::time_point::max());
    co_await job->wake.async_wait(use_tuple);
  }
}

/// A finished job's OpenAI body (completions, chat, Responses).
std::string openai_body(const Job& job, const std::optional<TurnOutput>& turn,
                        const std::string& text) {
  switch (job.req.endpoint) {
    case Endpoint::Completions:
      return completion_body(job.meta, text, job.usage);
    case Endpoint::Chat:
      return turn ? chat_turn_body(job.meta, *turn, job.usage)
                  : chat_body(job.meta, text, job.usage);
    case Endpoint::Responses:
      return json::serialize(response_object(job.meta, job.req, finished_status(job.meta), text,
                                             job.usage, turn ? &*turn : nullptr));
  }
  return {};
}

}  // namespace

awaitable<void> plain_response(Conn& connection, Request& req, std::shared_ptr<Job> job,
                               EngineDriver& driver) {
  // Watch the client while the job runs: when it leaves, vLLM aborts the request. Bytes of a
  // pipelined next request stay in connection.buf and end the watch, not the wait.
  ::llmux::http::PeerWatch watch;
  watch.start(connection.sock(), connection.buf, kStreamWatchRead);
  auto which = co_await (wait_finished(job) || watch.until_gone());
  if (which.index() == 0 && !job->fault_close && job->stalled) {
    // Never answered: the connection is held until the client leaves (reading on after
    // pipelined bytes), and the job is not dropped.
    connection.keep_alive = false;
    if (!watch.active() && !watch.gone())
      watch.start(connection.sock(), connection.buf, kStreamWatchRead);
    co_await watch.until_gone();
  }
  co_await watch.stop(connection.sock());
  if (which.index() == 1) {  // the client left: vLLM aborts the request
    driver.drop(*job, "client_gone");
    connection.keep_alive = false;
    co_return;
  }
  if (job->fault_close || job->stalled) {
    connection.keep_alive = false;
    co_return;
  }
  if (job->aborted) {
    co_return co_await write_error(connection, 500, "The request was cancelled.", true, &req);
  }
  std::optional<TurnOutput> turn;
  if (job->turn_plan) turn = job->turn_plan->emitted(static_cast<std::size_t>(job->emitted));
  const std::string text = turn ? turn->text : job->text();
  std::string body;
  if (job->req.messages_api) {
    TurnOutput words;  // generated words: text only
    words.text = text;
    auto answer = messages_body(job->meta, turn ? *turn : words, job->usage);
    if (auto* error = std::get_if<ApiError>(&answer)) {
      job->timing->end_ns = mono_ns();
      co_return co_await write_api_error(connection, *error, req);
    }
    body = std::move(std::get<std::string>(answer));
  } else {
    body = openai_body(*job, turn, text);
  }
  malform_body(body, job->faults.malformed);
  co_await write_json(connection, 200, std::move(body), &req);
  job->timing->end_ns = mono_ns();
}

awaitable<void> stream_response(Conn& connection, Request& req, std::shared_ptr<Job> job,
                                EngineDriver& driver) {
  const bool chunked = req.version() >= 11;
  http::response<http::empty_body> res{http::status::ok, req.version()};
  common_headers(res, &req);
  res.set(http::field::content_type, "text/event-stream; charset=utf-8");
  res.set(http::field::cache_control, "no-cache");
  if (chunked) {
    res.chunked(true);
  } else {
    connection.keep_alive = false;
  }
  res.keep_alive(connection.keep_alive);
  http::response_serializer<http::empty_body> serializer{res};
  append_opening_frames(*job);
  auto [ec, n] = co_await http::async_write_header(connection.stream, serializer, use_tuple);
  if (ec) {
    driver.drop(*job, "client_gone");
    connection.keep_alive = false;
    co_return;
  }
  ::llmux::http::PeerWatch watch;
  watch.start(connection.sock(), connection.buf, kStreamWatchRead);
  auto which = co_await (stream_writer(connection, job, chunked) || watch.until_gone());
  co_await watch.stop(connection.sock());
  if (!job->finished) {
    // Client gone, write error, or a fault: stop generating now.
    if (job->in_engine || driver.tracks(job->seq))
      driver.drop(*job, which.index() == 1 ? "client_gone" : job->timing->outcome);
    connection.keep_alive = false;
  }
}

}  // namespace llmux::sim
