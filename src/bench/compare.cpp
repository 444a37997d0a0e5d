// `llmux bench compare`: the seed's qwen36-gateway-vs-direct.py. Serial and burst throughput of
// each path (direct and through the gateway) and each path's ratio to the direct one.
#include <boost/json.hpp>

#include <cctype>
#include <map>
#include <optional>

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

std::vector<NamedUrl> seed_paths(const http::Url& direct, const http::Url& gateway) {
  return {{"direct completions", direct, Dialect::completions},
          {"gateway completions", gateway, Dialect::completions},
          {"direct chat", direct, Dialect::chat},
          {"gateway chat", gateway, Dialect::chat}};
}

int bench_compare(const CompareCommand& c, std::ostream& md) {
  struct PathResult {
    std::string model;
    Measured serial;
    std::map<std::size_t, Measured> levels;
  };
  std::vector<PathResult> res;
  for (const auto& p : c.paths) {
    PathResult pr;
    pr.model = resolve_model(c.model, p.url);
    const std::string slug = [&] {
      std::string s = p.name;
      for (char& ch : s)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return s;
    }();
    pr.serial = serial(seed_options(p, pr.model, c.max_tokens, c.client, "cmp-" + slug + "-serial"),
                       seed_prompt(c.prompt), c.repeat);
    for (std::size_t n : c.levels)
      pr.levels[n] = burst(
          seed_options(p, pr.model, c.max_tokens, c.client, fmt::format("cmp-{}-n{}", slug, n)),
          seed_prompt(c.prompt), n);
    res.push_back(std::move(pr));
  }
  md << fmt::format(
      "### llmux bench compare ({} prompt, max_tokens {}, temperature 0, "
      "non-streaming)\n\n",
      c.prompt, c.max_tokens);
  std::vector<std::string> h{"Path", "Endpoint", "URL",
                             fmt::format("Serial tok/s (mean of {})", c.repeat)};
  for (std::size_t n : c.levels) h.push_back(fmt::format("N={} tok/s", n));
  std::vector<Align> al(h.size(), Align::right);
  al[0] = al[1] = al[2] = Align::left;
  Table t(h, al);
  for (std::size_t i = 0; i < c.paths.size(); ++i) {
    const auto& p = c.paths[i];
    std::vector<std::string> row{p.name, std::string(endpoint_path(p.dialect)), p.url.str(),
                                 fmt_num(res[i].serial.mean)};
    for (std::size_t n : c.levels) row.push_back(fmt_num(res[i].levels[n].mean));
    t.add_row(row);
  }
  md << to_markdown(t);
  // Ratios: each non-direct path against the direct path of the same endpoint.
  std::vector<std::string> rh{"Path", "vs"};
  rh.push_back("Serial");
  for (std::size_t n : c.levels) rh.push_back(fmt::format("N={}", n));
  Table rt(rh);
  for (std::size_t i = 0; i < c.paths.size(); ++i) {
    if (c.paths[i].name.starts_with("direct")) continue;
    std::optional<std::size_t> d;
    for (std::size_t j = 0; j < c.paths.size(); ++j)
      if (c.paths[j].name.starts_with("direct") && c.paths[j].dialect == c.paths[i].dialect) d = j;
    if (!d) continue;
    std::vector<std::string> row{c.paths[i].name, c.paths[*d].name,
                                 fmt::format("{:.3f}x", res[i].serial.mean / res[*d].serial.mean)};
    for (std::size_t n : c.levels)
      row.push_back(fmt::format("{:.3f}x", res[i].levels[n].mean / res[*d].levels[n].mean));
    rt.add_row(row);
  }
  if (!rt.rows().empty())
    md << "\n"
       << to_markdown(rt, MarkdownOptions{.title = "Ratio to the direct path (tok/s)",
                                          .heading_level = 4,
                                          .notes = {}});
  std::vector<std::string> notes;
  notes.push_back(fmt::format(
      "Method (the seed's qwen36-gateway-vs-direct.py): serial = {} requests one after the other, "
      "tok/s = completion tokens / request time (mean); N=k = k requests started together, tok/s = "
      "all tokens / wall time until the last ends; {} connections.",
      c.repeat, to_string(c.client.mode)));
  std::size_t failed = 0;
  for (std::size_t i = 0; i < res.size(); ++i) {
    if (res[i].serial.failed) {
      failed += res[i].serial.failed;
      notes.push_back(fmt::format("{} serial: {} failed ({})", c.paths[i].name,
                                  res[i].serial.failed, res[i].serial.first_error));
    }
    for (auto& [n, m] : res[i].levels)
      if (m.failed) {
        failed += m.failed;
        notes.push_back(
            fmt::format("{} N={}: {} failed ({})", c.paths[i].name, n, m.failed, m.first_error));
      }
  }
  json::object doc;
  doc["tool"] = "llmux bench compare";
  doc["version"] = kVersion;
  doc["created_unix"] = unix_seconds();
  json::array paths;
  for (const auto& p : c.paths)
    paths.push_back(json::object{
        {"name", p.name}, {"url", p.url.str()}, {"endpoint", endpoint_path(p.dialect)}});
  doc["settings"] =
      json::object{{"paths", std::move(paths)}, {"max_tokens", c.max_tokens},
                   {"repeat", c.repeat},        {"levels", json::value_from(c.levels)},
                   {"prompt", c.prompt},        {"connection", to_string(c.client.mode)}};
  json::object summary, raw;
  for (std::size_t i = 0; i < res.size(); ++i) {
    json::object s{{"serial_tok_s", json_number(res[i].serial.mean)}};
    json::object r{{"serial", records_json(res[i].serial.records, "serial")}};
    for (auto& [n, m] : res[i].levels) {
      s[fmt::format("n{}_tok_s", n)] = json_number(m.mean);
      r[fmt::format("n{}", n)] = records_json(m.records, fmt::format("n{}", n));
    }
    summary[c.paths[i].name] = std::move(s);
    raw[c.paths[i].name] = std::move(r);
  }
  doc["summary"] = std::move(summary);
  doc["requests"] = std::move(raw);
  write_outputs(c.out, "compare", std::move(doc), {{"paths", t}, {"ratios", rt}}, notes);
  md << "\n";
  for (const auto& n : notes) md << n << "\n\n";
  return failed ? 1 : 0;
}

}  // namespace llmux::bench
