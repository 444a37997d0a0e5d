// SPDX-License-Identifier: Apache-2.0
// Report tables and their text formats: Markdown and CSV, and the number formats (report.hpp).
#include "bench/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>

namespace llmux::bench {
namespace json = boost::json;

// ---------------------------------------------------------------------------------------------
// Tables

Table::Table(std::vector<std::string> headers) : headers_(std::move(headers)) {
  align_.assign(headers_.size(), Align::right);
  if (!align_.empty()) align_.front() = Align::left;
}

Table::Table(std::vector<std::string> headers, std::vector<Align> align)
    : headers_(std::move(headers)), align_(std::move(align)) {
  align_.resize(headers_.size(), Align::left);
}

Table& Table::add_row(std::vector<std::string> cells) {
  if (cells.size() > headers_.size()) {
    throw std::invalid_argument(fmt::format("table row has {} cells but the table has {} columns",
                                            cells.size(), headers_.size()));
  }
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
  return *this;
}

std::size_t display_width(std::string_view text) {
  std::size_t width = 0;
  for (unsigned char byte : text) {
    if ((byte & 0xC0) != 0x80) ++width;  // count every byte that is not a continuation byte
  }
  return width;
}

namespace {

std::string md_cell(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char character = text[i];
    if (character == '|') {
      out += "\\|";
    } else if (character == '\r' || character == '\n') {
      if (character == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      out += ' ';
    } else {
      out += character;
    }
  }
  return out;
}

void append_padded(std::string& out, const std::string& cell, std::size_t width, Align align) {
  const std::size_t pad = width - std::min(width, display_width(cell));
  if (align == Align::right) out.append(pad, ' ');
  out += cell;
  if (align == Align::left) out.append(pad, ' ');
}

}  // namespace

std::string to_markdown(const Table& table, const MarkdownOptions& opt) {
  const std::size_t cols = table.columns();
  std::vector<std::string> header(cols);
  std::vector<std::vector<std::string>> rows;
  std::vector<std::size_t> width(cols, 3);  // a separator needs at least "---"
  for (std::size_t c = 0; c < cols; ++c) {
    header[c] = md_cell(table.headers()[c]);
    width[c] = std::max(width[c], display_width(header[c]));
  }
  rows.reserve(table.rows().size());
  for (const auto& table_row : table.rows()) {
    auto& row = rows.emplace_back(cols);
    for (std::size_t c = 0; c < cols; ++c) {
      row[c] = md_cell(table_row[c]);
      width[c] = std::max(width[c], display_width(row[c]));
    }
  }
  std::string out;
  if (!opt.title.empty()) {
    out.append(static_cast<std::size_t>(std::max(1, opt.heading_level)), '#');
    out += ' ';
    out += opt.title;
    out += "\n\n";
  }
  auto line = [&](const std::vector<std::string>& cells) {
    out += '|';
    for (std::size_t c = 0; c < cols; ++c) {
      out += ' ';
      append_padded(out, cells[c], width[c], table.align()[c]);
      out += " |";
    }
    out += '\n';
  };
  line(header);
  out += '|';
  for (std::size_t c = 0; c < cols; ++c) {
    out += ' ';
    if (table.align()[c] == Align::right) {
      out.append(width[c] - 1, '-');
      out += ':';
    } else {
      out.append(width[c], '-');
    }
    out += " |";
  }
  out += '\n';
  for (const auto& row : rows) line(row);
  for (const auto& note : opt.notes) {
    out += '\n';
    out += note;
    out += '\n';
  }
  return out;
}

std::string csv_field(std::string_view field) {
  if (field.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(field);
  std::string out;
  out.reserve(field.size() + 2);
  out += '"';
  for (char character : field) {
    if (character == '"') out += '"';
    out += character;
  }
  out += '"';
  return out;
}

std::string csv_record(std::span<const std::string> fields) {
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ',';
    out += csv_field(fields[i]);
  }
  out += "\r\n";
  return out;
}

std::string to_csv(const Table& table) {
  std::string out = csv_record(table.headers());
  for (const auto& row : table.rows()) out += csv_record(row);
  return out;
}

std::string fmt_num(double value, int decimals) {
  if (!std::isfinite(value)) return "-";
  return fmt::format("{:.{}f}", value, std::max(0, decimals));
}

std::string fmt_pct(double fraction, int decimals) {
  if (std::isnan(fraction)) return "-";
  if (std::isinf(fraction)) return fraction > 0 ? "+inf%" : "-inf%";
  return fmt::format("{:+.{}f}%", fraction * 100.0, std::max(0, decimals));
}

}  // namespace llmux::bench
