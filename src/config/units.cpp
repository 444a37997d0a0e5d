// SPDX-License-Identifier: Apache-2.0
// Durations and sizes as written in the config: parse_duration(), parse_size(), and
// format_millis() for error messages.
#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <utility>

#include "config/config.hpp"
#include "config/detail.hpp"

namespace llmux::config {

namespace detail {

bool parse_uint(std::string_view text, std::uint64_t& out) {
  if (text.empty()) return false;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && p == text.data() + text.size();
}

std::string format_millis(Millis ms) {
  return fmt::format("{}ms", ms.count());
}

}  // namespace detail

using detail::lower;
using detail::parse_uint;

std::optional<double> parse_multiple(const std::string& text) {
  if (text.size() < 2 || (text.back() != 'x' && text.back() != 'X')) return std::nullopt;
  const std::string number = text.substr(0, text.size() - 1);
  char* end = nullptr;
  const double multiple = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !(multiple > 0)) return std::nullopt;
  return multiple;
}

std::optional<Millis> parse_duration(const std::string& text) {
  std::string_view view = text;
  std::size_t digits = 0;
  while (digits < view.size() && std::isdigit(static_cast<unsigned char>(view[digits]))) ++digits;
  std::uint64_t amount = 0;
  if (!parse_uint(view.substr(0, digits), amount)) return std::nullopt;
  std::string_view unit = view.substr(digits);
  if (unit.starts_with(' ')) {  // "5 s", but not "5 "
    while (unit.starts_with(' ')) unit.remove_prefix(1);
    if (unit.empty()) return std::nullopt;
  }
  std::uint64_t factor = 0;
  if (unit.empty() || unit == "ms")
    factor = 1;
  else if (unit == "s")
    factor = 1000;
  else if (unit == "m")
    factor = 60 * 1000;
  else if (unit == "h")
    factor = 60 * 60 * 1000;
  else
    return std::nullopt;
  if (amount > static_cast<std::uint64_t>(std::numeric_limits<Millis::rep>::max()) / factor)
    return std::nullopt;
  return Millis(static_cast<Millis::rep>(amount * factor));
}

std::optional<std::uint64_t> parse_size(const std::string& text) {
  std::string_view view = text;
  std::size_t digits = 0;
  while (digits < view.size() && std::isdigit(static_cast<unsigned char>(view[digits]))) ++digits;
  std::uint64_t amount = 0;
  if (!parse_uint(view.substr(0, digits), amount)) return std::nullopt;
  std::string_view rest = view.substr(digits);
  if (rest.starts_with(' ')) {  // "16 MiB", but not "16 "
    while (rest.starts_with(' ')) rest.remove_prefix(1);
    if (rest.empty()) return std::nullopt;
  }
  const std::string unit = lower(rest);
  static const std::vector<std::pair<std::string_view, std::uint64_t>> units{
      {"", 1},
      {"b", 1},
      {"kb", 1000ull},
      {"mb", 1000ull * 1000},
      {"gb", 1000ull * 1000 * 1000},
      {"tb", 1000ull * 1000 * 1000 * 1000},
      {"kib", 1ull << 10},
      {"mib", 1ull << 20},
      {"gib", 1ull << 30},
      {"tib", 1ull << 40},
  };
  for (const auto& [name, factor] : units) {
    if (unit != name) continue;
    if (amount > std::numeric_limits<std::uint64_t>::max() / factor) return std::nullopt;
    return amount * factor;
  }
  return std::nullopt;
}

}  // namespace llmux::config
