// `llmux bench throughput`: the seed's qwen36-throughput.py. Single-stream decode of three
// prompt sizes and concurrent aggregates per target, and whether the targets agree.
#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "bench/commands_internal.hpp"
#include "core/clock.hpp"

namespace llmux::bench {
namespace json = boost::json;

using detail::burst;
using detail::kVersion;
using detail::Measured;
using detail::records_json;
using detail::resolve_model;
using detail::seed_options;
using detail::serial;
using detail::write_outputs;

int bench_throughput(const ThroughputCommand& c, std::ostream& md) {
  struct TargetResult {
    std::string model;
    std::map<std::string, Measured> serial;
    std::map<std::size_t, Measured> levels;
  };
  static const char* kSizes[] = {"short", "medium", "long"};
  std::vector<TargetResult> res;
  for (const auto& t : c.targets) {
    TargetResult tr;
    tr.model = resolve_model(c.model, t.url);
    for (const char* size : kSizes) {
      auto ro =
          seed_options(t, tr.model, c.max_tokens, c.client, fmt::format("tp-{}-{}", t.name, size));
      tr.serial[size] = serial(ro, seed_prompt(size), c.repeat);
    }
    for (std::size_t n : c.levels) {
      auto ro =
          seed_options(t, tr.model, c.max_tokens, c.client, fmt::format("tp-{}-n{}", t.name, n));
      tr.levels[n] = burst(ro, seed_prompt("medium"), n);
    }
    res.push_back(std::move(tr));
  }

  md << fmt::format(
      "### llmux bench throughput ({}, max_tokens {}, temperature 0, non-streaming "
      "/v1/completions)\n\n",
      res.empty() ? "" : res.front().model, c.max_tokens);
  std::vector<std::string> h{"Prompt", "prompt tokens"};
  for (const auto& t : c.targets) h.push_back(t.name);
  Table serial_t(h);
  for (const char* size : kSizes) {
    std::vector<std::string> row{size, std::to_string(res.front().serial[size].prompt_tokens)};
    for (auto& r : res) row.push_back(fmt_num(r.serial[size].mean));
    serial_t.add_row(row);
  }
  md << to_markdown(serial_t,
                    MarkdownOptions{.title = fmt::format("Single-stream decode (tok/s = completion "
                                                         "tokens / request time, mean of {} runs)",
                                                         c.repeat),
                                    .heading_level = 4,
                                    .notes = {}});
  std::vector<std::string> h2{"Concurrency"};
  for (const auto& t : c.targets) h2.push_back(t.name);
  h2.push_back(fmt::format("per stream ({})", c.targets.front().name));
  h2.push_back(fmt::format("x single stream ({})", c.targets.front().name));
  Table conc_t(h2);
  for (std::size_t n : c.levels) {
    std::vector<std::string> row{fmt::format("N={}", n)};
    for (auto& r : res) row.push_back(fmt_num(r.levels[n].mean));
    const double agg = res.front().levels[n].mean, single = res.front().serial["medium"].mean;
    row.push_back(fmt_num(agg / static_cast<double>(n)));
    row.push_back(fmt::format("{:.1f}x", agg / single));
    conc_t.add_row(row);
  }
  md << "\n"
     << to_markdown(conc_t, MarkdownOptions{.title = fmt::format(
                                                "Concurrent aggregate (medium prompt, max_tokens "
                                                "{}; tok/s = all tokens / wall time until the "
                                                "last request ends)",
                                                c.max_tokens),
                                            .heading_level = 4,
                                            .notes = {}});
  std::vector<std::string> notes;
  if (c.targets.size() > 1) {
    md << "\n";
    auto verdict = [&](const std::string& what, const std::vector<double>& v) {
      const bool incomplete =
          std::any_of(v.begin(), v.end(), [](double x) { return !std::isfinite(x) || x <= 0; });
      const double s = spread(v);
      std::string vals;
      for (std::size_t i = 0; i < v.size(); ++i)
        vals += fmt::format("{}{} {}", i ? ", " : "", c.targets[i].name, fmt_num(v[i]));
      if (incomplete) {
        md << fmt::format("- {}: {} tok/s: INCOMPLETE (a target has no figure: see the errors)\n",
                          what, vals);
        return;
      }
      md << fmt::format("- {}: {} tok/s: {} (spread {:.1f}%, threshold {:g}%)\n", what, vals,
                        s <= c.agree ? "AGREE" : "DIFFER", s * 100, c.agree * 100);
    };
    {
      std::vector<double> v;
      for (auto& r : res) v.push_back(r.serial["medium"].mean);
      verdict("serial (medium)", v);
    }
    for (std::size_t n : c.levels) {
      std::vector<double> v;
      for (auto& r : res) v.push_back(r.levels[n].mean);
      verdict(fmt::format("N={}", n), v);
    }
  }
  std::size_t failed = 0;
  for (std::size_t i = 0; i < res.size(); ++i) {
    for (auto& [k, m] : res[i].serial)
      if (m.failed) {
        failed += m.failed;
        notes.push_back(fmt::format("{} serial {}: {} failed ({})", c.targets[i].name, k, m.failed,
                                    m.first_error));
      }
    for (auto& [k, m] : res[i].levels)
      if (m.failed) {
        failed += m.failed;
        notes.push_back(
            fmt::format("{} N={}: {} failed ({})", c.targets[i].name, k, m.failed, m.first_error));
      }
  }
  notes.insert(notes.begin(),
               fmt::format("Method (the seed's qwen36-throughput.py): each prompt {} times one "
                           "after the other, then N requests started together; {} connections; "
                           "output tokens from usage.completion_tokens.",
                           c.repeat, to_string(c.client.mode)));

  json::object doc;
  doc["tool"] = "llmux bench throughput";
  doc["version"] = kVersion;
  doc["created_unix"] = unix_seconds();
  json::object settings{{"model", res.front().model}, {"max_tokens", c.max_tokens},
                        {"repeat", c.repeat},         {"levels", json::value_from(c.levels)},
                        {"agree", c.agree},           {"connection", to_string(c.client.mode)}};
  json::array targets;
  for (const auto& t : c.targets)
    targets.push_back(json::object{{"name", t.name}, {"url", t.url.str()}});
  settings["targets"] = std::move(targets);
  doc["settings"] = std::move(settings);
  json::object summary, raw;
  for (std::size_t i = 0; i < res.size(); ++i) {
    json::object s, r;
    json::object ser;
    for (auto& [k, m] : res[i].serial) {
      ser[k] = json::object{{"tok_s", json_number(m.mean)},
                            {"runs_tok_s", json::value_from(m.tok_s)},
                            {"prompt_tokens", m.prompt_tokens},
                            {"failed", m.failed}};
      r["serial_" + k] = records_json(m.records, "serial_" + k);
    }
    s["serial"] = std::move(ser);
    for (auto& [n, m] : res[i].levels) {
      s[fmt::format("n{}", n)] = json::object{{"tok_s", json_number(m.mean)},
                                              {"tokens", m.tokens},
                                              {"wall_s", json_number(m.wall_s)},
                                              {"failed", m.failed}};
      r[fmt::format("n{}", n)] = records_json(m.records, fmt::format("n{}", n));
    }
    summary[c.targets[i].name] = std::move(s);
    raw[c.targets[i].name] = std::move(r);
  }
  doc["summary"] = std::move(summary);
  doc["requests"] = std::move(raw);
  write_outputs(c.out, "throughput", std::move(doc), {{"serial", serial_t}, {"concurrent", conc_t}},
                notes);
  md << "\n";
  for (const auto& n : notes) md << n << "\n\n";
  return failed ? 1 : 0;
}

}  // namespace llmux::bench
