// SPDX-License-Identifier: Apache-2.0
#pragma once
// hiredis on Asio, for RedisClient (state/redis_client.cpp): the event adapter that lets one
// async context's socket be watched by an io_context, and the conversion of hiredis's replies
// into RedisReply. Internal to src/state.
//
// hiredis asks its adapter to start and stop wanting reads and writes (addRead/delRead,
// addWrite/delWrite) and says when the context is being freed (cleanup). HiredisWatch keeps
// those wishes and an Asio wait per wish that is on, re-armed after each event while the wish
// stays; each event hands the socket to hiredis (redisAsyncHandleRead/Write), which may free the
// context from inside. Owned jointly by the context (ev.data, a raw pointer) and each pending wait,
// so a wait that completes after the context went finds it marked dead.
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <functional>
#include <memory>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include "state/redis_client.hpp"

namespace llmux::state {

class HiredisWatch : public std::enable_shared_from_this<HiredisWatch> {
 public:
  /// Called from hiredis's cleanup hook, once the context is being freed (its socket no longer
  /// watched); hiredis closes the socket itself.
  using FreedCallback = std::function<void(redisAsyncContext* context)>;

  HiredisWatch(boost::asio::io_context& io, redisAsyncContext* context, FreedCallback on_freed)
      : context_(context), descriptor_(io), on_freed_(std::move(on_freed)) {}

  /// Watches the context's socket and installs the hooks in `context->ev` (ev.data: this).
  /// An error when the socket cannot be watched: then no hook is installed.
  boost::system::error_code attach();

 private:
  static void arm_read(const std::shared_ptr<HiredisWatch>& watch);
  static void arm_write(const std::shared_ptr<HiredisWatch>& watch);
  static void add_read(void* data);
  static void delete_read(void* data);
  static void add_write(void* data);
  static void delete_write(void* data);
  static void cleanup(void* data);

  redisAsyncContext* context_;
  boost::asio::posix::stream_descriptor descriptor_;
  FreedCallback on_freed_;
  bool want_read_ = false;
  bool want_write_ = false;
  bool reading_ = false;
  bool writing_ = false;
  bool dead_ = false;
};

/// A hiredis reply as a RedisReply (arrays recursively).
RedisReply to_redis_reply(const redisReply* reply);

}  // namespace llmux::state
