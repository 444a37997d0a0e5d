// SPDX-License-Identifier: Apache-2.0
// String helpers shared by loading and validation: join, case, "did you mean", field paths.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <utility>

#include "config/detail.hpp"

namespace llmux::config::detail {

namespace {

std::size_t edit_distance(std::string_view left, std::string_view right) {
  std::vector<std::size_t> prev(right.size() + 1), cur(right.size() + 1);
  for (std::size_t j = 0; j <= right.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= left.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= right.size(); ++j) {
      const std::size_t sub = prev[j - 1] + (left[i - 1] == right[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[right.size()];
}

}  // namespace

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += sep;
    out += item;
  }
  return out;
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string upper(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string suggest(std::string_view word, const std::vector<std::string>& known) {
  const std::string lowered = lower(word);
  std::string best;
  std::size_t best_d = 3;
  for (const auto& candidate : known) {
    const std::string kl = lower(candidate);
    std::size_t d = edit_distance(lowered, kl);
    if (d > 2 && std::min(lowered.size(), kl.size()) >= 4 &&
        (kl.starts_with(lowered) || lowered.starts_with(kl)))
      d = 2;
    if (d < best_d) {
      best_d = d;
      best = candidate;
    }
  }
  return best;
}

std::string index(const std::string& field, std::size_t i) {
  return fmt::format("{}[{}]", field, i);
}

}  // namespace llmux::config::detail
