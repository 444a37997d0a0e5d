// SPDX-License-Identifier: Apache-2.0
#include "sim/turn.hpp"

#include <boost/json.hpp>

#include <fmt/format.h>

#include "core/ids.hpp"
#include "core/tokenizer.hpp"
#include "sim/input_items.hpp"

namespace llmux::sim {
namespace json = boost::json;

namespace {
void cut(std::string_view text, Seg seg, int call, std::vector<TurnPiece>& out) {
  std::vector<std::string_view> pieces;
  Tokenizer::pieces(text, pieces);
  for (auto p : pieces) out.push_back(TurnPiece{seg, call, std::string(p)});
}
}  // namespace

void TurnPlan::build() {
  pieces.clear();
  cut(full.reasoning, Seg::Reasoning, -1, pieces);
  cut(full.text, Seg::Text, -1, pieces);
  for (std::size_t k = 0; k < full.calls.size(); ++k) {
    pieces.push_back(TurnPiece{Seg::CallHeader, static_cast<int>(k), {}});
    cut(full.calls[k].arguments, Seg::CallArgs, static_cast<int>(k), pieces);
  }
  full.reasoning_tokens = 0;
  for (const auto& p : pieces) full.reasoning_tokens += p.seg == Seg::Reasoning;
}

TurnOutput TurnPlan::emitted(std::size_t n) const {
  TurnOutput out;
  out.reasoning_id = full.reasoning_id;
  n = std::min(n, pieces.size());
  for (std::size_t i = 0; i < n; ++i) {
    const TurnPiece& p = pieces[i];
    switch (p.seg) {
      case Seg::Reasoning:
        out.reasoning += p.text;
        ++out.reasoning_tokens;
        break;
      case Seg::Text:
        out.text += p.text;
        break;
      case Seg::CallHeader: {
        OutputCall c = full.calls[static_cast<std::size_t>(p.call)];
        c.arguments.clear();
        out.calls.push_back(std::move(c));
        break;
      }
      case Seg::CallArgs:
        out.calls.back().arguments += p.text;
        break;
    }
  }
  return out;
}

bool TurnPlan::same_item(std::size_t a, std::size_t b) const {
  const TurnPiece& x = pieces[a];
  const TurnPiece& y = pieces[b];
  auto group = [](Seg s) { return s == Seg::CallArgs ? Seg::CallHeader : s; };
  return group(x.seg) == group(y.seg) && x.call == y.call;
}

TurnPlan make_plan(std::string reasoning, std::string text,
                   std::vector<std::pair<std::string, std::string>> calls,
                   std::string_view call_prefix, int call_hex) {
  TurnPlan p;
  p.full.reasoning = std::move(reasoning);
  p.full.text = std::move(text);
  p.full.reasoning_id = random_id("rs_");
  for (auto& [name, args] : calls) {
    p.full.calls.push_back(OutputCall{std::move(name), std::move(args),
                                      random_id(call_prefix, call_hex), random_id("fc_")});
  }
  p.build();
  return p;
}

json::array turn_output_items(const TurnOutput& t, std::string_view msg_id) {
  json::array out;
  if (!t.reasoning.empty()) {
    // serving_responses.py: summary [], content [reasoning_text], status None.
    json::object item{{"id", t.reasoning_id}, {"summary", json::array{}}, {"type", "reasoning"}};
    item["content"] = json::array{json::object{{"text", t.reasoning}, {"type", "reasoning_text"}}};
    item["encrypted_content"] = nullptr;
    item["status"] = nullptr;
    out.push_back(std::move(item));
  }
  if (!t.text.empty()) {
    json::object part{{"type", "output_text"}, {"text", t.text}, {"annotations", json::array{}}};
    part["logprobs"] = nullptr;
    out.push_back(json::object{{"id", msg_id},
                               {"type", "message"},
                               {"role", "assistant"},
                               {"status", "completed"},
                               {"content", json::array{part}}});
  }
  for (const auto& c : t.calls) {
    out.push_back(json::object{{"arguments", c.arguments},
                               {"call_id", c.call_id},
                               {"name", c.name},
                               {"type", "function_call"},
                               {"id", c.item_id},
                               {"status", "completed"}});
  }
  return out;
}

std::string assistant_history(const TurnOutput& t) {
  std::string out = t.text;
  for (const auto& c : t.calls) {
    if (!out.empty()) out += "\n";
    out += render_tool_call(c.name, c.arguments);
  }
  return out;
}

std::string_view chat_finish_reason(const TurnOutput& t, std::string_view finish) {
  return finish == "stop" && !t.calls.empty() ? std::string_view("tool_calls") : finish;
}

std::string chat_turn_body(const ResponseMeta& m, const TurnOutput& out, const Usage& u) {
  json::array calls;
  for (const auto& c : out.calls) {
    calls.push_back(
        json::object{{"id", c.call_id},
                     {"type", "function"},
                     {"function", json::object{{"name", c.name}, {"arguments", c.arguments}}}});
  }
  const std::string_view fr = chat_finish_reason(out, m.finish_reason);
  return fmt::format(
      R"({{"id":"{}","object":"chat.completion","created":{},"model":{},"choices":[{{"index":0,"message":{{"role":"assistant","content":{},"refusal":null,"annotations":null,"audio":null,"function_call":null,"tool_calls":{},"reasoning":{}}},"logprobs":null,"finish_reason":{},"stop_reason":null,"token_ids":null}}],"service_tier":null,"system_fingerprint":null,"usage":{},"prompt_logprobs":null,"prompt_token_ids":null,"kv_transfer_params":null}})",
      m.id, m.created, json_quote(m.model), out.text.empty() ? "null" : json_quote(out.text),
      json::serialize(calls), out.reasoning.empty() ? "null" : json_quote(out.reasoning),
      fr.empty() ? "null" : fmt::format("\"{}\"", fr), usage_json(u));
}

}  // namespace llmux::sim
