#include "gateway/access_log.hpp"

#include <fmt/format.h>
#include <boost/json/serialize.hpp>
#include <boost/json/string_view.hpp>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace llmux::gateway {
namespace {

void quoted(fmt::memory_buffer& out, std::string_view s) {
  // JSON string escaping; access-log fields are short, so this is cheap.
  out.push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        out.append(std::string_view("\\\""));
        break;
      case '\\':
        out.append(std::string_view("\\\\"));
        break;
      case '\n':
        out.append(std::string_view("\\n"));
        break;
      case '\r':
        out.append(std::string_view("\\r"));
        break;
      case '\t':
        out.append(std::string_view("\\t"));
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<int>(c));
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

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

void AccessLog::write(const AccessRecord& r) {
  if (!enabled_) return;
  fmt::memory_buffer out;
  const auto now = std::chrono::system_clock::now();
  const double ts = std::chrono::duration<double>(now.time_since_epoch()).count();
  fmt::format_to(std::back_inserter(out), "{{\"ts\":{:.3f},\"request_id\":", ts);
  quoted(out, r.request_id);
  out.append(std::string_view(",\"client\":"));
  quoted(out, r.client);
  out.append(std::string_view(",\"method\":"));
  quoted(out, r.method);
  out.append(std::string_view(",\"path\":"));
  quoted(out, r.path);
  out.append(std::string_view(",\"route\":"));
  quoted(out, r.route);
  out.append(std::string_view(",\"backend\":"));
  quoted(out, r.backend);
  out.append(std::string_view(",\"model\":"));
  quoted(out, r.model);
  fmt::format_to(std::back_inserter(out),
                 ",\"stream\":{},\"status\":{},\"attempts\":{},\"bytes_in\":{},\"bytes_out\":{},"
                 "\"ttfb_ms\":{:.3f},\"total_ms\":{:.3f}",
                 r.stream, r.status, r.attempts, r.bytes_in, r.bytes_out, r.ttfb_ms, r.total_ms);
  if (r.queue_depth > 0)
    fmt::format_to(std::back_inserter(out), ",\"queue_depth\":{},\"queue_ms\":{:.3f}",
                   r.queue_depth, r.queue_ms);
  if (!r.key.empty()) {
    out.append(std::string_view(",\"key\":"));
    quoted(out, r.key);
  }
  if (!r.affinity.empty()) {
    out.append(std::string_view(",\"affinity\":"));
    quoted(out, r.affinity);
  }
  if (r.prompt_tokens)
    fmt::format_to(std::back_inserter(out), ",\"prompt_tokens\":{}", *r.prompt_tokens);
  if (r.completion_tokens)
    fmt::format_to(std::back_inserter(out), ",\"completion_tokens\":{}", *r.completion_tokens);
  if (!r.error.empty()) {
    out.append(std::string_view(",\"error\":"));
    quoted(out, r.error);
  }
  out.append(std::string_view("}\n"));
  std::lock_guard<std::mutex> lock(mu_);
  pending_.append(out.data(), out.size());
  if (pending_.size() >= kBuffer) write_pending();
}

}  // namespace llmux::gateway
