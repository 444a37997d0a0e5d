// SPDX-License-Identifier: Apache-2.0
#pragma once
// Streams shaped as vLLM's OpenAI server writes them, shared by the unit tests of the stream
// reader (tests/unit/openai) and of the bench's statistics fed by it (tests/unit/bench).
namespace llmux::testing {

/// A chat stream: the role chunk, reasoning, content, the finish chunk, usage, [DONE].
// clang-format off
inline const char* const kChatStream =
    R"(data: {"id":"chatcmpl-77","object":"chat.completion.chunk","created":1745000000,"model":"Qwen3.6-35B-A3B","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]})"
    "\n\n"
    R"(data: {"id":"chatcmpl-77","object":"chat.completion.chunk","created":1745000000,"model":"Qwen3.6-35B-A3B","choices":[{"index":0,"delta":{"reasoning_content":" Hmm"},"logprobs":null,"finish_reason":null}]})"
    "\n\n"
    R"(data: {"id":"chatcmpl-77","object":"chat.completion.chunk","created":1745000000,"model":"Qwen3.6-35B-A3B","choices":[{"index":0,"delta":{"content":" Hi","reasoning_content":null},"logprobs":null,"finish_reason":null}]})"
    "\n\n"
    R"(data: {"id":"chatcmpl-77","object":"chat.completion.chunk","created":1745000000,"model":"Qwen3.6-35B-A3B","choices":[{"index":0,"delta":{"content":" say \"hi\""},"logprobs":null,"finish_reason":null}]})"
    "\n\n"
    R"(data: {"id":"chatcmpl-77","object":"chat.completion.chunk","created":1745000000,"model":"Qwen3.6-35B-A3B","choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"stop","stop_reason":null}]})"
    "\n\n"
    R"(data: {"id":"chatcmpl-77","object":"chat.completion.chunk","created":1745000000,"model":"Qwen3.6-35B-A3B","choices":[],"usage":{"prompt_tokens":20,"total_tokens":27,"completion_tokens":7}})"
    "\n\n"
    "data: [DONE]\n\n";
// clang-format on

}  // namespace llmux::testing
