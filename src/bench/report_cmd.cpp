// SPDX-License-Identifier: Apache-2.0
// `llmux bench report`: compares the "summary" of two result files (before/after).
#include <boost/json.hpp>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "bench/commands.hpp"
#include "bench/report.hpp"

namespace llmux::bench {
namespace json = boost::json;

int bench_report(const std::string& a_path, const std::string& b_path, double threshold,
                 bool show_all, std::ostream& markdown) {
  auto load = [](const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    if (!file) throw std::runtime_error(fmt::format("cannot open {}", path));
    std::stringstream contents;
    contents << file.rdbuf();
    boost::system::error_code ec;
    json::value document = json::parse(contents.str(), ec);
    if (ec || !document.is_object())
      throw std::runtime_error(fmt::format("{}: not a JSON result", path));
    return document;
  };
  const json::value result_a = load(a_path), result_b = load(b_path);
  // Results of different kinds share no figure: comparing them would flag everything.
  auto kind = [](const json::value& result) -> std::string {
    const json::value* tool = result.get_object().if_contains("tool");
    return tool && tool->is_string() ? std::string(tool->get_string()) : std::string();
  };
  const std::string kind_a = kind(result_a), kind_b = kind(result_b);
  if (kind_a != kind_b) {
    auto name = [](const std::string& tool) {
      return tool.empty() ? std::string("not a result of llmux bench") : "a `" + tool + "` result";
    };
    throw std::runtime_error(fmt::format(
        "cannot compare {} ({}) with {} ({}): `llmux bench report` compares two results of the "
        "same kind (two run.json, two throughput.json or two compare.json)",
        a_path, name(kind_a), b_path, name(kind_b)));
  }
  auto summary = [](const json::value& result) -> const json::value& {
    const json::value* summary_value = result.get_object().if_contains("summary");
    return summary_value ? *summary_value : result;
  };
  const Comparison cmp = compare(flatten_numbers(summary(result_a)),
                                 flatten_numbers(summary(result_b)), {}, threshold);
  markdown << fmt::format("### llmux bench report: {} (A) vs {} (B)\n\n", a_path, b_path);
  markdown << fmt::format(
      "{} metrics compared, {} changed by more than {:g}%: {} regressions, {} "
      "improvements.\n\n",
      cmp.changes.size(), cmp.flagged, threshold * 100, cmp.regressions, cmp.improvements);
  if (cmp.flagged || show_all) markdown << to_markdown(comparison_table(cmp, !show_all));
  return cmp.flagged ? 1 : 0;
}

}  // namespace llmux::bench
