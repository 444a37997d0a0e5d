// SPDX-License-Identifier: Apache-2.0
#pragma once
// A coroutine started without co_spawn's own coroutine frame: for the gateway's sessions, one per
// connection, whose frames are what a held-open stream costs in memory.
//
// co_spawn(ex, task, detached) starts `task` from a coroutine of Asio's (co_spawn_entry_point)
// that first dispatches to `ex`, awaits the task, posts once more if it never left the thread,
// then calls the handler: a second frame (448 bytes in Boost 1.81 with GCC 12, for the
// connection's whole life) and two scheduler hops per connection. A task declared as
// core::Detached is itself the bottom of its thread of execution (Asio's awaitable_thread entry
// point) and is launched at once, in the calling thread, as co_spawn launches its entry point.
//
// Rules for a Detached task: spawn() it only from a thread running its io_context (it starts
// there and then, until its first wait), and let no exception escape it (co_spawn's `detached`
// swallows one; here it would propagate to whoever resumed the task: catch everything inside).
//
// This uses Asio's detail namespace (awaitable_thread, awaitable_thread_entry_point), checked
// for the Boost version below; elsewhere Detached is awaitable<void> and spawn() is co_spawn.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/version.hpp>

#include <cassert>
#include <utility>

#if BOOST_VERSION / 100 == 1081 && defined(BOOST_ASIO_HAS_CO_AWAIT)
#define LLMUX_ENTRY_POINT_TASK 1
#else
#define LLMUX_ENTRY_POINT_TASK 0
#endif

namespace llmux::core {

#if LLMUX_ENTRY_POINT_TASK
using Detached = boost::asio::awaitable<boost::asio::detail::awaitable_thread_entry_point,
                                        boost::asio::any_io_executor>;

inline void spawn(boost::asio::io_context& ioc, Detached task) {
  assert(ioc.get_executor().running_in_this_thread());
  boost::asio::detail::awaitable_thread<boost::asio::any_io_executor>(
      std::move(task), ioc.get_executor(), boost::asio::cancellation_slot(),
      boost::asio::cancellation_state())
      .launch();
}
#else
using Detached = boost::asio::awaitable<void>;

inline void spawn(boost::asio::io_context& ioc, Detached task) {
  boost::asio::co_spawn(ioc, std::move(task), boost::asio::detached);
}
#endif

}  // namespace llmux::core
