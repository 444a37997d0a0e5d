// SPDX-License-Identifier: Apache-2.0
// AdmissionQueue: bounded FIFO; the head is the oldest waiter; leaving passes the head on and
// wakes it; a wake-up reaches the head's own executor.
#include "gateway/admission_queue.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

namespace llmux::gateway {
namespace {

TEST(AdmissionQueue, BoundedFifo) {
  boost::asio::io_context ioc;
  AdmissionQueue q(2, std::chrono::seconds(1));
  auto a = q.join(ioc.get_executor());
  auto b = q.join(ioc.get_executor());
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->depth, 1);
  EXPECT_EQ(b->depth, 2);
  EXPECT_EQ(q.join(ioc.get_executor()), nullptr) << "a third joins a queue of two";
  EXPECT_EQ(q.depth(), 2);
  EXPECT_TRUE(q.at_head(*a));
  EXPECT_FALSE(q.at_head(*b));
  q.leave(a);
  EXPECT_TRUE(q.at_head(*b));
  EXPECT_EQ(q.depth(), 1);
  q.leave(a);  // twice: nothing
  EXPECT_EQ(q.depth(), 1);
  auto c = q.join(ioc.get_executor());
  ASSERT_TRUE(c);
  EXPECT_EQ(c->depth, 2);
}

TEST(AdmissionQueue, OffWhenItsSizeIsZero) {
  boost::asio::io_context ioc;
  AdmissionQueue q(0, std::chrono::seconds(1));
  EXPECT_EQ(q.join(ioc.get_executor()), nullptr);
}

TEST(AdmissionQueue, LeavingWakesTheNextHeadOnItsExecutor) {
  boost::asio::io_context ioc;
  AdmissionQueue q(4, std::chrono::seconds(1));
  auto a = q.join(ioc.get_executor());
  auto b = q.join(ioc.get_executor());
  q.wake_head();
  EXPECT_FALSE(a->woken) << "woken only on the waiter's own executor";
  ioc.poll();
  EXPECT_TRUE(a->woken);
  EXPECT_FALSE(b->woken);
  q.leave(a);
  ioc.restart();  // poll() ran out of work, which stops the io_context
  ioc.poll();
  EXPECT_TRUE(b->woken);
}

}  // namespace
}  // namespace llmux::gateway
