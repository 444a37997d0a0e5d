// SPDX-License-Identifier: Apache-2.0
#include "bench/workload.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "core/tokenizer.hpp"

namespace llmux::bench {
namespace json = boost::json;

std::string synthetic_prompt(std::size_t tokens, std::uint64_t seed) {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull);
  std::string text;
  text.reserve(tokens * 4);
  static constexpr char kLetters[] = "abcdefghijklmnopqrstuvwxyz";
  for (std::size_t i = 0; i < tokens; ++i) {
    // A word of 1-4 letters after one space is exactly one token (see core/tokenizer.hpp).
    const std::size_t len = 1 + rng() % 4;
    text += ' ';
    for (std::size_t k = 0; k < len; ++k) text += kLetters[rng() % 26];
  }
  return text;
}

TokenRange SyntheticSpec::input_range() const {
  if (input_spread <= 0) return {input_tokens, input_tokens};
  const double tokens = static_cast<double>(input_tokens);
  // (A hair of slack, so that 200 × (1 - 0.9) is 20, not 19.999… floored to 19.)
  const double low = std::max(1.0, std::floor(tokens * (1.0 - input_spread) + 1e-9));
  const double high = std::max(low, std::ceil(tokens * (1.0 + input_spread) - 1e-9));
  return {static_cast<std::size_t>(low), static_cast<std::size_t>(high)};
}

TokenRange SyntheticSpec::output_range() const {
  if (output_spread <= 0) return {output_tokens, output_tokens};
  const double tokens = static_cast<double>(output_tokens);
  const double low = std::max(1.0, std::floor(tokens * (1.0 - output_spread)));
  const double high = std::max(low, std::ceil(tokens * (1.0 + output_spread)));
  return {static_cast<std::size_t>(low), static_cast<std::size_t>(high)};
}

std::vector<PromptItem> synthetic_workload(const SyntheticSpec& spec, std::size_t count) {
  return synthetic_workload(spec.input_range(), spec.output_range(), spec.seed, count);
}

std::vector<PromptItem> synthetic_workload(TokenRange input, TokenRange output, std::uint64_t seed,
                                           std::size_t count) {
  std::vector<PromptItem> out;
  count = std::max<std::size_t>(count, 1);
  out.reserve(count);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::uint32_t> out_len(
      static_cast<std::uint32_t>(output.min),
      static_cast<std::uint32_t>(std::max(output.min, output.max)));
  // A generator of its own, so that the prompt lengths do not move with the output range.
  std::mt19937_64 in_rng(seed ^ 0x9e3779b97f4a7c15ull);
  std::uniform_int_distribution<std::size_t> in_len(input.min, std::max(input.min, input.max));
  for (std::size_t i = 0; i < count; ++i) {
    PromptItem item;
    const std::size_t tokens = in_len(in_rng);
    item.text = synthetic_prompt(tokens, seed * 1'000'003ull + i);
    item.prompt_tokens = tokens;
    item.max_tokens = out_len(rng);
    out.push_back(std::move(item));
  }
  return out;
}

std::vector<std::string> shared_prefixes(std::size_t count, std::size_t tokens,
                                         std::uint64_t seed) {
  std::vector<std::string> out;
  out.reserve(count);
  // Seeds of their own: synthetic_workload uses seed * 1'000'003 + i.
  for (std::size_t k = 0; k < count; ++k)
    out.push_back(synthetic_prompt(tokens, (seed ^ 0x5AFE5EED0000ull) * 7'368'787ull + k));
  return out;
}

void apply_shared_prefixes(std::vector<PromptItem>& items, std::span<const std::string> prefixes,
                           std::size_t group, std::uint64_t seed) {
  if (prefixes.empty()) return;
  group = std::max<std::size_t>(group, 1);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> draw(0, prefixes.size() - 1);
  std::size_t current = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i % group == 0) current = seed == 0 ? (i / group) % prefixes.size() : draw(rng);
    items[i].system = prefixes[current];
    items[i].prompt_tokens += Tokenizer::count(items[i].system);
  }
}

namespace {

std::string_view str_field(const json::object& object,
                           std::initializer_list<std::string_view> keys) {
  for (auto key : keys) {
    auto it = object.find(key);
    if (it != object.end() && it->value().is_string()) return it->value().get_string();
  }
  return {};
}

std::optional<std::uint32_t> uint_field(const json::object& object,
                                        std::initializer_list<std::string_view> keys) {
  for (auto key : keys) {
    auto it = object.find(key);
    if (it == object.end()) continue;
    if (it->value().is_int64() && it->value().get_int64() > 0)
      return static_cast<std::uint32_t>(it->value().get_int64());
    if (it->value().is_uint64()) return static_cast<std::uint32_t>(it->value().get_uint64());
  }
  return std::nullopt;
}

std::string normalize_role(std::string_view role) {
  if (role == "human" || role == "user") return "user";
  if (role == "gpt" || role == "assistant" || role == "bard" || role == "chatgpt")
    return "assistant";
  if (role == "system") return "system";
  return std::string(role);
}

}  // namespace

std::vector<PromptItem> parse_dataset(std::string_view text, std::size_t max_items) {
  std::vector<PromptItem> out;
  std::size_t line_no = 0;
  while (!text.empty() && (max_items == 0 || out.size() < max_items)) {
    const auto newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    ++line_no;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    boost::system::error_code ec;
    json::value entry = json::parse(line, ec);
    if (ec)
      throw std::runtime_error(
          fmt::format("dataset line {}: not JSON ({})", line_no, ec.message()));
    PromptItem item;
    if (entry.is_string()) {
      item.text = std::string(entry.get_string());
    } else if (entry.is_object()) {
      const auto& fields = entry.get_object();
      const json::value* conv = fields.if_contains("conversations");
      if (!conv) conv = fields.if_contains("messages");
      if (conv && conv->is_array()) {
        bool have_user = false;
        for (const auto& turn : conv->get_array()) {
          if (!turn.is_object()) continue;
          const auto& turn_fields = turn.get_object();
          std::string role = normalize_role(str_field(turn_fields, {"from", "role"}));
          std::string content(str_field(turn_fields, {"value", "content"}));
          if (have_user && role == "assistant") {
            item.max_tokens =
                static_cast<std::uint32_t>(std::max<std::size_t>(1, Tokenizer::count(content)));
            break;
          }
          if (role == "user") {
            have_user = true;
            item.text = content;
          }
          item.messages.push_back(ChatMessage{std::move(role), std::move(content)});
        }
        if (!have_user)
          throw std::runtime_error(fmt::format("dataset line {}: no human/user turn", line_no));
        if (auto max_tokens = uint_field(fields, {"max_tokens", "output_tokens"}))
          item.max_tokens = max_tokens;
      } else {
        item.text = std::string(str_field(fields, {"prompt", "text", "input"}));
        if (item.text.empty())
          throw std::runtime_error(fmt::format(
              "dataset line {}: expected \"prompt\", \"text\", \"conversations\" or \"messages\"",
              line_no));
        item.max_tokens = uint_field(fields, {"max_tokens", "output_tokens", "output_len"});
      }
    } else {
      throw std::runtime_error(
          fmt::format("dataset line {}: expected an object or a string", line_no));
    }
    item.prompt_tokens = 0;
    if (item.messages.empty()) {
      item.prompt_tokens = Tokenizer::count(item.text);
    } else {
      for (const auto& message : item.messages)
        item.prompt_tokens += Tokenizer::count(message.content);
    }
    out.push_back(std::move(item));
  }
  return out;
}

std::vector<PromptItem> load_dataset(const std::string& path, std::size_t max_items) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error(fmt::format("cannot open dataset '{}'", path));
  std::stringstream contents;
  contents << file.rdbuf();
  auto items = parse_dataset(contents.str(), max_items);
  if (items.empty()) throw std::runtime_error(fmt::format("dataset '{}' has no prompts", path));
  return items;
}

std::string build_body(const PromptItem& item, const BodyOptions& opt) {
  json::object body;
  body["model"] = opt.model;
  const std::optional<std::uint32_t> max_tokens =
      item.max_tokens ? item.max_tokens : opt.max_tokens;
  auto messages = [&] {
    json::array msgs;
    if (!item.system.empty())
      msgs.push_back(json::object{{"role", "system"}, {"content", item.system}});
    if (item.messages.empty()) {
      msgs.push_back(json::object{{"role", "user"}, {"content", item.text}});
    } else {
      for (const auto& message : item.messages)
        msgs.push_back(json::object{{"role", message.role}, {"content", message.content}});
    }
    return msgs;
  };
  switch (opt.dialect) {
    case Dialect::completions:
      // A synthetic text starts with a space and follows the system prompt directly.
      if (item.system.empty() || item.text.empty() || item.text.front() == ' ' ||
          item.text.front() == '\n')
        body["prompt"] = item.system + item.text;
      else
        body["prompt"] = item.system + "\n\n" + item.text;
      if (max_tokens) body["max_tokens"] = *max_tokens;
      break;
    case Dialect::chat:
      body["messages"] = messages();
      if (max_tokens) body["max_tokens"] = *max_tokens;
      break;
    case Dialect::responses:
      if (!item.system.empty()) body["instructions"] = item.system;
      if (item.messages.empty()) {
        body["input"] = item.text;
      } else {
        json::array msgs;
        for (const auto& message : item.messages)
          msgs.push_back(json::object{{"role", message.role}, {"content", message.content}});
        body["input"] = std::move(msgs);
      }
      if (max_tokens) body["max_output_tokens"] = *max_tokens;
      body["store"] = false;
      break;
    case Dialect::messages: {
      // Anthropic's shape: the system prompt in its own field, and max_tokens required.
      if (!item.system.empty()) body["system"] = item.system;
      json::array msgs = messages();
      if (!item.system.empty()) msgs.erase(msgs.begin());
      body["messages"] = std::move(msgs);
      body["max_tokens"] = max_tokens.value_or(kMessagesDefaultMaxTokens);
      break;
    }
  }
  if (opt.temperature) body["temperature"] = *opt.temperature;
  if (opt.ignore_eos) body["ignore_eos"] = true;
  if (opt.stream) {
    body["stream"] = true;
    // (A Messages stream always ends with its usage.)
    if (opt.include_usage && opt.dialect != Dialect::responses && opt.dialect != Dialect::messages)
      body["stream_options"] = json::object{{"include_usage", true}};
  }
  return json::serialize(body);
}

std::string_view seed_prompt(std::string_view size) {
  static const std::string kShort = "Say hello in one short sentence.";
  static const std::string kMedium =
      "You are a helpful assistant running on a small cluster of two machines. Explain, in "
      "plain words and with one concrete example, how continuous batching lets a single "
      "inference server keep its accelerator busy while many clients send requests of very "
      "different lengths, and why the throughput of each stream drops a little as the batch "
      "grows while the total keeps rising until the machine saturates.";
  static const std::string kLong = [] {
    std::string text;
    for (int i = 0; i < 10; ++i) text += (i ? " " : "") + kMedium;
    return text;
  }();
  if (size == "short") return kShort;
  if (size == "long") return kLong;
  return kMedium;
}

}  // namespace llmux::bench
