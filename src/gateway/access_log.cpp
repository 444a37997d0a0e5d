// SPDX-License-Identifier: Apache-2.0
#include "gateway/access_log.hpp"

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>

#include "core/clock.hpp"

namespace llmux::gateway {
namespace {

/// The bytes a JSON string must escape: control characters, the quote and the backslash.
constexpr std::array<bool, 256> kEscaped = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 0x20; ++c) t[static_cast<std::size_t>(c)] = true;
  t['"'] = t['\\'] = true;
  return t;
}();

/// Whether one of the 8 bytes at `p` is a control character, '"' or '\\' (SWAR: a byte less
/// than n shows in (x - n*ones) & ~x & highs, exact as to whether any byte does).
bool escape_in_8(const char* p) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL, kHighs = 0x8080808080808080ULL;
  std::uint64_t x;
  std::memcpy(&x, p, 8);
  const std::uint64_t quote = x ^ (kOnes * '"'), slash = x ^ (kOnes * '\\');
  const std::uint64_t hit =
      ((x - kOnes * 0x20) & ~x) | ((quote - kOnes) & ~quote) | ((slash - kOnes) & ~slash);
  return (hit & kHighs) != 0;
}

/// Writes a line into memory sized for it beforehand (Line::bound): plain stores and memcpy, no
/// check per piece. fmt's buffer took ~150 instructions per piece appended and its
/// floating-point formatting ~2,000 per number, a third of a small request's cost.
struct Line {
  char* p;

  /// Room a line needs at most for these strings (each escaped, 6 bytes a byte at worst).
  static std::size_t bound(std::initializer_list<std::string_view> strings) {
    std::size_t n = 640;  // names, punctuation, numbers
    for (const auto s : strings) n += 6 * s.size();
    return n;
  }
  void put(std::string_view s) {
    if (s.empty()) return;  // (an empty view's data() may be null: no memcpy of it)
    std::memcpy(p, s.data(), s.size());
    p += s.size();
  }
  /// `s` as a JSON string: runs that need no escape are copied whole.
  void quoted(std::string_view s) {
    *p++ = '"';
    std::size_t run = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      // Eight bytes at a time while none needs an escape (most strings: all of them).
      while (i + 8 <= s.size() && !escape_in_8(s.data() + i)) i += 8;
      if (i == s.size()) break;
      const auto c = static_cast<unsigned char>(s[i]);
      if (!kEscaped[c]) continue;
      put(s.substr(run, i - run));
      run = i + 1;
      *p++ = '\\';
      switch (c) {
        case '"':
        case '\\':
          *p++ = static_cast<char>(c);
          break;
        case '\n':
          *p++ = 'n';
          break;
        case '\r':
          *p++ = 'r';
          break;
        case '\t':
          *p++ = 't';
          break;
        default: {
          static constexpr char kHex[] = "0123456789abcdef";
          const char u[5] = {'u', '0', '0', kHex[c >> 4], kHex[c & 0xf]};
          put(std::string_view(u, 5));
        }
      }
    }
    put(s.substr(run));
    *p++ = '"';
  }
  void integer(std::int64_t v) { p = std::to_chars(p, p + 24, v).ptr; }
  /// `v` with three decimals, as "{:.3f}" (rounded to the nearest thousandth).
  void fixed3(double v) {
    if (!(v == v) || v > 9e15 || v < -9e15) {  // NaN or huge: never a time here, but valid JSON
      put("null");
      return;
    }
    std::int64_t m = std::llround(v * 1000.0);
    if (m < 0) {
      *p++ = '-';
      m = -m;
    }
    integer(m / 1000);
    const auto frac = static_cast<int>(m % 1000);
    p[0] = '.';
    p[1] = static_cast<char>('0' + frac / 100);
    p[2] = static_cast<char>('0' + frac / 10 % 10);
    p[3] = static_cast<char>('0' + frac % 10);
    p += 4;
  }
};

}  // namespace

bool AccessLog::open(const std::string& target, std::string& error) {
  if (target == "off") return true;
  if (target == "stdout") {
    file_ = stdout;
    std::setvbuf(file_, nullptr, _IONBF, 0);  // whole blocks of lines go in one write
    enabled_ = true;
    return true;
  }
  file_ = std::fopen(target.c_str(), "a");
  if (!file_) {
    error = fmt::format("cannot open access log '{}': {}", target, std::strerror(errno));
    return false;
  }
  std::setvbuf(file_, nullptr, _IONBF, 0);  // whole blocks of lines go in one write
  owned_ = true;
  enabled_ = true;
  path_ = target;
  return true;
}

bool AccessLog::reopen(std::string& error) {
  if (!owned_) return true;
  std::FILE* f = std::fopen(path_.c_str(), "a");
  if (!f) {
    error = fmt::format("cannot reopen access log '{}': {}", path_, std::strerror(errno));
    return false;
  }
  std::setvbuf(f, nullptr, _IONBF, 0);
  std::lock_guard<std::mutex> lock(mu_);
  write_pending();  // the lines gathered so far go to the old file
  std::fclose(file_);
  file_ = f;
  return true;
}

void AccessLog::write_pending() {
  if (pending_.empty()) return;
  std::fwrite(pending_.data(), 1, pending_.size(), file_);
  pending_.clear();
}

void AccessLog::flush() {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  write_pending();
}

AccessLog::~AccessLog() {
  if (file_) write_pending();
  if (owned_ && file_) std::fclose(file_);
}

void AccessLog::write(const AccessRecord& record) {
  if (!enabled_) return;
  thread_local std::string out;  // its memory reused line after line
  out.resize(
      Line::bound({record.request_id, record.client, record.method, record.path, record.route,
                   record.backend, record.model, record.key, record.affinity, record.error}));
  Line l{out.data()};
  const std::int64_t ms = unix_ms();
  l.put("{\"ts\":");
  l.fixed3(static_cast<double>(ms) / 1000.0);
  l.put(",\"request_id\":");
  l.quoted(record.request_id);
  l.put(",\"client\":");
  l.quoted(record.client);
  l.put(",\"method\":");
  l.quoted(record.method);
  l.put(",\"path\":");
  l.quoted(record.path);
  l.put(",\"route\":");
  l.quoted(record.route);
  l.put(",\"backend\":");
  l.quoted(record.backend);
  l.put(",\"model\":");
  l.quoted(record.model);
  l.put(record.stream ? ",\"stream\":true,\"status\":" : ",\"stream\":false,\"status\":");
  l.integer(record.status);
  l.put(",\"attempts\":");
  l.integer(record.attempts);
  l.put(",\"bytes_in\":");
  l.integer(static_cast<std::int64_t>(record.bytes_in));
  l.put(",\"bytes_out\":");
  l.integer(static_cast<std::int64_t>(record.bytes_out));
  l.put(",\"ttfb_ms\":");
  l.fixed3(record.ttfb_ms);
  l.put(",\"total_ms\":");
  l.fixed3(record.total_ms);
  if (record.queue_depth > 0) {
    l.put(",\"queue_depth\":");
    l.integer(record.queue_depth);
    l.put(",\"queue_ms\":");
    l.fixed3(record.queue_ms);
  }
  if (!record.key.empty()) {
    l.put(",\"key\":");
    l.quoted(record.key);
  }
  if (!record.affinity.empty()) {
    l.put(",\"affinity\":");
    l.quoted(record.affinity);
  }
  if (record.prompt_tokens) {
    l.put(",\"prompt_tokens\":");
    l.integer(*record.prompt_tokens);
  }
  if (record.completion_tokens) {
    l.put(",\"completion_tokens\":");
    l.integer(*record.completion_tokens);
  }
  if (!record.error.empty()) {
    l.put(",\"error\":");
    l.quoted(record.error);
  }
  l.put("}\n");
  out.resize(static_cast<std::size_t>(l.p - out.data()));
  std::lock_guard<std::mutex> lock(mu_);
  pending_.append(out.data(), out.size());
  if (pending_.size() >= kBuffer) write_pending();
}

}  // namespace llmux::gateway
