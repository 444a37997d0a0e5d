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
  std::array<bool, 256> escaped{};
  for (int c = 0; c < 0x20; ++c) escaped[static_cast<std::size_t>(c)] = true;
  escaped['"'] = escaped['\\'] = true;
  return escaped;
}();

/// Whether one of the 8 bytes at `data` is a control character, '"' or '\\' (SWAR: a byte less
/// than n shows in (word - n*ones) & ~word & highs, exact as to whether any byte does).
bool escape_in_8(const char* data) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL, kHighs = 0x8080808080808080ULL;
  std::uint64_t word;
  std::memcpy(&word, data, 8);
  const std::uint64_t quote = word ^ (kOnes * '"'), slash = word ^ (kOnes * '\\');
  const std::uint64_t hit =
      ((word - kOnes * 0x20) & ~word) | ((quote - kOnes) & ~quote) | ((slash - kOnes) & ~slash);
  return (hit & kHighs) != 0;
}

/// Writes a line into memory sized for it beforehand (Line::bound): plain stores and memcpy, no
/// check per piece. fmt's buffer took ~150 instructions per piece appended and its
/// floating-point formatting ~2,000 per number, a third of a small request's cost.
struct Line {
  char* p;

  /// Room a line needs at most for these strings (each escaped, 6 bytes a byte at worst).
  static std::size_t bound(std::initializer_list<std::string_view> strings) {
    std::size_t room = 768;  // names, punctuation, numbers
    for (const auto text : strings) room += 6 * text.size();
    return room;
  }
  void put(std::string_view text) {
    if (text.empty()) return;  // (an empty view's data() may be null: no memcpy of it)
    std::memcpy(p, text.data(), text.size());
    p += text.size();
  }
  /// `text` as a JSON string: runs that need no escape are copied whole.
  void quoted(std::string_view text) {
    *p++ = '"';
    std::size_t run = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
      // Eight bytes at a time while none needs an escape (most strings: all of them).
      while (i + 8 <= text.size() && !escape_in_8(text.data() + i)) i += 8;
      if (i == text.size()) break;
      const auto byte = static_cast<unsigned char>(text[i]);
      if (!kEscaped[byte]) continue;
      put(text.substr(run, i - run));
      run = i + 1;
      *p++ = '\\';
      switch (byte) {
        case '"':
        case '\\':
          *p++ = static_cast<char>(byte);
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
          const char escape[5] = {'u', '0', '0', kHex[byte >> 4], kHex[byte & 0xf]};
          put(std::string_view(escape, 5));
        }
      }
    }
    put(text.substr(run));
    *p++ = '"';
  }
  void integer(std::int64_t value) { p = std::to_chars(p, p + 24, value).ptr; }
  /// `value` with three decimals, as "{:.3f}" (rounded to the nearest thousandth).
  void fixed3(double value) {
    // NaN or huge: never a time here, but valid JSON
    if (!(value == value) || value > 9e15 || value < -9e15) {
      put("null");
      return;
    }
    std::int64_t thousandths = std::llround(value * 1000.0);
    if (thousandths < 0) {
      *p++ = '-';
      thousandths = -thousandths;
    }
    integer(thousandths / 1000);
    const auto frac = static_cast<int>(thousandths % 1000);
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
  std::FILE* file = std::fopen(path_.c_str(), "a");
  if (!file) {
    error = fmt::format("cannot reopen access log '{}': {}", path_, std::strerror(errno));
    return false;
  }
  std::setvbuf(file, nullptr, _IONBF, 0);
  std::lock_guard<std::mutex> lock(mu_);
  write_pending();  // the lines gathered so far go to the old file
  std::fclose(file_);
  file_ = file;
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

void AccessLog::write(const AccessRecord& record, std::string_view priority,
                      std::string_view prefill_backend) {
  if (!enabled_) return;
  thread_local std::string out;  // its memory reused line after line
  out.resize(
      Line::bound({record.request_id, record.client, record.method, record.path, record.route,
                   record.backend, record.model, record.tenant, record.tenant, priority,
                   record.affinity, record.error, record.migrated_from, prefill_backend}));
  Line line{out.data()};
  const std::int64_t ms = unix_ms();
  line.put("{\"ts\":");
  line.fixed3(static_cast<double>(ms) / 1000.0);
  line.put(",\"request_id\":");
  line.quoted(record.request_id);
  line.put(",\"client\":");
  line.quoted(record.client);
  line.put(",\"method\":");
  line.quoted(record.method);
  line.put(",\"path\":");
  line.quoted(record.path);
  line.put(",\"route\":");
  line.quoted(record.route);
  line.put(",\"backend\":");
  line.quoted(record.backend);
  line.put(",\"model\":");
  line.quoted(record.model);
  line.put(record.stream ? ",\"stream\":true,\"status\":" : ",\"stream\":false,\"status\":");
  line.integer(record.status);
  line.put(",\"attempts\":");
  line.integer(record.attempts);
  line.put(",\"bytes_in\":");
  line.integer(static_cast<std::int64_t>(record.bytes_in));
  line.put(",\"bytes_out\":");
  line.integer(static_cast<std::int64_t>(record.bytes_out));
  line.put(",\"ttfb_ms\":");
  line.fixed3(record.ttfb_ms);
  line.put(",\"total_ms\":");
  line.fixed3(record.total_ms);
  if (record.migrations > 0) {
    // The stream went on from other backends (gateway/migration.hpp); `backend` is the last.
    line.put(",\"migrations\":");
    line.integer(record.migrations);
    line.put(",\"migrated_from\":");
    line.quoted(record.migrated_from);
  }
  if (!prefill_backend.empty()) {
    // Disaggregated (gateway/disaggregation.hpp): the prefill leg's backend ("unified": none
    // answered) and its time; `backend` decoded.
    line.put(",\"prefill_backend\":");
    line.quoted(prefill_backend);
    line.put(",\"prefill_ms\":");
    line.integer(record.prefill_ms);
  }
  if (record.hedge != HedgeResult::none)
    // The first attempt raced a hedge on another backend (gateway/hedge.hpp): who won.
    line.put(record.hedge == HedgeResult::hedge_won ? ",\"hedge\":\"hedge_won\""
                                                    : ",\"hedge\":\"first_won\"");
  if (record.queue_depth > 0) {
    line.put(",\"queue_depth\":");
    line.integer(record.queue_depth);
    line.put(",\"queue_ms\":");
    line.fixed3(record.queue_ms);
  }
  if (record.tenant_is_key) {
    line.put(",\"key\":");
    line.quoted(record.tenant);
  }
  if (!record.tenant.empty()) {
    // Whom it was for and its priority class (gateway/sharing.hpp).
    line.put(",\"tenant\":");
    line.quoted(record.tenant);
  }
  if (!priority.empty()) {
    line.put(",\"priority\":");
    line.quoted(priority);
  }
  if (!record.affinity.empty()) {
    line.put(",\"affinity\":");
    line.quoted(record.affinity);
  }
  if (record.prompt_tokens) {
    line.put(",\"prompt_tokens\":");
    line.integer(*record.prompt_tokens);
  }
  if (record.completion_tokens) {
    line.put(",\"completion_tokens\":");
    line.integer(*record.completion_tokens);
  }
  if (!record.error.empty()) {
    line.put(",\"error\":");
    line.quoted(record.error);
  }
  line.put("}\n");
  out.resize(static_cast<std::size_t>(line.p - out.data()));
  std::lock_guard<std::mutex> lock(mu_);
  pending_.append(out.data(), out.size());
  if (pending_.size() >= kBuffer) write_pending();
}

}  // namespace llmux::gateway
