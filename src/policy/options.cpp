// SPDX-License-Identifier: Apache-2.0
#include "policy/options.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace llmux::policy {

bool OptionReader::read_number(const char* key, bool whole, double lowest, double highest,
                               double& value) {
  auto found = options_.find(key);
  if (found == options_.end()) return false;
  seen_++;
  const std::string& text = found->second;
  double parsed = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), parsed);
  if (error != std::errc() || end != text.data() + text.size() ||
      !(parsed >= lowest && parsed <= highest) ||
      (whole && parsed != static_cast<double>(static_cast<long long>(parsed)))) {
    fail(fmt::format("policy '{}': option {} must be {} {}-{} (got '{}')", policy_, key,
                     whole ? "a whole number" : "a number", lowest, highest, text));
    return false;
  }
  value = parsed;
  return true;
}

void OptionReader::number(const char* key, double& out, double lowest, double highest) {
  double value = 0;
  if (read_number(key, false, lowest, highest, value)) out = value;
}

void OptionReader::number(const char* key, int& out, double lowest, double highest) {
  double value = 0;
  if (read_number(key, true, lowest, highest, value)) out = static_cast<int>(value);
}

void OptionReader::number(const char* key, std::size_t& out, double lowest, double highest) {
  double value = 0;
  if (read_number(key, true, lowest, highest, value)) out = static_cast<std::size_t>(value);
}

void OptionReader::string(const char* key, std::string& out) {
  auto found = options_.find(key);
  if (found == options_.end()) return;
  seen_++;
  out = found->second;
}

void OptionReader::fail(std::string why) {
  if (ok_ && error_) *error_ = std::move(why);
  ok_ = false;
}

bool OptionReader::done() {
  if (ok_ && seen_ != options_.size()) {
    for (const auto& [name, value] : options_)
      if (!known(name)) {
        fail(fmt::format("policy '{}' has no option '{}'", policy_, name));
        break;
      }
  }
  return ok_;
}

bool OptionReader::known(const std::string& name) const {
  return std::find(known_.begin(), known_.end(), name) != known_.end();
}

bool no_options(std::string_view policy, const Options& options, std::string* error) {
  if (options.empty()) return true;
  if (error)
    *error = fmt::format("policy '{}' has no options (got '{}')", policy, options.begin()->first);
  return false;
}

}  // namespace llmux::policy
