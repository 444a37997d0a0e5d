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

RunOptions seed_options(const NamedUrl& t, const std::string& model, std::uint32_t max_tokens,
                        const http::ClientOptions& client, const std::string& id) {
  RunOptions ro;
  ro.url = t.url;
  ro.body.dialect = t.dialect;
  ro.body.model = model;
  ro.body.stream = false;
  ro.body.temperature = 0.0;
  ro.body.max_tokens = max_tokens;
  ro.client = client;
  ro.request_id_prefix = id;
  return ro;
}

Measured serial(const RunOptions& ro, std::string_view prompt, std::size_t repeat) {
  PromptItem p;
  p.text = std::string(prompt);
  LoadSpec spec;
  spec.concurrency = 1;
  spec.num_requests = repeat;
  Measured m;
  RunResult r = run_load(ro, spec, std::span<const PromptItem>(&p, 1));
  for (const auto& rec : r.records) {
    const RequestMetrics rm = derive(rec.t);
    if (rec.t.ok() && rm.e2e_tok_s) {
      m.tok_s.push_back(*rm.e2e_tok_s);
      m.prompt_tokens = rec.t.prompt_tokens.value_or(0);
    }
  }
  const auto ts = r.measured();
  m.agg = aggregate(ts);
  m.requests = m.agg.requests;
  m.failed = m.agg.failed;
  m.rejected = m.agg.rejected;
  m.first_error = first_error(ts);
  double sum = 0;
  for (double v : m.tok_s) sum += v;
  m.mean = m.tok_s.empty() ? NAN : sum / m.tok_s.size();
  m.records = std::move(r.records);
  return m;
}

Measured burst(const RunOptions& ro, std::string_view prompt, std::size_t n) {
  PromptItem p;
  p.text = std::string(prompt);
  LoadSpec spec;
  spec.concurrency = n;
  spec.burst = true;
  RunResult r = run_load(ro, spec, std::span<const PromptItem>(&p, 1));
  Measured m;
  const auto ts = r.measured();
  Aggregate a = aggregate(ts);
  m.mean = a.ok ? a.output_tok_s : NAN;
  m.tok_s.push_back(m.mean);
  m.requests = a.requests;
  m.failed = a.failed;
  m.rejected = a.rejected;
  m.first_error = first_error(ts);
  m.wall_s = a.wall_s;
  m.tokens = a.output_tokens;
  m.records = std::move(r.records);
  m.agg = std::move(a);
  return m;
}

void Tally::add(const Measured& m) {
  requests += m.requests;
  failed += m.failed;
  rejected += m.rejected;
  for (const auto& [k, n] : m.agg.errors) errors[k] += n;
}

std::string Tally::kinds() const {
  std::string s;
  for (auto [k, n] : errors) {
    if (k == ErrorKind::http_status) n -= std::min(n, rejected);  // the 429s are apart
    if (n) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", n, to_string(k));
  }
  return s;
}

std::string step_label(const std::string& command, std::size_t step, std::size_t steps,
                       const std::string& what) {
  return fmt::format("llmux bench {} [{}/{}] {}:", command, step, steps, what);
}

std::string resolve_model(const std::string& given, const http::Url& url,
                          const http::ClientOptions& client) {
  if (!given.empty()) return given;
  std::string err;
  std::string m = discover_model(url, &err, client);
  if (m.empty())
    throw std::runtime_error(
        fmt::format("cannot find the model of {} ({}); pass --model", url.str(), err));
  return m;
}

}  // namespace llmux::bench::detail
