// SPDX-License-Identifier: Apache-2.0
// Fuzz target: the incremental SSE parser (src/openai/sse.hpp). A socket may cut the
// stream anywhere, so how the body is split into chunks must not change what is parsed:
// feeding the input in pieces must dispatch exactly the events (name, data, id) that feeding
// it whole does, count the same comments and end in the same state.
//
// Input layout: byte 0 chooses the split, the rest is the stream.
//   bits 0-5: the chunk size, 1-64 bytes
//   bit 6:    vary the chunk sizes (0 to 2x that size, empty chunks included), from a PRNG
//             seeded with the input, instead of cutting every N bytes
//   bit 7:    small parser limits (64-byte lines, 256-byte events) so the failure paths run
// The split parser is also a reused one (reset() after a different stream), which must behave
// like a fresh parser.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "openai/sse.hpp"

namespace {

using llmux::openai::SseEvent;
using llmux::openai::SseParser;

struct Event {
  std::string event, data, id;
  bool operator==(const Event&) const = default;
};

struct Result {
  std::vector<Event> events;
  std::size_t returned = 0;  // sum of feed()'s return values
  std::uint64_t counted = 0, comments = 0;
  bool failed = false, mid_event = false;
};

Result finish(const SseParser& p, std::vector<Event> events, std::size_t returned) {
  return Result{std::move(events), returned, p.events(), p.comments(), p.failed(), p.mid_event()};
}

std::string escape(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

void dump(const char* label, const Result& r) {
  std::fprintf(stderr, "%s: %zu events (feed returned %zu, events() %llu), comments %llu, %s%s\n",
               label, r.events.size(), r.returned, static_cast<unsigned long long>(r.counted),
               static_cast<unsigned long long>(r.comments), r.failed ? "failed" : "ok",
               r.mid_event ? ", mid-event" : "");
  for (std::size_t i = 0; i < r.events.size(); ++i)
    std::fprintf(stderr, "  [%zu] event='%s' data='%s' id='%s'\n", i,
                 escape(r.events[i].event).c_str(), escape(r.events[i].data).c_str(),
                 escape(r.events[i].id).c_str());
}

[[noreturn]] void fail(const char* what, const Result& whole, const Result& split,
                       const std::vector<std::size_t>& cuts) {
  std::fprintf(stderr, "sse_fuzz: invariant broken: %s\nchunks:", what);
  for (std::size_t c : cuts) std::fprintf(stderr, " %zu", c);
  std::fprintf(stderr, "\n");
  dump("whole", whole);
  dump("split", split);
  std::abort();
}

/// The chunk sizes to cut `n` bytes into, from the control byte.
std::vector<std::size_t> chunk_sizes(std::uint8_t control, std::string_view stream) {
  const std::size_t base = (control & 0x3f) + 1;
  std::vector<std::size_t> sizes;
  std::uint64_t state = 0x9e3779b97f4a7c15ull ^ (control * 0x100000001b3ull) ^ stream.size();
  for (unsigned char c : stream.substr(0, 16)) state = (state ^ c) * 0x100000001b3ull;
  std::size_t left = stream.size();
  while (left > 0) {
    std::size_t k = base;
    if (control & 0x40) {  // xorshift64
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      k = static_cast<std::size_t>(state % (2 * base + 1));  // 0 (an empty chunk) to 2*base
    }
    k = std::min(k, left);
    sizes.push_back(k);
    left -= k;
  }
  return sizes;
}

template <typename Feed>
Result run(SseParser& p, Feed&& feed_all) {
  std::vector<Event> events;
  std::size_t returned = 0;
  auto on_event = [&](const SseEvent& e) {
    events.push_back(Event{std::string(e.event), std::string(e.data), std::string(e.id)});
  };
  feed_all([&](std::string_view chunk) { returned += p.feed(chunk, on_event); });
  return finish(p, std::move(events), returned);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t control = data[0];
  const std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);
  SseParser::Limits limits;
  if (control & 0x80) limits = SseParser::Limits{64, 256};

  SseParser whole_parser(limits);
  const Result whole = run(whole_parser, [&](auto feed) { feed(stream); });

  // The split run uses a parser that already parsed another stream and was reset().
  SseParser split_parser(limits);
  split_parser.feed("id: stale\r\nevent: old\ndata: left over\n\n:comment\ndata: partial",
                    [](const SseEvent&) {});
  split_parser.reset();
  const std::vector<std::size_t> cuts = chunk_sizes(control, stream);
  const Result split = run(split_parser, [&](auto feed) {
    std::size_t at = 0;
    for (std::size_t k : cuts) {
      feed(stream.substr(at, k));
      at += k;
    }
  });

  if (whole.events != split.events) fail("different events", whole, split, cuts);
  if (whole.returned != whole.events.size() || split.returned != split.events.size())
    fail("feed() returned a count other than the events dispatched", whole, split, cuts);
  if (whole.counted != whole.events.size() || split.counted != split.events.size())
    fail("events() differs from the events dispatched", whole, split, cuts);
  if (whole.comments != split.comments) fail("different comment counts", whole, split, cuts);
  if (whole.failed != split.failed) fail("failed() differs", whole, split, cuts);
  // After a failure the parser ignores the rest; what it still buffers is unspecified.
  if (!whole.failed && whole.mid_event != split.mid_event)
    fail("mid_event() differs", whole, split, cuts);
  return 0;
}
