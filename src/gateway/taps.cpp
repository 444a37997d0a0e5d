#include "gateway/taps.hpp"

#include <limits>

namespace llmux::gateway {

std::optional<std::int64_t> find_int_after(std::string_view hay, std::string_view key) {
  auto pos = hay.find(key);
  if (pos == std::string_view::npos) return std::nullopt;
  pos += key.size();
  while (pos < hay.size() && (hay[pos] == ' ' || hay[pos] == ':')) ++pos;
  std::int64_t v = 0;
  bool any = false;
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max() / 10 - 9;
  while (pos < hay.size() && hay[pos] >= '0' && hay[pos] <= '9') {
    if (v > kMax) return std::nullopt;  // not a token count
    v = v * 10 + (hay[pos] - '0');
    ++pos;
    any = true;
  }
  if (!any) return std::nullopt;
  return v;
}

void UsageTap::feed(std::string_view piece) {
  const auto at = piece.find("\"usage\"");
  if (at == std::string_view::npos) return;
  const std::string_view view = piece.substr(at);
  if (auto c = find_int_after(view, "\"completion_tokens\"")) completion = c;
  if (auto p = find_int_after(view, "\"prompt_tokens\"")) prompt = p;
  if (auto c = find_int_after(view, "\"output_tokens\"")) completion = c;
  if (auto p = find_int_after(view, "\"input_tokens\"")) prompt = p;
}

void SequenceTap::feed(std::string_view piece) {
  static constexpr std::string_view kKey = "\"sequence_number\"";
  const auto at = piece.rfind(kKey);
  if (at == std::string_view::npos) return;
  if (auto v = find_int_after(piece.substr(at), kKey)) last = v;
}

std::size_t last_event_boundary(const char* data, std::size_t n) {
  for (std::size_t i = n; i >= 2; --i) {
    if (data[i - 1] == '\n' &&
        (data[i - 2] == '\n' || (i >= 3 && data[i - 2] == '\r' && data[i - 3] == '\n'))) {
      return i;
    }
  }
  return 0;
}

}  // namespace llmux::gateway
