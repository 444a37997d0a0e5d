// Helpers shared by the `llmux bench` subcommands: formatting, request records and output files.
#include <boost/json.hpp>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "bench/commands_internal.hpp"

namespace llmux::bench::detail {
namespace json = boost::json;
namespace fs = std::filesystem;

std::string ms(double s, int d) {
  return fmt_num(s * 1e3, d);
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error(fmt::format("cannot write {}", p.string()));
  f << text;
}

std::string error_summary(const Aggregate& a) {
  if (a.errors.empty()) return "0";
  std::string s = std::to_string(a.failed) + " (";
  bool first = true;
  for (const auto& [k, n] : a.errors) {
    s += fmt::format("{}{} {}", first ? "" : ", ", n, to_string(k));
    first = false;
  }
  return s + ")";
}

std::string first_error(std::span<const RequestTiming> ts) {
  for (const auto& t : ts)
    if (!t.ok()) return fmt::format("{}: {}", to_string(t.error), t.error_message);
  return {};
}

json::object record_json(const Record& r, const std::string& level) {
  json::object o;
  o["level"] = level;
  o["index"] = r.index;
  o["request_id"] = r.request_id;
  o["response_id"] = r.response_id;
  o["warmup"] = r.warmup;
  o["prompt"] = r.prompt;
  if (r.turn) {
    o["user"] = r.user;
    o["turn"] = r.turn;
    o["session"] = r.session;
  }
  json::object t = to_json(r.t);
  for (auto& kv : t) o[kv.key()] = kv.value();
  return o;
}

json::array records_json(const std::vector<Record>& rs, const std::string& level) {
  json::array a;
  for (const auto& r : rs) a.push_back(record_json(r, level));
  return a;
}

void write_outputs(const OutputOptions& out, const std::string& stem, json::object doc,
                   const std::vector<std::pair<std::string, Table>>& tables,
                   std::vector<std::string>& notes) {
  if (out.out_dir.empty()) return;
  const fs::path dir(out.out_dir);
  fs::create_directories(dir);
  write_file(dir / (stem + ".json"), pretty_json(doc));
  std::string files = (dir / (stem + ".json")).string();
  for (const auto& [name, t] : tables) {
    write_file(dir / (stem + "_" + name + ".csv"), to_csv(t));
    files += ", " + (dir / (stem + "_" + name + ".csv")).string();
  }
  notes.push_back("Written: " + files + ".");
}

}  // namespace llmux::bench::detail
