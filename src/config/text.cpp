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
  for (auto& character : out)
    character = static_cast<char>(std::tolower(static_cast<unsigned char>(character)));
  return out;
}

std::string upper(std::string_view text) {
  std::string out(text);
  for (auto& character : out)
    character = static_cast<char>(std::toupper(static_cast<unsigned char>(character)));
  return out;
}

std::string suggest(std::string_view word, const std::vector<std::string>& known) {
  const std::string lowered = lower(word);
  std::string best;
  std::size_t best_distance = 3;
  for (const auto& candidate : known) {
    const std::string candidate_lower = lower(candidate);
    std::size_t distance = edit_distance(lowered, candidate_lower);
    if (distance > 2 && std::min(lowered.size(), candidate_lower.size()) >= 4 &&
        (candidate_lower.starts_with(lowered) || lowered.starts_with(candidate_lower)))
      distance = 2;
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

std::string index(const std::string& field, std::size_t position) {
  return fmt::format("{}[{}]", field, position);
}

}  // namespace llmux::config::detail
