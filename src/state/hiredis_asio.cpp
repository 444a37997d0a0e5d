// SPDX-License-Identifier: Apache-2.0
// hiredis on Asio (state/hiredis_asio.hpp).
#include "state/hiredis_asio.hpp"

namespace llmux::state {

namespace net = boost::asio;

boost::system::error_code HiredisWatch::attach() {
  boost::system::error_code ec;
  descriptor_.assign(context_->c.fd, ec);
  if (ec) return ec;
  context_->ev.data = this;
  context_->ev.addRead = &HiredisWatch::add_read;
  context_->ev.delRead = &HiredisWatch::delete_read;
  context_->ev.addWrite = &HiredisWatch::add_write;
  context_->ev.delWrite = &HiredisWatch::delete_write;
  context_->ev.cleanup = &HiredisWatch::cleanup;
  return ec;
}

void HiredisWatch::arm_read(const std::shared_ptr<HiredisWatch>& watch) {
  if (watch->reading_ || watch->dead_) return;
  watch->reading_ = true;
  watch->descriptor_.async_wait(
      net::posix::descriptor_base::wait_read, [watch](const boost::system::error_code& ec) {
        watch->reading_ = false;
        // Another error: hiredis finds it on the socket.
        if (ec == net::error::operation_aborted || watch->dead_ || !watch->want_read_) return;
        redisAsyncHandleRead(watch->context_);  // may free the context (dead_)
        if (!watch->dead_ && watch->want_read_) arm_read(watch);
      });
}

void HiredisWatch::arm_write(const std::shared_ptr<HiredisWatch>& watch) {
  if (watch->writing_ || watch->dead_) return;
  watch->writing_ = true;
  watch->descriptor_.async_wait(
      net::posix::descriptor_base::wait_write, [watch](const boost::system::error_code& ec) {
        watch->writing_ = false;
        if (ec == net::error::operation_aborted || watch->dead_ || !watch->want_write_) return;
        redisAsyncHandleWrite(watch->context_);
        if (!watch->dead_ && watch->want_write_) arm_write(watch);
      });
}

void HiredisWatch::add_read(void* data) {
  auto* watch = static_cast<HiredisWatch*>(data);
  watch->want_read_ = true;
  arm_read(watch->shared_from_this());
}

void HiredisWatch::delete_read(void* data) {
  static_cast<HiredisWatch*>(data)->want_read_ = false;
}

void HiredisWatch::add_write(void* data) {
  auto* watch = static_cast<HiredisWatch*>(data);
  watch->want_write_ = true;
  arm_write(watch->shared_from_this());
}

void HiredisWatch::delete_write(void* data) {
  static_cast<HiredisWatch*>(data)->want_write_ = false;
}

// The context is being freed: stop watching, give the fd back (hiredis closes it).
void HiredisWatch::cleanup(void* data) {
  auto watch = static_cast<HiredisWatch*>(data)->shared_from_this();
  watch->dead_ = true;
  watch->want_read_ = watch->want_write_ = false;
  boost::system::error_code ec;
  watch->descriptor_.cancel(ec);
  if (watch->descriptor_.is_open()) watch->descriptor_.release();
  if (watch->on_freed_) watch->on_freed_(watch->context_);
}

RedisReply to_redis_reply(const redisReply* reply) {
  RedisReply out;
  switch (reply->type) {
    case REDIS_REPLY_STRING:
      out.kind = RedisReply::Kind::string;
      out.str.assign(reply->str, reply->len);
      break;
    case REDIS_REPLY_STATUS:
      out.kind = RedisReply::Kind::status;
      out.str.assign(reply->str, reply->len);
      break;
    case REDIS_REPLY_ERROR:
      out.kind = RedisReply::Kind::error;
      out.str.assign(reply->str, reply->len);
      break;
    case REDIS_REPLY_INTEGER:
      out.kind = RedisReply::Kind::integer;
      out.integer = reply->integer;
      break;
    case REDIS_REPLY_NIL:
      out.kind = RedisReply::Kind::nil;
      break;
    case REDIS_REPLY_ARRAY:
      out.kind = RedisReply::Kind::array;
      out.elements.reserve(reply->elements);
      for (std::size_t i = 0; i < reply->elements; ++i)
        out.elements.push_back(to_redis_reply(reply->element[i]));
      break;
    default:
      out.kind = RedisReply::Kind::error;
      out.str = "unexpected reply type";
  }
  return out;
}

}  // namespace llmux::state
