// SPDX-License-Identifier: Apache-2.0
// `llmux sim` as a command: its help, its refusals of bad flags, its shutdown.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "support/http_client.hpp"
#include "support/process.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

TEST(SimCli, HelpExplainsEveryFlag) {
  RunResult r = run_to_completion({llmux_binary(), "sim", "--help"});
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* group :
       {"Performance model", "Scheduler and KV cache", "Memory budget", "Faults"}) {
    EXPECT_NE(r.out.find(group), std::string::npos) << "group '" << group << "' missing:\n"
                                                    << r.out;
  }
  for (const char* flag : {"--preset",
                           "--host",
                           "--port",
                           "--served-model-name",
                           "--max-model-len",
                           "--t0",
                           "--m",
                           "--c",
                           "--ctx-cost",
                           "--prefill-rate",
                           "--prefill-overhead",
                           "--zero-cost",
                           "--time-scale",
                           "--api-server-time",
                           "--output-len",
                           "--max-num-seqs",
                           "--max-num-batched-tokens",
                           "--block-size",
                           "--num-kv-blocks",
                           "--no-enable-prefix-caching",
                           "--enable-prompt-tokens-details",
                           "--memory-gb",
                           "--gpu-memory-utilization",
                           "--weights-gb",
                           "--overhead-gb",
                           "--kv-bytes-per-token",
                           "--kv-role",
                           "--kv-link-gbps",
                           "--kv-link-efficiency",
                           "--kv-transfer-overlap",
                           "--kv-transfer-bytes-per-token",
                           "--kv-transfer-state-bytes",
                           "--kv-abort-timeout",
                           "--kv-load-failure-policy",
                           "--kv-engine-id",
                           "--kv-host",
                           "--fault-error-rate",
                           "--fault-error-status",
                           "--fault-close-after",
                           "--fault-close-rate",
                           "--fault-stall-after",
                           "--fault-stall-rate",
                           "--fault-latency-ms",
                           "--not-ready-for",
                           "--admin-token",
                           "--response-store-max",
                           "--max-body-bytes"}) {
    // The description follows on the same line, or on the next for a long flag.
    EXPECT_TRUE(r.out.find(std::string(flag) + " ") != std::string::npos ||
                r.out.find(std::string(flag) + "\n") != std::string::npos)
        << "flag " << flag << " missing from --help";
  }
  EXPECT_NE(r.out.find("X-Llmux-Fault"), std::string::npos);
  EXPECT_NE(r.out.find("/admin/faults"), std::string::npos);
}

struct BadFlag {
  std::vector<std::string> args;
  std::string mentions;
};

TEST(SimCli, InvalidFlagValuesExitNonZeroWithAMessage) {
  const BadFlag cases[] = {
      {{"--output-len", "foo"}, "foo"},
      {{"--output-len", "fixed:0"}, "fixed:0"},
      {{"--output-len", "lognormal:abc:1"}, "abc"},
      {{"--time-scale", "-1"}, "--time-scale"},
      {{"--time-scale", "fast"}, "--time-scale"},
      {{"--port", "notaport"}, "--port"},
      {{"--preset", "bogus"}, "bogus"},
      {{"--gpu-memory-utilization", "2"}, "--gpu-memory-utilization"},
      {{"--fault-error-rate", "1.5"}, "--fault-error-rate"},
      {{"--not-ready-for", "-1"}, "--not-ready-for"},
      {{"--no-such-flag"}, "--no-such-flag"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> argv{llmux_binary(), "sim", "--port", "0"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    SCOPED_TRACE(c.args[0] + (c.args.size() > 1 ? " " + c.args[1] : ""));
    RunResult r = run_to_completion(argv);
    ASSERT_FALSE(r.timed_out) << "llmux sim started despite a bad flag";
    EXPECT_NE(r.exit_code, 0);
    EXPECT_EQ(r.out.find("\"event\":\"ready\""), std::string::npos) << "it became ready";
    EXPECT_NE((r.err + r.out).find(c.mentions), std::string::npos)
        << "the message should name '" << c.mentions << "'; stderr:\n"
        << r.err << "\nstdout:\n"
        << r.out;
  }
}

TEST(SimCli, ReadyLineAndCleanShutdownOnSigterm) {
  SimServer sim({"--zero-cost"});
  EXPECT_GT(sim.port(), 0);
  EXPECT_NE(sim.ready_line().find("\"host\":\"127.0.0.1\""), std::string::npos);
  HttpClient c(sim.port());
  EXPECT_EQ(c.get("/health").status, 200);
  auto st = sim.terminate(std::chrono::seconds(5));
  ASSERT_TRUE(st.has_value()) << "no exit within 5 s of SIGTERM";
  EXPECT_EQ(*st, 0) << sim.stderr_text();
}

TEST(SimCli, PresetServesTheSeedModel) {
  SimServer sim({"--zero-cost", "--preset", "dgx-spark-qwen3.6-35b-a3b-fp8"});
  HttpClient c(sim.port());
  Response r = c.get("/v1/models");
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("\"id\":\"Qwen3.6-35B-A3B\""), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"max_model_len\":262144"), std::string::npos) << r.body;
}

TEST(SimCli, TwoSimsOnPortZeroGetDifferentPorts) {
  SimServer a({"--zero-cost"});
  SimServer b({"--zero-cost", "--served-model-name", "other"});
  EXPECT_NE(a.port(), b.port());
  HttpClient cb(b.port());
  EXPECT_EQ(cb.post("/v1/completions", R"({"model":"other","prompt":"x","max_tokens":1})").status,
            200);
}

/// A gauge or counter of the simulator's /metrics (vLLM's names), 0 when absent.
double sim_metric(int port, const std::string& name) {
  const std::string text = HttpClient(port).get("/metrics").body;
  const std::size_t at = text.find("\n" + name);
  if (at == std::string::npos) return 0;
  const std::size_t line_end = text.find('\n', at + 1);
  const std::size_t value = text.rfind(' ', line_end);
  return std::stod(text.substr(value + 1, line_end - value - 1));
}

TEST(SimPriority, ANonzeroPriorityNeedsThePriorityPolicy) {
  SimServer sim({"--zero-cost"});
  HttpClient client(sim.port());
  Response refused =
      client.post("/v1/completions", R"({"prompt":"x","max_tokens":1,"priority":-1})");
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_NE(refused.body.find("Got priority -1 but Priority scheduling is not enabled."),
            std::string::npos)
      << refused.body;
  EXPECT_EQ(client.post("/v1/completions", R"({"prompt":"x","max_tokens":1,"priority":0})").status,
            200);
  // With the policy (a preset too: flags given explicitly override it), any priority is taken.
  SimServer priority({"--zero-cost", "--preset", "dgx-spark-qwen3.6-35b-a3b-fp8",
                      "--scheduling-policy", "priority"});
  EXPECT_EQ(HttpClient(priority.port())
                .post("/v1/completions", R"({"prompt":"x","max_tokens":1,"priority":-1})")
                .status,
            200);
}

/// Two long requests on a KV cache too small for both: a low-priority one admitted first, then
/// a high-priority one. The order their last tokens come in: {first to end, second}.
std::vector<std::string> finish_order(const std::string& policy) {
  SimServer sim({"--scheduling-policy", policy, "--max-num-seqs", "2", "--num-kv-blocks", "8",
                 "--block-size", "16", "--no-enable-prefix-caching"});
  const int port = sim.port();
  const std::string prompt(120, 'a');  // 30 tokens of four letters each
  auto send = [port, &prompt](int priority, const std::string& name) {
    HttpClient client(port);
    Response r = client.post("/v1/completions",
                             R"({"prompt":")" + prompt + R"(","max_tokens":40,"ignore_eos":true,)" +
                                 R"("priority":)" + std::to_string(priority) + "}");
    EXPECT_EQ(r.status, 200) << r.body;
    return name;
  };
  std::vector<std::string> order;
  std::mutex order_lock;
  auto record = [&](std::future<std::string> done) {
    const std::string name = done.get();
    std::lock_guard lock(order_lock);
    order.push_back(name);
  };
  auto low = std::async(std::launch::async, send, policy == "priority" ? 5 : 0, "low");
  EXPECT_TRUE(poll_until([&] { return sim_metric(port, "vllm:num_requests_running") == 1; },
                         std::chrono::seconds(5)));
  auto high = std::async(std::launch::async, send, policy == "priority" ? -1 : 0, "high");
  auto first = std::async(std::launch::async, record, std::move(low));
  auto second = std::async(std::launch::async, record, std::move(high));
  first.get();
  second.get();
  EXPECT_GE(sim_metric(port, "vllm:num_preemptions_total"), 1) << "the KV cache never ran out";
  return order;
}

TEST(SimPriority, OutOfKvThePriorityPolicyPreemptsTheLowerPriorityRequest) {
  // fcfs preempts the newest (the high-priority one), which then ends last; priority preempts
  // the low-priority one although it came first.
  EXPECT_EQ(finish_order("fcfs"), (std::vector<std::string>{"low", "high"}));
  EXPECT_EQ(finish_order("priority"), (std::vector<std::string>{"high", "low"}));
}

}  // namespace
}  // namespace llmux::test
