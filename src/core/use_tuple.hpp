// SPDX-License-Identifier: Apache-2.0
#pragma once
// The completion token of llmux's coroutines: `co_await op(..., use_tuple)` yields the error code
// and the results as a tuple instead of throwing, so a failed read or write is a value to test.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace llmux::core {

inline constexpr auto use_tuple = boost::asio::as_tuple(boost::asio::use_awaitable);

}  // namespace llmux::core
