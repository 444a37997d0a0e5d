// SPDX-License-Identifier: Apache-2.0
#include "openai/stream.hpp"

#include <simdjson.h>

#include <algorithm>
#include <cstring>

#include "core/tokenizer.hpp"
#include "openai/json_read.hpp"

namespace llmux::openai {
namespace od = simdjson::ondemand;
using namespace json_read;

std::string_view to_string(Dialect d) {
  switch (d) {
    case Dialect::completions:
      return "completions";
    case Dialect::chat:
      return "chat";
    case Dialect::responses:
      return "responses";
  }
  return "completions";
}

std::optional<Dialect> parse_dialect(std::string_view name) {
  if (name == "completions") return Dialect::completions;
  if (name == "chat") return Dialect::chat;
  if (name == "responses") return Dialect::responses;
  return std::nullopt;
}

std::string_view endpoint_path(Dialect d) {
  switch (d) {
    case Dialect::completions:
      return "/v1/completions";
    case Dialect::chat:
      return "/v1/chat/completions";
    case Dialect::responses:
      return "/v1/responses";
  }
  return "/v1/completions";
}

struct JsonScratch::Impl {
  od::parser parser;
  std::string buf;  // the text being parsed, with SIMDJSON_PADDING bytes after it
};

JsonScratch::JsonScratch() : impl_(std::make_unique<Impl>()) {}
JsonScratch::~JsonScratch() = default;

/// One call's work: the parsing code, over the interpreter's state and the scratch's parser.
struct StreamInterpreter::Run {
  explicit Run(StreamInterpreter& s)
      : parser(s.scratch_->impl_->parser),
        buf(s.scratch_->impl_->buf),
        dialect(s.dialect_),
        capture(s.capture_),
        usage(s.usage_),
        tokens(s.tokens_),
        content_events(s.content_events_),
        done(s.done_),
        self(s),
        last_completion_tokens(s.last_completion_tokens_),
        sequence_number(s.sequence_number_) {}

  od::parser& parser;
  std::string& buf;
  const Dialect dialect;
  const bool capture;
  StreamUsage& usage;
  std::uint64_t& tokens;
  std::uint64_t& content_events;
  bool& done;
  StreamInterpreter& self;  // id, finish reason, error and text live in its Extra
  std::optional<std::uint64_t>& last_completion_tokens;  // cumulative, for continuous usage
  std::optional<std::uint64_t>& sequence_number;

  // Per-event scratch.
  std::uint64_t est = 0;
  bool any_text = false;

  void set_finish_reason(std::string_view v) {
    if (self.capture_ids_) self.extra().finish_reason = v;
  }

  void set_id(std::string_view v, bool first_only) {
    if (!self.capture_ids_) return;
    auto& x = self.extra();
    if (!first_only || x.id.empty()) x.id = v;
  }

  void add_text(std::string_view s) {
    if (s.empty()) return;
    est += std::max<std::size_t>(1, Tokenizer::count(s));
    any_text = true;
    if (capture) self.extra().text.append(s);
  }

  void add_text_value(od::value& v) {
    std::string_view s;
    if (get_str(v, s)) add_text(s);
  }

  void merge_usage(const StreamUsage& u) {
    if (u.prompt_tokens) usage.prompt_tokens = u.prompt_tokens;
    if (u.completion_tokens) usage.completion_tokens = u.completion_tokens;
    if (u.cached_tokens) usage.cached_tokens = u.cached_tokens;
  }

  void set_error(StreamError e) {
    auto& x = self.extra();
    if (!x.error) x.error = std::move(e);
  }

  void parse_delta(od::value& v) {
    if (!is_type(v, od::json_type::object)) return;
    for (auto field : v.get_object()) {
      std::string_view key = field.unescaped_key();
      od::value val = field.value();
      if (key == "content" || key == "reasoning_content" || key == "reasoning") {
        add_text_value(val);
      } else if (key == "tool_calls" && is_type(val, od::json_type::array)) {
        for (od::value call : val.get_array()) {
          if (!is_type(call, od::json_type::object)) continue;
          for (auto cf : call.get_object()) {
            std::string_view ck = cf.unescaped_key();
            if (ck != "function") continue;
            od::value fn = cf.value();
            if (!is_type(fn, od::json_type::object)) continue;
            for (auto ff : fn.get_object()) {
              std::string_view fk = ff.unescaped_key();
              od::value fv = ff.value();
              if (fk == "name" || fk == "arguments") add_text_value(fv);
            }
          }
        }
      }
    }
  }

  void parse_choice(od::value& c) {
    if (!is_type(c, od::json_type::object)) return;
    for (auto field : c.get_object()) {
      std::string_view key = field.unescaped_key();
      od::value val = field.value();
      if (key == "text") {
        add_text_value(val);
      } else if (key == "delta" || key == "message") {
        parse_delta(val);
      } else if (key == "finish_reason") {
        std::string_view s;
        if (get_str(val, s)) set_finish_reason(s);
      }
    }
  }

  EventInfo chat_or_completion(od::object& obj) {
    EventInfo info;
    bool has_choices = false;
    bool got_usage = false;
    StreamUsage u;
    bool flat_error = false;
    StreamError flat;
    for (auto field : obj) {
      std::string_view key = field.unescaped_key();
      od::value val = field.value();
      if (key == "choices") {
        if (!is_type(val, od::json_type::array)) continue;
        for (od::value c : val.get_array()) {
          has_choices = true;
          parse_choice(c);
        }
      } else if (key == "usage") {
        if (is_type(val, od::json_type::object)) {
          parse_usage(val, u);
          got_usage = true;
        }
      } else if (key == "error") {
        StreamError e;
        parse_error_object(val, e);
        if (!is_type(val, od::json_type::null)) {
          info.error = true;
          set_error(std::move(e));
        }
      } else if (key == "object") {
        std::string_view s;
        if (get_str(val, s) && s == "error") flat_error = true;
      } else if (key == "message") {
        flat.message = scalar_text(val);
      } else if (key == "type") {
        flat.type = scalar_text(val);
      } else if (key == "code") {
        flat.code = scalar_text(val);
      } else if (key == "id") {
        std::string_view s;
        if (get_str(val, s)) set_id(s, /*first_only=*/true);
      }
    }
    if (flat_error && !info.error) {
      info.error = true;
      set_error(std::move(flat));
    }
    if (got_usage) {
      info.usage = true;
      merge_usage(u);
    }
    if (has_choices && got_usage && u.completion_tokens) {
      // Continuous usage: completion_tokens is cumulative; this chunk carries the growth.
      const std::uint64_t prev = last_completion_tokens.value_or(0);
      const std::uint64_t now = *u.completion_tokens;
      info.tokens = static_cast<std::uint32_t>(now > prev ? now - prev : 0);
      info.tokens_exact = true;
    } else {
      info.tokens = static_cast<std::uint32_t>(est);
    }
    if (got_usage && u.completion_tokens) last_completion_tokens = u.completion_tokens;
    info.content = any_text || info.tokens > 0;
    return info;
  }

  EventInfo responses(std::string_view event_name, od::object& obj) {
    EventInfo info;
    std::string_view type;
    std::string_view delta;
    bool has_delta = false;
    bool got_usage = false;
    StreamUsage u;
    std::string status;
    std::optional<StreamError> resp_error;
    std::optional<StreamError> top_error;
    StreamError event_error;
    for (auto field : obj) {
      std::string_view key = field.unescaped_key();
      od::value val = field.value();
      if (key == "type") {
        get_str(val, type);
      } else if (key == "sequence_number") {
        if (auto n = get_u64(val)) sequence_number = n;
      } else if (key == "delta") {
        has_delta = get_str(val, delta);
      } else if (key == "response") {
        if (!is_type(val, od::json_type::object)) continue;
        for (auto rf : val.get_object()) {
          std::string_view rk = rf.unescaped_key();
          od::value rv = rf.value();
          if (rk == "id") {
            std::string_view s;
            if (get_str(rv, s)) set_id(s, /*first_only=*/false);
          } else if (rk == "status") {
            status = scalar_text(rv);
          } else if (rk == "usage") {
            if (is_type(rv, od::json_type::object)) {
              parse_usage(rv, u);
              got_usage = true;
            }
          } else if (rk == "error") {
            if (!is_type(rv, od::json_type::null)) {
              resp_error.emplace();
              parse_error_object(rv, *resp_error);
            }
          }
        }
      } else if (key == "error") {
        if (!is_type(val, od::json_type::null)) {
          top_error.emplace();
          parse_error_object(val, *top_error);
        }
      } else if (key == "message") {
        event_error.message = scalar_text(val);
      } else if (key == "code") {
        event_error.code = scalar_text(val);
      }
    }
    if (type.empty()) type = event_name;

    if (has_delta && is_text_delta_type(type)) add_text(delta);
    if (got_usage) {
      info.usage = true;
      merge_usage(u);
    }
    if (type == "response.completed" || type == "response.incomplete") {
      info.done = true;
      if (!status.empty()) set_finish_reason(status);
    } else if (type == "response.failed") {
      info.done = true;
      info.error = true;
      StreamError e = resp_error.value_or(StreamError{});
      if (e.message.empty()) e.message = "response.failed";
      if (e.type.empty()) e.type = "response.failed";
      set_error(std::move(e));
      if (!status.empty()) set_finish_reason(status);
    } else if (type == "error") {
      info.error = true;
      StreamError e = top_error ? *top_error : event_error;
      if (e.type.empty()) e.type = "error";
      set_error(std::move(e));
    }
    if (top_error && !info.error) {
      info.error = true;
      set_error(std::move(*top_error));
    }
    info.tokens = static_cast<std::uint32_t>(est);
    info.content = any_text;
    return info;
  }

  /// A whole /v1/responses body.
  EventInfo responses_body(od::object& obj) {
    EventInfo info;
    bool got_usage = false;
    StreamUsage u;
    for (auto field : obj) {
      std::string_view key = field.unescaped_key();
      od::value val = field.value();
      if (key == "id") {
        std::string_view s;
        if (get_str(val, s)) set_id(s, /*first_only=*/false);
      } else if (key == "status") {
        set_finish_reason(scalar_text(val));
      } else if (key == "usage") {
        if (is_type(val, od::json_type::object)) {
          parse_usage(val, u);
          got_usage = true;
        }
      } else if (key == "error") {
        if (!is_type(val, od::json_type::null)) {
          StreamError e;
          parse_error_object(val, e);
          info.error = true;
          set_error(std::move(e));
        }
      } else if (key == "output") {
        if (!is_type(val, od::json_type::array)) continue;
        for (od::value item : val.get_array()) {
          if (!is_type(item, od::json_type::object)) continue;
          for (auto itf : item.get_object()) {
            std::string_view ik = itf.unescaped_key();
            od::value iv = itf.value();
            if (ik == "arguments") {
              add_text_value(iv);
            } else if (ik == "content" && is_type(iv, od::json_type::array)) {
              for (od::value part : iv.get_array()) {
                if (!is_type(part, od::json_type::object)) continue;
                for (auto pf : part.get_object()) {
                  std::string_view pk = pf.unescaped_key();
                  od::value pv = pf.value();
                  if (pk == "text") add_text_value(pv);
                }
              }
            }
          }
        }
      }
    }
    if (got_usage) {
      info.usage = true;
      merge_usage(u);
    }
    if (got_usage && u.completion_tokens) {
      info.tokens = static_cast<std::uint32_t>(*u.completion_tokens);
      info.tokens_exact = true;
    } else {
      info.tokens = static_cast<std::uint32_t>(est);
    }
    info.content = any_text || info.tokens > 0;
    return info;
  }

  EventInfo on_body(std::string_view body) {
    est = 0;
    any_text = false;
    EventInfo info;
    const std::size_t n = body.size();
    if (buf.size() < n + simdjson::SIMDJSON_PADDING) buf.resize(n + simdjson::SIMDJSON_PADDING);
    if (n > 0) std::memcpy(buf.data(), body.data(), n);
    try {
      od::document doc = parser.iterate(buf.data(), n, buf.size());
      od::object obj = doc.get_object();
      info = dialect == Dialect::responses ? responses_body(obj) : chat_or_completion(obj);
    } catch (const simdjson::simdjson_error&) {
      info = EventInfo{};
      info.malformed = true;
    }
    info.done = true;
    done = true;
    tokens += info.tokens;
    if (info.content) ++content_events;
    return info;
  }

  EventInfo on_body_usage(std::string_view body) {
    const std::string_view obj = last_usage_object(body);
    if (obj.empty()) return on_body(body);
    EventInfo info;
    if (StreamUsage u; read_usage_flat(obj, u)) {  // the usual plain object
      merge_usage(u);
      info.usage = true;
      info.done = true;
      done = true;
      return info;
    }
    const std::size_t n = obj.size();
    if (buf.size() < n + simdjson::SIMDJSON_PADDING) buf.resize(n + simdjson::SIMDJSON_PADDING);
    std::memcpy(buf.data(), obj.data(), n);
    try {
      od::document doc = parser.iterate(buf.data(), n, buf.size());
      od::value v = doc.get_value();
      StreamUsage u;
      parse_usage(v, u);
      merge_usage(u);
      info.usage = true;
    } catch (const simdjson::simdjson_error&) {
      return on_body(body);  // not what it seemed: the whole body, as ever
    }
    info.done = true;
    done = true;
    return info;
  }

  EventInfo on_event(std::string_view event_name, std::string_view data) {
    est = 0;
    any_text = false;
    EventInfo info;
    std::string_view trimmed = data;
    while (!trimmed.empty() && (trimmed.front() == ' ' || trimmed.front() == '\t' ||
                                trimmed.front() == '\n' || trimmed.front() == '\r')) {
      trimmed.remove_prefix(1);
    }
    while (!trimmed.empty() && (trimmed.back() == ' ' || trimmed.back() == '\t' ||
                                trimmed.back() == '\n' || trimmed.back() == '\r')) {
      trimmed.remove_suffix(1);
    }
    if (trimmed == "[DONE]") {
      info.done = true;
      done = true;
      return info;
    }
    const std::size_t n = data.size();
    if (buf.size() < n + simdjson::SIMDJSON_PADDING) buf.resize(n + simdjson::SIMDJSON_PADDING);
    if (n > 0) std::memcpy(buf.data(), data.data(), n);
    try {
      od::document doc = parser.iterate(buf.data(), n, buf.size());
      od::object obj = doc.get_object();
      info = dialect == Dialect::responses ? responses(event_name, obj) : chat_or_completion(obj);
    } catch (const simdjson::simdjson_error&) {
      EventInfo bad;
      bad.malformed = true;
      est = 0;
      return bad;
    }
    tokens += info.tokens;
    if (info.content) ++content_events;
    if (info.done) done = true;
    return info;
  }
};

StreamInterpreter::StreamInterpreter(Dialect dialect, bool capture_text)
    : owned_(std::make_unique<JsonScratch>()),
      scratch_(owned_.get()),
      dialect_(dialect),
      capture_(capture_text) {}
StreamInterpreter::StreamInterpreter(Dialect dialect, JsonScratch& shared, bool capture_text,
                                     bool capture_ids)
    : scratch_(&shared), dialect_(dialect), capture_(capture_text), capture_ids_(capture_ids) {}

StreamInterpreter::Extra& StreamInterpreter::extra() {
  if (!extra_) extra_ = std::make_unique<Extra>();
  return *extra_;
}

namespace {
const std::string kEmpty;
const std::optional<StreamError> kNoError;
}  // namespace

const std::optional<StreamError>& StreamInterpreter::error() const {
  return extra_ ? extra_->error : kNoError;
}
const std::string& StreamInterpreter::id() const {
  return extra_ ? extra_->id : kEmpty;
}
const std::string& StreamInterpreter::finish_reason() const {
  return extra_ ? extra_->finish_reason : kEmpty;
}
const std::string& StreamInterpreter::text() const {
  return extra_ ? extra_->text : kEmpty;
}
StreamInterpreter::~StreamInterpreter() = default;
StreamInterpreter::StreamInterpreter(StreamInterpreter&&) noexcept = default;
StreamInterpreter& StreamInterpreter::operator=(StreamInterpreter&&) noexcept = default;

EventInfo StreamInterpreter::on_event(std::string_view event_name, std::string_view data) {
  return Run(*this).on_event(event_name, data);
}
EventInfo StreamInterpreter::on_body(std::string_view body) {
  return Run(*this).on_body(body);
}
EventInfo StreamInterpreter::on_body_usage(std::string_view body) {
  return Run(*this).on_body_usage(body);
}
void StreamInterpreter::reset() {
  usage_ = {};
  tokens_ = 0;
  content_events_ = 0;
  done_ = false;
  if (extra_) *extra_ = Extra{};
  last_completion_tokens_.reset();
  sequence_number_.reset();
}
void StreamInterpreter::reset(Dialect dialect) {
  reset();
  dialect_ = dialect;
}

}  // namespace llmux::openai
