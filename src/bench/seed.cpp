// SPDX-License-Identifier: Apache-2.0
// The measurements of the seed's two scripts (qwen36-throughput.py, qwen36-gateway-vs-direct.py):
// serial runs and bursts of non-streaming, temperature 0 requests.
#include <algorithm>
#include <cmath>
#include <span>
#include <stdexcept>

#include <fmt/format.h>

#include "bench/commands_internal.hpp"

namespace llmux::bench::detail {

RunOptions seed_options(const NamedUrl& target, const std::string& model, std::uint32_t max_tokens,
                        const http::ClientOptions& client, const std::string& id) {
  RunOptions options;
  options.url = target.url;
  options.body.dialect = target.dialect;
  options.body.model = model;
  options.body.stream = false;
  options.body.temperature = 0.0;
  options.body.max_tokens = max_tokens;
  options.client = client;
  options.request_id_prefix = id;
  return options;
}

Measured serial(const RunOptions& options, std::string_view prompt, std::size_t repeat) {
  PromptItem item;
  item.text = std::string(prompt);
  LoadSpec spec;
  spec.concurrency = 1;
  spec.num_requests = repeat;
  Measured measured;
  RunResult run = run_load(options, spec, std::span<const PromptItem>(&item, 1));
  for (const auto& rec : run.records) {
    const RequestMetrics metrics = derive(rec.t);
    if (rec.t.ok() && metrics.e2e_tok_s) {
      measured.tok_s.push_back(*metrics.e2e_tok_s);
      measured.prompt_tokens = rec.t.prompt_tokens.value_or(0);
    }
  }
  const auto timings = run.measured();
  measured.agg = aggregate(timings);
  measured.requests = measured.agg.requests;
  measured.failed = measured.agg.failed;
  measured.rejected = measured.agg.rejected;
  measured.first_error = first_error(timings);
  double sum = 0;
  for (double rate : measured.tok_s) sum += rate;
  measured.mean = measured.tok_s.empty() ? NAN : sum / measured.tok_s.size();
  measured.records = std::move(run.records);
  return measured;
}

Measured burst(const RunOptions& options, std::string_view prompt, std::size_t count) {
  PromptItem item;
  item.text = std::string(prompt);
  LoadSpec spec;
  spec.concurrency = count;
  spec.burst = true;
  RunResult run = run_load(options, spec, std::span<const PromptItem>(&item, 1));
  Measured measured;
  const auto timings = run.measured();
  Aggregate totals = aggregate(timings);
  measured.mean = totals.ok ? totals.output_tok_s : NAN;
  measured.tok_s.push_back(measured.mean);
  measured.requests = totals.requests;
  measured.failed = totals.failed;
  measured.rejected = totals.rejected;
  measured.first_error = first_error(timings);
  measured.wall_s = totals.wall_s;
  measured.tokens = totals.output_tokens;
  measured.records = std::move(run.records);
  measured.agg = std::move(totals);
  return measured;
}

void Tally::add(const Measured& measured) {
  requests += measured.requests;
  failed += measured.failed;
  rejected += measured.rejected;
  for (const auto& [kind, count] : measured.agg.errors) errors[kind] += count;
}

std::string Tally::kinds() const {
  std::string text;
  for (auto [kind, count] : errors) {
    if (kind == ErrorKind::http_status) count -= std::min(count, rejected);  // the 429s are apart
    if (count) text += fmt::format("{}{} {}", text.empty() ? "" : ", ", count, to_string(kind));
  }
  return text;
}

std::string step_label(const std::string& command, std::size_t step, std::size_t steps,
                       const std::string& what) {
  return fmt::format("llmux bench {} [{}/{}] {}:", command, step, steps, what);
}

std::string resolve_model(const std::string& given, const http::Url& url,
                          const http::ClientOptions& client) {
  if (!given.empty()) return given;
  std::string err;
  std::string model = discover_model(url, &err, client);
  if (model.empty())
    throw std::runtime_error(
        fmt::format("cannot find the model of {} ({}); pass --model", url.str(), err));
  return model;
}

}  // namespace llmux::bench::detail
