// SPDX-License-Identifier: Apache-2.0
#pragma once
// Delivering a Job's output on its connection while watching for a client that leaves (then the
// sequence is aborted at once, as vLLM does): the non-streaming answer, and the streaming writer
// that sends one SSE frame per token as the engine driver produces them.
#include <boost/asio/awaitable.hpp>

#include <memory>

#include "sim/driver.hpp"
#include "sim/http_io.hpp"
#include "sim/job.hpp"

namespace llmux::sim {

/// Waits for the job to finish, then writes its JSON body. Handles faults and a client that
/// leaves first.
boost::asio::awaitable<void> plain_response(Conn& connection, Request& req,
                                            std::shared_ptr<Job> job, EngineDriver& driver);

/// Writes the SSE header and opening frames, then each frame as it comes (chunked on HTTP/1.1,
/// until close on HTTP/1.0). Stops generating when the client leaves, a write fails or a fault
/// ends the stream.
boost::asio::awaitable<void> stream_response(Conn& connection, Request& req,
                                             std::shared_ptr<Job> job, EngineDriver& driver);

}  // namespace llmux::sim
