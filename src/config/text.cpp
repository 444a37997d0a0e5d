// SPDX-License-Identifier: Apache-2.0
// String helpers shared by loading and validation: join, case, "did you mean", field paths.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <utility>

#include "config/detail.hpp"

namespace llmux::config::detail {

namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string suggest(std::string_view word, const std::vector<std::string>& known) {
  const std::string w = lower(word);
  std::string best;
  std::size_t best_d = 3;
  for (const auto& k : known) {
    const std::string kl = lower(k);
    std::size_t d = edit_distance(w, kl);
    if (d > 2 && std::min(w.size(), kl.size()) >= 4 && (kl.starts_with(w) || w.starts_with(kl)))
      d = 2;
    if (d < best_d) {
      best_d = d;
      best = k;
    }
  }
  return best;
}

std::string index(const std::string& field, std::size_t i) {
  return fmt::format("{}[{}]", field, i);
}

}  // namespace llmux::config::detail
