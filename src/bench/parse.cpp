// SPDX-License-Identifier: Apache-2.0
// The list parsers behind the bench flags (--concurrency, --sweep, --percentiles) and the seed's
// agreement spread.
#include <algorithm>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "bench/commands.hpp"

namespace llmux::bench {

double spread(const std::vector<double>& values) {
  if (values.size() < 2) return 0;
  const auto [mn, mx] = std::minmax_element(values.begin(), values.end());
  return *mx > 0 ? (*mx - *mn) / *mx : 0;
}

std::vector<std::size_t> parse_levels(const std::string& list) {
  std::vector<std::size_t> out;
  std::stringstream items(list);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item.empty()) continue;
    const auto dots = item.find("..");
    try {
      if (dots != std::string::npos) {
        std::size_t low = std::stoul(item.substr(0, dots)),
                    high = std::stoul(item.substr(dots + 2));
        if (low == 0 || high < low) throw std::invalid_argument(item);
        for (std::size_t x = low; x <= high; x *= 2) out.push_back(x);
        continue;
      }
      std::size_t pos = 0;
      const long level = std::stol(item, &pos);
      if (pos != item.size() || level <= 0) throw std::invalid_argument(item);
      out.push_back(static_cast<std::size_t>(level));
    } catch (const std::logic_error&) {
      throw std::invalid_argument(
          fmt::format("bad level '{}' (positive integers, e.g. 4,8 or 1..64)", item));
    }
  }
  if (out.empty()) throw std::invalid_argument("no levels given");
  return out;
}

std::vector<double> parse_percentiles(const std::string& list) {
  std::vector<double> out;
  std::stringstream items(list);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item.empty()) continue;
    if (item.front() == 'p' || item.front() == 'P') item.erase(0, 1);
    std::size_t pos = 0;
    double value = 0;
    try {
      value = std::stod(item, &pos);
    } catch (const std::logic_error&) {
      pos = 0;
    }
    if (pos != item.size() || value < 0 || value > 100)
      throw std::invalid_argument(fmt::format("bad percentile '{}' (0..100)", item));
    out.push_back(value);
  }
  return out;
}

}  // namespace llmux::bench
