// SPDX-License-Identifier: Apache-2.0
#pragma once
// GET /v1/models answered by the gateway: the union of its backends' models (first seen wins),
// or a 503 naming every backend that failed when none answered. With client API keys
// (auth.keys) the caller needs a known key (401 otherwise) and sees only the models it may use.
#include <string>

#include <boost/asio/awaitable.hpp>

#include "gateway/client_connection.hpp"
#include "gateway/worker.hpp"

namespace llmux::gateway {

net::awaitable<void> models(const Fleet& fleet, Worker& worker, ClientConnection& client,
                            const Request& req, const std::string& request_id);

}  // namespace llmux::gateway
