// SPDX-License-Identifier: Apache-2.0
#include "support/test_util.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/tokenizer.hpp"

namespace llmux::test {

namespace json = boost::json;

json::value parse_json(std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec)
    throw std::runtime_error("not JSON (" + ec.message() + "): '" +
                             std::string(text.substr(0, 2000)) + "'");
  return v;
}

bool is_openai_error(std::string_view body, int status, std::string* why) {
  auto fail = [&](std::string w) {
    if (why) *why = std::move(w) + " in body: " + std::string(body);
    return false;
  };
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec || !v.is_object()) return fail("not a JSON object");
  const auto& o = v.get_object();
  if (o.size() != 1 || !o.contains("error") || !o.at("error").is_object())
    return fail("not exactly {\"error\":{...}}");
  const auto& e = o.at("error").get_object();
  if (!e.contains("message") || !e.at("message").is_string() || e.at("message").as_string().empty())
    return fail("message missing or not a non-empty string");
  if (!e.contains("type") || !e.at("type").is_string() || e.at("type").as_string().empty())
    return fail("type missing or not a non-empty string");
  if (!e.contains("param") || !(e.at("param").is_null() || e.at("param").is_string()))
    return fail("param missing or neither null nor a string");
  if (!e.contains("code") || !e.at("code").is_int64() || e.at("code").as_int64() != status)
    return fail("code missing or not " + std::to_string(status));
  return true;
}

namespace {
std::string error_field(std::string_view body, std::string_view field) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec || !v.is_object()) return {};
  const auto* e = v.get_object().if_contains("error");
  if (!e || !e->is_object()) return {};
  const auto* m = e->get_object().if_contains(field);
  if (!m || !m->is_string()) return {};
  return std::string(m->get_string());
}
}  // namespace

std::string error_message(std::string_view body) {
  return error_field(body, "message");
}
std::string error_type(std::string_view body) {
  return error_field(body, "type");
}

namespace {
template <typename F>
void for_each_sample(std::string_view text, std::string_view name, F&& f) {
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.empty() || line.front() == '#') continue;
    if (!line.starts_with(name) || line.size() == name.size()) continue;
    const char next = line[name.size()];
    if (next != '{' && next != ' ') continue;
    std::string_view labels;
    std::string_view rest = line.substr(name.size());
    if (next == '{') {
      const auto close = rest.find('}');
      if (close == std::string_view::npos) continue;
      labels = rest.substr(1, close - 1);
      rest = rest.substr(close + 1);
    }
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    const auto sp = rest.find(' ');
    const std::string num(rest.substr(0, sp));
    f(labels, std::strtod(num.c_str(), nullptr));
  }
}
}  // namespace

std::optional<double> metric_value(std::string_view prom_text, std::string_view name) {
  std::optional<double> sum;
  for_each_sample(prom_text, name, [&](std::string_view, double v) { sum = sum.value_or(0) + v; });
  return sum;
}

bool metric_has_vllm_labels(std::string_view prom_text, std::string_view name,
                            std::string_view model) {
  bool found = false;
  const std::string want_model = "model_name=\"" + std::string(model) + "\"";
  for_each_sample(prom_text, name, [&](std::string_view labels, double) {
    if (labels.find(want_model) != std::string_view::npos &&
        labels.find("engine=\"0\"") != std::string_view::npos)
      found = true;
  });
  return found;
}

bool poll_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout,
                std::chrono::milliseconds interval) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (pred()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return pred();
    std::this_thread::sleep_for(interval);  // polling interval, bounded by the deadline
  }
}

std::string str(const json::value& v) {
  if (v.is_string()) return std::string(v.get_string());
  return json::serialize(v);
}

std::int64_t i64(const json::value& v) {
  return v.to_number<std::int64_t>();
}

std::size_t count_tokens(std::string_view text) {
  return Tokenizer::count(text);
}

TempDir::TempDir() {
  const char* dir = std::getenv("TMPDIR");
  std::string tmpl = std::string(dir && *dir ? dir : "/tmp") + "/llmux-test-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed for " + tmpl);
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::write(const std::string& name, const std::string& text) const {
  const std::string p = path_ + "/" + name;
  std::ofstream out(p, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + p);
  return p;
}

int tcp_sockets_to(int port, std::string_view state) {
  int n = 0;
  for (const char* file : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(file);
    std::string line;
    std::getline(in, line);  // the column names
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string sl, local, remote, st;
      fields >> sl >> local >> remote >> st;
      const auto colon = remote.rfind(':');
      if (colon == std::string::npos) continue;
      if (std::stoi(remote.substr(colon + 1), nullptr, 16) == port && st == state) ++n;
    }
  }
  return n;
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace llmux::test
