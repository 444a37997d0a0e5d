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
  for (auto piece : pieces) out.push_back(TurnPiece{seg, call, std::string(piece)});
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
  for (const auto& piece : pieces) full.reasoning_tokens += piece.seg == Seg::Reasoning;
}

TurnOutput TurnPlan::emitted(std::size_t count) const {
  TurnOutput out;
  out.reasoning_id = full.reasoning_id;
  count = std::min(count, pieces.size());
  for (std::size_t i = 0; i < count; ++i) {
    const TurnPiece& piece = pieces[i];
    switch (piece.seg) {
      case Seg::Reasoning:
        out.reasoning += piece.text;
        ++out.reasoning_tokens;
        break;
      case Seg::Text:
        out.text += piece.text;
        break;
      case Seg::CallHeader: {
        OutputCall call = full.calls[static_cast<std::size_t>(piece.call)];
        call.arguments.clear();
        out.calls.push_back(std::move(call));
        break;
      }
      case Seg::CallArgs:
        out.calls.back().arguments += piece.text;
        break;
    }
  }
  return out;
}

bool TurnPlan::same_item(std::size_t first_index, std::size_t second_index) const {
  const TurnPiece& first = pieces[first_index];
  const TurnPiece& second = pieces[second_index];
  auto group = [](Seg seg) { return seg == Seg::CallArgs ? Seg::CallHeader : seg; };
  return group(first.seg) == group(second.seg) && first.call == second.call;
}

TurnPlan make_plan(std::string reasoning, std::string text,
                   std::vector<std::pair<std::string, std::string>> calls,
                   std::string_view call_prefix, int call_hex) {
  TurnPlan turn_plan;
  turn_plan.full.reasoning = std::move(reasoning);
  turn_plan.full.text = std::move(text);
  turn_plan.full.reasoning_id = random_id("rs_");
  for (auto& [name, args] : calls) {
    turn_plan.full.calls.push_back(OutputCall{std::move(name), std::move(args),
                                              random_id(call_prefix, call_hex), random_id("fc_")});
  }
  turn_plan.build();
  return turn_plan;
}

json::array turn_output_items(const TurnOutput& turn, std::string_view msg_id) {
  json::array out;
  if (!turn.reasoning.empty()) {
    // serving_responses.py: summary [], content [reasoning_text], status None.
    json::object item{{"id", turn.reasoning_id}, {"summary", json::array{}}, {"type", "reasoning"}};
    item["content"] =
        json::array{json::object{{"text", turn.reasoning}, {"type", "reasoning_text"}}};
    item["encrypted_content"] = nullptr;
    item["status"] = nullptr;
    out.push_back(std::move(item));
  }
  if (!turn.text.empty()) {
    json::object part{{"type", "output_text"}, {"text", turn.text}, {"annotations", json::array{}}};
    part["logprobs"] = nullptr;
    out.push_back(json::object{{"id", msg_id},
                               {"type", "message"},
                               {"role", "assistant"},
                               {"status", "completed"},
                               {"content", json::array{part}}});
  }
  for (const auto& call : turn.calls) {
    out.push_back(json::object{{"arguments", call.arguments},
                               {"call_id", call.call_id},
                               {"name", call.name},
                               {"type", "function_call"},
                               {"id", call.item_id},
                               {"status", "completed"}});
  }
  return out;
}

std::string assistant_history(const TurnOutput& turn) {
  std::string out = turn.text;
  for (const auto& call : turn.calls) {
    if (!out.empty()) out += "\n";
    out += render_tool_call(call.name, call.arguments);
  }
  return out;
}

std::string_view chat_finish_reason(const TurnOutput& turn, std::string_view finish) {
  return finish == "stop" && !turn.calls.empty() ? std::string_view("tool_calls") : finish;
}

std::string chat_turn_body(const ResponseMeta& meta, const TurnOutput& out, const Usage& usage) {
  json::array calls;
  for (const auto& call : out.calls) {
    calls.push_back(json::object{
        {"id", call.call_id},
        {"type", "function"},
        {"function", json::object{{"name", call.name}, {"arguments", call.arguments}}}});
  }
  const std::string_view finish_reason = chat_finish_reason(out, meta.finish_reason);
  return fmt::format(
      R"({{"id":"{}","object":"chat.completion","created":{},"model":{},"choices":[{{"index":0,"message":{{"role":"assistant","content":{},"refusal":null,"annotations":null,"audio":null,"function_call":null,"tool_calls":{},"reasoning":{}}},"logprobs":null,"finish_reason":{},"stop_reason":null,"token_ids":null}}],"service_tier":null,"system_fingerprint":null,"usage":{},"prompt_logprobs":null,"prompt_token_ids":null,"kv_transfer_params":{}}})",
      meta.id, meta.created, json_quote(meta.model),
      out.text.empty() ? "null" : json_quote(out.text), json::serialize(calls),
      out.reasoning.empty() ? "null" : json_quote(out.reasoning),
      finish_reason.empty() ? "null" : fmt::format("\"{}\"", finish_reason), usage_json(usage),
      kv_transfer_params_json(meta));
}

}  // namespace llmux::sim
