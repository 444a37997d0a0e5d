// SPDX-License-Identifier: Apache-2.0
#include "openai/sse.hpp"

namespace llmux::openai {

void SseParser::reset() {
  if (bufs_) {
    bufs_->line.clear();
    bufs_->id.clear();
  }
  clear_event();
  skip_lf_ = false;
  first_line_ = true;
  failed_ = false;
  comments_ = 0;
  events_ = 0;
  cr_line_ends_ = 0;
}

void SseParser::own_views() {
  if (event_in_chunk_) {
    bufs().event.assign(event_view_);
    event_in_chunk_ = false;
  }
  if (data_in_chunk_) {
    bufs().data.assign(data_view_);
    data_in_chunk_ = false;
  }
}

void SseParser::clear_event() {
  if (bufs_) {
    bufs_->data.clear();
    bufs_->event.clear();
  }
  data_in_chunk_ = false;
  event_in_chunk_ = false;
  has_data_ = false;
}

bool SseParser::on_line(std::string_view line, bool in_chunk) {
  if (first_line_) {
    first_line_ = false;
    constexpr std::string_view kBom = "\xEF\xBB\xBF";
    if (line.starts_with(kBom)) line.remove_prefix(kBom.size());
  }
  if (line.empty()) {
    if (has_data_) return true;
    if (bufs_) bufs_->event.clear();  // a block without data is dropped, name included
    event_in_chunk_ = false;
    return false;
  }
  if (line.front() == ':') {
    ++comments_;
    return false;
  }
  std::string_view field = line;
  std::string_view value;
  if (const std::size_t colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (data_size() + value.size() + 1 > limits_.max_event) {
      failed_ = true;
      return false;
    }
    if (!has_data_ && in_chunk) {
      data_view_ = value;  // the common case: one data line, kept in place
      data_in_chunk_ = true;
    } else {
      if (data_in_chunk_) {
        bufs().data.assign(data_view_);
        data_in_chunk_ = false;
      }
      auto& data = bufs().data;
      if (has_data_) data.push_back('\n');
      data.append(value);
    }
    has_data_ = true;
  } else if (field == "event") {
    if (in_chunk) {
      event_view_ = value;
      event_in_chunk_ = true;
    } else {
      bufs().event.assign(value);
      event_in_chunk_ = false;
    }
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) bufs().id.assign(value);
  }
  // "retry" and unknown fields are ignored.
  return false;
}

}  // namespace llmux::openai
