// SPDX-License-Identifier: Apache-2.0
// llmux::http::MessageParser (message_parser.hpp): the header (start line and field lines, RFC
// 9112 §2-§5), the events of parse() and parse_eof(), and the bodies with a length or running
// until the close. Framing fields: message_parser_fields.cpp; chunked bodies and trailers:
// message_parser_chunked.cpp.
#include "http/message_parser.hpp"

#include <algorithm>
#include <string_view>

#include <boost/beast/http/verb.hpp>

#include "http/message_parser_detail.hpp"
#include "http/parser_namespace.hpp"
#include "http/parser_scan.hpp"

namespace llmux::http {
inline namespace LLMUX_PARSER_NAMESPACE {

namespace bhttp = boost::beast::http;

MessageParser::MessageParser(MessageKind kind, ParseLimits limits) : limits_(limits), kind_(kind) {
  reset();
}

void MessageParser::reset() {
  stage_ = Stage::start_line;
  step_ = kind_ == MessageKind::request ? LineStep::method : LineStep::version;
  error_ = {};
  position_ = line_start_ = token_start_ = value_start_ = 0;
  name_ = {};
  first_field_line_ = true;
  header_base_ = nullptr;
  method_ = target_ = reason_ = {};
  verb_ = bhttp::verb::unknown;
  version_ = status_ = 0;
  if (tables_) {  // (none taken here: a parser waiting for its header holds none; tables())
    tables_->field_slots.clear();
    tables_->trailer_slots.clear();
    tables_->fields.clear();
    tables_->trailer_fields.clear();
  }
  content_length_.reset();
  te_present_ = te_chunked_ = te_has_chunked_ = false;
  connection_close_ = connection_keep_alive_ = connection_upgrade_ = false;
  no_body_expected_ = until_eof_ = header_seen_ = started_ = false;
  remaining_ = body_received_ = 0;
}

std::vector<std::unique_ptr<MessageParser::FieldTables>>& MessageParser::spare_field_tables() {
  thread_local std::vector<std::unique_ptr<FieldTables>> spare;
  return spare;
}

MessageParser::FieldTables& MessageParser::tables() {
  if (!tables_) {
    auto& spare = spare_field_tables();
    if (spare.empty()) {
      tables_ = std::make_unique<FieldTables>();
    } else {
      tables_ = std::move(spare.back());  // tables given back by a message before, memory and all
      spare.pop_back();
    }
  }
  return *tables_;
}

void MessageParser::release_field_tables() {
  static constexpr std::size_t kSpareTables = 256;  // per thread; more are freed
  auto& spare = spare_field_tables();
  if (tables_ && spare.size() < kSpareTables) {
    tables_->field_slots.clear();  // (their capacity is what the next message takes)
    tables_->trailer_slots.clear();
    tables_->fields.clear();
    tables_->trailer_fields.clear();
    spare.push_back(std::move(tables_));
  }
  tables_.reset();
}

void MessageParser::expect_no_body() {
  no_body_expected_ = true;
  // Right after the header event: the body the header announced is not coming.
  const bool body_not_started = body_received_ == 0 && position_ == 0;
  if (header_seen_ && body_not_started &&
      (stage_ == Stage::length_body || stage_ == Stage::eof_body || stage_ == Stage::chunk_line)) {
    stage_ = Stage::done;
    until_eof_ = false;
  }
}

std::optional<std::uint64_t> MessageParser::content_length() const {
  return content_length_;
}

bool MessageParser::keep_alive() const {
  if (until_eof_) return false;
  if (version_ >= 11) return !connection_close_;
  // HTTP/1.0 (deliberate difference 5): "keep-alive" without "close", no Transfer-Encoding.
  return connection_keep_alive_ && !connection_close_ && !te_present_;
}

ParseStep MessageParser::fail(bhttp::error error, std::size_t consumed) {
  stage_ = Stage::failed;
  error_ = error;
  return {ParseEvent::error, consumed, {}, error};
}

ParseStep MessageParser::parse(std::string_view input) {
  switch (stage_) {
    case Stage::start_line:
    case Stage::field_lines:
      return parse_header(input);
    case Stage::length_body: {
      if (input.empty()) return {ParseEvent::need_more, 0, {}, {}};
      const std::size_t taken =
          static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, input.size()));
      remaining_ -= taken;
      body_received_ += taken;
      if (remaining_ == 0) stage_ = Stage::done;
      return {ParseEvent::body, taken, input.substr(0, taken), {}};
    }
    case Stage::eof_body: {
      if (input.empty()) return {ParseEvent::need_more, 0, {}, {}};
      if (limits_.body_bytes && input.size() > *limits_.body_bytes - body_received_)
        return fail(bhttp::error::body_limit, 0);
      body_received_ += input.size();
      return {ParseEvent::body, input.size(), input, {}};
    }
    case Stage::chunk_line:
    case Stage::chunk_data:
    case Stage::chunk_data_end:
    case Stage::trailer_lines:
      return parse_chunked(input);
    case Stage::done:
      return {ParseEvent::message_end, 0, {}, {}};
    case Stage::failed:
      break;
  }
  return {ParseEvent::error, 0, {}, error_};
}

ParseStep MessageParser::parse_eof() {
  switch (stage_) {
    case Stage::start_line:
      if (!started_) return fail(bhttp::error::end_of_stream, 0);
      return fail(bhttp::error::partial_message, 0);
    case Stage::eof_body:
      stage_ = Stage::done;
      return {ParseEvent::message_end, 0, {}, {}};
    case Stage::done:
      return {ParseEvent::message_end, 0, {}, {}};
    case Stage::failed:
      return {ParseEvent::error, 0, {}, error_};
    default:
      return fail(bhttp::error::partial_message, 0);
  }
}

ParseStep MessageParser::parse_header(std::string_view input) {
  if (!input.empty()) started_ = true;
  const char* const section = input.data();
  // Nothing past the limit can be part of a header that fits (the blank line's CRLF may follow
  // it), so no scan goes further.
  const std::size_t size =
      static_cast<std::size_t>(std::min<std::uint64_t>(input.size(), limits_.header_bytes + 2ull));
  if (stage_ == Stage::start_line) {
    const SectionResult result = scan_start_line(section, size);
    if (result == SectionResult::need_more) return {ParseEvent::need_more, 0, {}, {}};
    if (result == SectionResult::failed) return fail(error_, 0);
    stage_ = Stage::field_lines;
    step_ = LineStep::line_start;
    first_field_line_ = true;
  }
  const SectionResult result = scan_field_lines(section, size, /*trailers=*/false);
  if (result == SectionResult::need_more) return {ParseEvent::need_more, 0, {}, {}};
  if (result == SectionResult::failed) return fail(error_, 0);
  const std::size_t header_size = position_;
  header_base_ = section;
  if (!finish_header()) return fail(error_, 0);
  header_seen_ = true;
  make_views(section, tables().field_slots, tables().fields);
  if (kind_ == MessageKind::request) verb_ = bhttp::string_to_verb(method());
  position_ = 0;  // the body's scans start afresh
  return {ParseEvent::header, header_size, {}, {}};
}

void MessageParser::make_views(const char* base, const std::vector<FieldSlot>& slots,
                               std::vector<FieldView>& views) {
  views.clear();  // (no element constructed twice: each is made in place from its slot)
  for (const FieldSlot& slot : slots)
    views.push_back({slot.name,
                     {base + slot.name_span.offset, slot.name_span.length},
                     {base + slot.value_span.offset, slot.value_span.length}});
}

MessageParser::SectionResult MessageParser::section_error(bhttp::error ec, std::size_t offset) {
  // A wrong byte past the limit: the header was too long before it was wrong.
  error_ = offset >= limits_.header_bytes ? bhttp::error::header_limit : ec;
  return SectionResult::failed;
}

MessageParser::SectionResult MessageParser::section_need_more(std::size_t size) {
  // Inside a line: it ends past `size`, so past the limit if `size` is.
  if (size > limits_.header_bytes) {
    error_ = bhttp::error::header_limit;
    return SectionResult::failed;
  }
  return SectionResult::need_more;
}

// request-line = method SP request-target SP HTTP-version CRLF (RFC 9112 §3)
// status-line = HTTP-version SP status-code SP [ reason-phrase ] CRLF (RFC 9112 §4)
// HTTP-version: "HTTP/1.0" or "HTTP/1.1" only (Beast's; RFC 9112 §2.3 lets a server refuse
// other versions).
MessageParser::SectionResult MessageParser::scan_start_line(const char* section, std::size_t size) {
  const char* const end = section + size;
  const bool request = kind_ == MessageKind::request;
  switch (step_) {
    case LineStep::method: {
      const char* stop = parser_detail::find_non_token(section + position_, end);
      position_ = static_cast<std::size_t>(stop - section);
      if (stop == end) return section_need_more(size);
      if (*stop != ' ' || position_ == 0) return section_error(bhttp::error::bad_method, position_);
      method_ = {0, static_cast<std::uint32_t>(position_)};
      ++position_;
      token_start_ = position_;
      step_ = LineStep::target;
      [[fallthrough]];
    }
    case LineStep::target: {
      // Any visible byte (obs-text included), as Beast takes a request-target.
      const char* stop = parser_detail::find_non_path(section + position_, end);
      position_ = static_cast<std::size_t>(stop - section);
      if (stop == end) return section_need_more(size);
      if (*stop != ' ' || position_ == token_start_)
        return section_error(bhttp::error::bad_target, position_);
      target_ = {static_cast<std::uint32_t>(token_start_),
                 static_cast<std::uint32_t>(position_ - token_start_)};
      ++position_;
      token_start_ = position_;
      step_ = LineStep::version;
      [[fallthrough]];
    }
    case LineStep::version: {
      // Checked byte by byte: an error is found at the first wrong byte, however the bytes come.
      static constexpr std::string_view prefix = "HTTP/1.";
      for (; position_ < size && position_ - token_start_ < 8; ++position_) {
        const std::size_t offset = position_ - token_start_;
        const char byte = section[position_];
        if (offset < prefix.size() ? byte != prefix[offset] : (byte != '0' && byte != '1'))
          return section_error(bhttp::error::bad_version, position_);
      }
      if (position_ - token_start_ < 8) return section_need_more(size);
      version_ = section[position_ - 1] == '1' ? 11 : 10;
      token_start_ = position_;
      step_ = request ? LineStep::start_line_end : LineStep::status;
      if (request) return scan_start_line(section, size);
      [[fallthrough]];
    }
    case LineStep::status: {
      // SP, three digits, SP.
      for (; position_ < size && position_ - token_start_ < 5; ++position_) {
        const std::size_t offset = position_ - token_start_;
        const char byte = section[position_];
        if (offset == 0 && byte != ' ') return section_error(bhttp::error::bad_version, position_);
        if (offset == 4 && byte != ' ') return section_error(bhttp::error::bad_status, position_);
        if (offset >= 1 && offset <= 3) {
          if (!message_detail::is_digit(byte))
            return section_error(bhttp::error::bad_status, position_);
          status_ = status_ * 10 + static_cast<unsigned>(byte - '0');
        }
      }
      if (position_ - token_start_ < 5) return section_need_more(size);
      token_start_ = position_;
      step_ = LineStep::reason;
      [[fallthrough]];
    }
    case LineStep::reason: {
      // reason-phrase = 1*( HTAB / SP / VCHAR / obs-text )
      const char* stop = parser_detail::find_value_stop(section + position_, end);
      position_ = static_cast<std::size_t>(stop - section);
      if (stop == end) return section_need_more(size);
      if (*stop != '\r') return section_error(bhttp::error::bad_reason, position_);
      reason_ = {static_cast<std::uint32_t>(token_start_),
                 static_cast<std::uint32_t>(position_ - token_start_)};
      step_ = LineStep::start_line_end;
      [[fallthrough]];
    }
    case LineStep::start_line_end: {
      // CRLF. After the version of a request, or the reason of a response (at its CR).
      if (position_ == size) return section_need_more(size);
      if (section[position_] != '\r')
        return section_error(request ? bhttp::error::bad_version : bhttp::error::bad_reason,
                             position_);
      if (position_ + 1 == size) return section_need_more(size);
      if (section[position_ + 1] != '\n')
        return section_error(request ? bhttp::error::bad_version : bhttp::error::bad_line_ending,
                             position_ + 1);
      position_ += 2;
      if (position_ > limits_.header_bytes) return section_error(bhttp::error::header_limit, 0);
      return SectionResult::complete;
    }
    default:
      break;
  }
  return SectionResult::complete;
}

// field-line = field-name ":" OWS field-value OWS CRLF (RFC 9112 §5), field-name = token,
// field-value = *field-content: visible bytes, obs-text, and SP / HTAB inside (RFC 9110 §5.5).
MessageParser::SectionResult MessageParser::scan_field_lines(const char* section, std::size_t size,
                                                             bool trailers) {
  const char* const end = section + size;
  std::vector<FieldSlot>& slots = trailers ? tables().trailer_slots : tables().field_slots;
  for (;;) {
    switch (step_) {
      case LineStep::line_start: {
        if (position_ == size) return SectionResult::need_more;
        const char byte = section[position_];
        if (byte == '\r') {  // the blank line that ends the section
          if (position_ + 1 == size) return SectionResult::need_more;
          if (section[position_ + 1] != '\n')
            return section_error(bhttp::error::bad_line_ending, position_ + 1);
          position_ += 2;
          return SectionResult::complete;
        }
        if (message_detail::is_whitespace(byte)) {
          // Whitespace before the first field line (RFC 9112 §2.2), or obs-fold (§5.2):
          // deliberate difference 1.
          return section_error(
              first_field_line_ && !trailers ? bhttp::error::bad_field : bhttp::error::bad_obs_fold,
              position_);
        }
        line_start_ = position_;
        step_ = LineStep::name;
        [[fallthrough]];
      }
      case LineStep::name: {
        const char* stop = parser_detail::find_non_token(section + position_, end);
        position_ = static_cast<std::size_t>(stop - section);
        if (stop == end) return section_need_more(size);
        // No whitespace between the name and the colon (RFC 9112 §5.1), no empty name.
        if (*stop != ':' || position_ == line_start_)
          return section_error(bhttp::error::bad_field, position_);
        name_ = {static_cast<std::uint32_t>(line_start_),
                 static_cast<std::uint32_t>(position_ - line_start_)};
        ++position_;
        step_ = LineStep::before_value;
        [[fallthrough]];
      }
      case LineStep::before_value: {
        while (position_ < size && message_detail::is_whitespace(section[position_])) ++position_;
        if (position_ == size) return section_need_more(size);
        value_start_ = position_;
        step_ = LineStep::value;
        [[fallthrough]];
      }
      case LineStep::value: {
        const char* stop = parser_detail::find_value_stop(section + position_, end);
        position_ = static_cast<std::size_t>(stop - section);
        if (stop == end) return section_need_more(size);
        // A control byte, DEL, or a bare LF (Beast's bad_value too).
        if (*stop != '\r') return section_error(bhttp::error::bad_value, position_);
        step_ = LineStep::after_cr;
        [[fallthrough]];
      }
      case LineStep::after_cr: {
        if (position_ + 1 >= size) return section_need_more(size);
        if (section[position_ + 1] != '\n')  // a bare CR
          return section_error(bhttp::error::bad_line_ending, position_ + 1);
        std::size_t value_end = position_;
        while (value_end > value_start_ && message_detail::is_whitespace(section[value_end - 1]))
          --value_end;
        position_ += 2;
        if (position_ > limits_.header_bytes) return section_error(bhttp::error::header_limit, 0);
        const std::string_view name(section + name_.offset, name_.length);
        const std::string_view value(section + value_start_, value_end - value_start_);
        const bhttp::field known = parser_detail::lookup_field(name);
        slots.push_back(
            {known,
             name_,
             {static_cast<std::uint32_t>(value_start_), static_cast<std::uint32_t>(value.size())}});
        if (!take_field(known, value, trailers)) return SectionResult::failed;
        first_field_line_ = false;
        step_ = LineStep::line_start;
        break;
      }
      default:
        return SectionResult::complete;
    }
  }
}

}  // namespace LLMUX_PARSER_NAMESPACE
}  // namespace llmux::http
