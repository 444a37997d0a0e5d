// SPDX-License-Identifier: Apache-2.0
#pragma once
// A GoogleTest fixture base that runs one `llmux sim` per test suite (so one per CTest test,
// since CTest runs each test in its own process). Derived suites call start() from their
// SetUpTestSuite(). A simulator that failed to start fails every test of the suite with its
// stderr; one that died during a test fails that test.
#include <gtest/gtest.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "support/process.hpp"

namespace llmux::test {

class SimSuite : public ::testing::Test {
 protected:
  static void start(std::vector<std::string> args) {
    start_error_.clear();
    try {
      sim_ = std::make_unique<SimServer>(args);
    } catch (const std::exception& e) {
      start_error_ = e.what();
    }
  }
  // Stops the simulator; a crash, a non-zero exit or a sanitizer report fails the suite.
  static void TearDownTestSuite() {
    if (!sim_) return;
    const auto status = sim_->terminate(std::chrono::seconds(10));
    const std::string err = sim_->stderr_text();
    if (!status) {
      ADD_FAILURE() << "the simulator did not exit within 10 s of SIGTERM; stderr:\n" << err;
    } else if (*status != 0) {
      ADD_FAILURE() << "the simulator exited with status " << *status << "; stderr:\n" << err;
    }
    if (has_sanitizer_report(err)) ADD_FAILURE() << "sanitizer report from the simulator:\n" << err;
    sim_.reset();
  }
  void SetUp() override { ASSERT_TRUE(sim_) << "the simulator did not start: " << start_error_; }
  void TearDown() override {
    if (!sim_) return;
    EXPECT_TRUE(sim_->alive()) << "the simulator died; stderr:\n" << sim_->stderr_text();
    if (HasFailure()) std::cerr << "simulator stderr:\n" << sim_->stderr_text() << "\n";
  }
  static int port() { return sim_->port(); }

  static inline std::unique_ptr<SimServer> sim_;
  static inline std::string start_error_;
};

}  // namespace llmux::test
