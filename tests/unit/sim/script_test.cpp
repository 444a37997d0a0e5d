// SPDX-License-Identifier: Apache-2.0
// What the simulator says when told (issue 14, part 3): `--script FILE` turns (JSON or YAML),
// played in order or matched on the last user message / tool output, and `--tool-call-share`
// calls whose arguments are valid for the tool's JSON schema. Arguments given as an object are
// written as vLLM's tool parsers write them (Python's json.dumps: `{"a": 1}`; see
// vllm/entrypoints/openai/tool_parsers/qwen3coder_tool_parser.py, commit 0054011d).
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <stdexcept>

#include "sim/input_items.hpp"
#include "sim/script.hpp"

namespace llmux::sim {
namespace {

namespace json = boost::json;

TEST(Script, YamlTurnsWithEveryField) {
  Script s = parse_script(R"(
- match: "list the files"
  reasoning: I should run ls.
  tool_calls:
    - name: shell
      arguments: {command: ["ls", "-la"], timeout_ms: 1000, login: false}
- text: "There are two files."
- tool_calls:
    - {name: raw, arguments: '{"x":1}'}
)");
  ASSERT_EQ(s.turns.size(), 3u);
  EXPECT_EQ(s.turns[0].match, "list the files");
  EXPECT_EQ(s.turns[0].reasoning, "I should run ls.");
  ASSERT_EQ(s.turns[0].calls.size(), 1u);
  EXPECT_EQ(s.turns[0].calls[0].first, "shell");
  // Typed YAML scalars, in Python's json.dumps layout.
  EXPECT_EQ(s.turns[0].calls[0].second,
            R"({"command": ["ls", "-la"], "timeout_ms": 1000, "login": false})");
  EXPECT_FALSE(s.turns[1].match);
  EXPECT_EQ(s.turns[1].text, "There are two files.");
  EXPECT_EQ(s.turns[2].calls[0].second, R"({"x":1})");  // a string is kept as is
}

TEST(Script, JsonWithTurnsKey) {
  Script s = parse_script(
      R"({"turns":[{"text":"hi"},{"match":"README","text":"done","reasoning":"ok"}]})");
  ASSERT_EQ(s.turns.size(), 2u);
  EXPECT_EQ(s.turns[1].match, "README");
  EXPECT_EQ(s.turns[1].reasoning, "ok");
}

TEST(Script, ErrorsNameTheTurnAndField) {
  auto fails = [](const char* text, const char* says) {
    try {
      parse_script(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  fails("[]", "no turns");
  fails("{a: 1}", "a list of turns");
  fails("- {text: hi, colour: red}", "turn 1: unknown field 'colour'");
  fails("- {text: hi}\n- {match: x}", "turn 2: says nothing");
  fails("- {tool_calls: [{arguments: {}}]}", "turn 1: tool_calls[0] needs a 'name'");
  fails("- {tool_calls: [{name: f, arguments: [1]}]}", "must be a mapping or a string");
  fails("- {text: [1, 2]}", "turn 1: 'text' must be a string");
  fails("- {text: \"unclosed", "not JSON or YAML");
}

TEST(ScriptPlayerTest, MatchedTurnsFirstThenUnmatchedInOrderAround) {
  auto s = std::make_shared<const Script>(parse_script(R"(
- {text: one}
- {match: README, text: matched}
- {text: two}
)"));
  ScriptPlayer p(s);
  EXPECT_EQ(p.pick("hello")->text, "one");
  EXPECT_EQ(p.pick("README.md\nsrc")->text, "matched");  // does not move the order
  EXPECT_EQ(p.pick("hello")->text, "two");
  EXPECT_EQ(p.pick("hello")->text, "one");  // after the last, the first again

  ScriptPlayer only_matched(std::make_shared<const Script>(parse_script("- {match: x, text: y}")));
  EXPECT_EQ(only_matched.pick("nothing here"), nullptr);
}

TEST(SchemaExample, ValidValuesForEachType) {
  const auto schema = json::parse(R"({
    "type": "object",
    "properties": {
      "command": {"type": "array", "items": {"type": "string"}, "minItems": 1},
      "mode": {"type": "string", "enum": ["fast", "slow"]},
      "n": {"type": "integer", "minimum": 3},
      "ratio": {"type": "number"},
      "flag": {"type": "boolean"},
      "name": {"type": ["string", "null"], "minLength": 8},
      "opt": {"type": "string"},
      "nested": {"type": "object", "properties": {"k": {"const": 7}}, "required": ["k"]},
      "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    },
    "required": ["command", "mode", "n", "ratio", "flag", "name", "nested", "either"]
  })");
  const json::value v = schema_example(schema);
  EXPECT_EQ(v, json::parse(R"({"command":["value"],"mode":"fast","n":3,"ratio":1.0,"flag":true,
                               "name":"valuexxx","nested":{"k":7},"either":1})"));
  EXPECT_FALSE(v.as_object().contains("opt"));  // only required properties
}

TEST(StatisticalCall, ShareToolChoiceAndArguments) {
  GenRequest r;
  r.function_tools.push_back(
      FunctionTool{"shell", json::parse(R"({"type":"object","properties":{"command":{"type":"array",
        "items":{"type":"string"},"minItems":1}},"required":["command"]})")});
  r.function_tools.push_back(FunctionTool{"noop", json::object{}});
  auto c = statistical_call(r, 0.5, 0.25, 0);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->first, "shell");
  EXPECT_EQ(c->second, R"({"command": ["value"]})");
  EXPECT_FALSE(statistical_call(r, 0.5, 0.75, 0));  // the draw is above the share
  auto other = statistical_call(r, 1.0, 0.0, 1);
  ASSERT_TRUE(other);
  EXPECT_EQ(other->first, "noop");
  EXPECT_EQ(other->second, "{}");
  r.tool_choice = "none";
  EXPECT_FALSE(statistical_call(r, 1.0, 0.0, 0));
  r.tool_choice = json::parse(R"({"type":"function","name":"noop"})");
  EXPECT_EQ(statistical_call(r, 1.0, 0.0, 0)->first, "noop");  // a named choice is honoured
  GenRequest none;
  EXPECT_FALSE(statistical_call(none, 1.0, 0.0, 0));  // no function tools
}

TEST(PythonJson, LayoutOfJsonDumps) {
  EXPECT_EQ(python_json(json::parse(R"({"a":[1,2,{"b":null}],"c":"é\n"})")),
            "{\"a\": [1, 2, {\"b\": null}], \"c\": \"é\\n\"}");
}

}  // namespace
}  // namespace llmux::sim
