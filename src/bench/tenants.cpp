// SPDX-License-Identifier: Apache-2.0
#include "bench/tenants.hpp"

#include <algorithm>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <boost/json.hpp>

#include "bench/workload.hpp"

namespace llmux::bench {

namespace {

std::size_t positive_number(std::string_view text, std::string_view what, std::string_view whole) {
  std::size_t value = 0;
  for (char character : text) {
    if (character < '0' || character > '9' || value > 1'000'000)
      throw std::invalid_argument(
          fmt::format("--tenant '{}': {} '{}' is not a number", whole, what, text));
    value = value * 10 + static_cast<std::size_t>(character - '0');
  }
  if (text.empty() || value == 0)
    throw std::invalid_argument(fmt::format("--tenant '{}': {} must be at least 1", whole, what));
  return value;
}

}  // namespace

TenantLoad parse_tenant(std::string_view text) {
  std::vector<std::string_view> parts;
  for (std::size_t start = 0;;) {
    const std::size_t colon = text.find(':', start);
    parts.push_back(text.substr(start, colon == std::string_view::npos ? colon : colon - start));
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  if (parts.size() < 2 || parts.size() > 4)
    throw std::invalid_argument(fmt::format(
        "--tenant '{}': expected NAME:CLIENTS[:PRIORITY[:WORKLOAD]], e.g. alice:4:interactive "
        "or nightly:32:batch:64/1024",
        text));
  TenantLoad tenant;
  tenant.name = std::string(parts[0]);
  if (tenant.name.empty())
    throw std::invalid_argument(fmt::format("--tenant '{}': the name is empty", text));
  tenant.clients = positive_number(parts[1], "CLIENTS", text);
  if (parts.size() > 2) tenant.priority = std::string(parts[2]);
  if (parts.size() > 3) {
    const std::string_view workload = parts[3];
    const std::size_t slash = workload.find('/');
    if (slash == std::string_view::npos)
      throw std::invalid_argument(fmt::format(
          "--tenant '{}': WORKLOAD is IN/OUT (prompt tokens / max_tokens), e.g. 64/1024", text));
    tenant.input_tokens = positive_number(workload.substr(0, slash), "IN", text);
    tenant.output_tokens = positive_number(workload.substr(slash + 1), "OUT", text);
  }
  return tenant;
}

RunResult run_tenants(const RunCommand& command, const RunOptions& base_options,
                      const LoadSpec& spec) {
  std::vector<RunResult> parts(command.tenants.size());
  std::vector<std::thread> threads;
  std::size_t clients = 0;
  for (const auto& tenant : command.tenants) clients += tenant.clients;
  for (std::size_t i = 0; i < command.tenants.size(); ++i) {
    threads.emplace_back([&, i] {
      const TenantLoad& tenant = command.tenants[i];
      RunOptions options = base_options;
      options.headers.push_back({"X-Llmux-Tenant", tenant.name});
      if (!tenant.priority.empty())
        options.headers.push_back({"X-Llmux-Priority", tenant.priority});
      options.progress = base_options.progress && i == 0;
      options.label = fmt::format("{} {} (1st of {} tenants)", base_options.label, tenant.name,
                                  command.tenants.size());
      options.request_id_prefix = fmt::format("{}-{}", base_options.request_id_prefix, tenant.name);
      LoadSpec tenant_spec = spec;
      tenant_spec.concurrency = tenant.clients;
      if (spec.num_requests)
        tenant_spec.num_requests =
            std::max<std::size_t>(1, spec.num_requests * tenant.clients / clients);
      if (spec.warmup_requests)
        tenant_spec.warmup_requests = spec.warmup_requests * tenant.clients / clients;
      parts[i] = run_load(options, tenant_spec,
                          tenant.prompts.empty() ? std::span<const PromptItem>(command.prompts)
                                                 : std::span<const PromptItem>(tenant.prompts));
    });
  }
  for (auto& thread : threads) thread.join();
  for (std::size_t i = 0; i < parts.size(); ++i)
    for (auto& record : parts[i].records) record.tenant = command.tenants[i].name;
  return merge_concurrent(std::move(parts));
}

double jain_index(std::span<const double> rates) {
  double sum = 0, squares = 0;
  for (double rate : rates) {
    sum += rate;
    squares += rate * rate;
  }
  if (rates.empty() || squares <= 0) return 1.0;
  return sum * sum / (static_cast<double>(rates.size()) * squares);
}

std::vector<TenantFigures> tenant_figures(const RunCommand& command, const RunResult& run,
                                          const AggregateOptions& options) {
  std::vector<TenantFigures> out;
  for (const auto& tenant : command.tenants) {
    std::vector<RequestTiming> timings;
    for (const auto& record : run.records)
      if (!record.warmup && record.tenant == tenant.name) timings.push_back(record.t);
    AggregateOptions tenant_options = options;
    tenant_options.wall_s = run.wall_s;  // every tenant's rate over the same window
    out.push_back(
        {tenant.name, tenant.priority, tenant.clients, aggregate(timings, tenant_options)});
  }
  return out;
}

Table tenant_table(std::span<const TenantFigures> figures) {
  Table table({"Tenant", "Class", "Clients", "OK", "Failed", "TTFT p50 (ms)", "TTFT p99 (ms)",
               "E2E p50 (s)", "E2E p99 (s)", "Output tok/s"});
  std::vector<double> rates;
  for (const auto& tenant : figures) {
    const Aggregate& agg = tenant.agg;
    rates.push_back(agg.output_tok_s);
    table.add_row({tenant.name, tenant.priority.empty() ? "(none sent)" : tenant.priority,
                   std::to_string(tenant.clients), std::to_string(agg.ok),
                   std::to_string(agg.failed), fmt::format("{:.1f}", agg.ttft.p50 * 1e3),
                   fmt::format("{:.1f}", agg.ttft.p99 * 1e3), fmt::format("{:.3f}", agg.e2e.p50),
                   fmt::format("{:.3f}", agg.e2e.p99), fmt::format("{:.1f}", agg.output_tok_s)});
  }
  table.add_row({"Jain's index over the token rates", "", "", "", "", "", "", "", "",
                 fmt::format("{:.3f}", jain_index(rates))});
  return table;
}

boost::json::object tenants_json(std::span<const TenantFigures> figures) {
  boost::json::object out;
  boost::json::array tenants;
  std::vector<double> rates;
  for (const auto& tenant : figures) {
    const Aggregate& agg = tenant.agg;
    rates.push_back(agg.output_tok_s);
    tenants.push_back({{"name", tenant.name},
                       {"priority", tenant.priority},
                       {"clients", tenant.clients},
                       {"ok", agg.ok},
                       {"failed", agg.failed},
                       {"rejected", agg.rejected},
                       {"ttft_p50_s", agg.ttft.p50},
                       {"ttft_p99_s", agg.ttft.p99},
                       {"e2e_p50_s", agg.e2e.p50},
                       {"e2e_p99_s", agg.e2e.p99},
                       {"output_tokens", agg.output_tokens},
                       {"output_tok_s", agg.output_tok_s}});
  }
  out["tenants"] = std::move(tenants);
  out["jain_index"] = jain_index(rates);
  return out;
}

}  // namespace llmux::bench
