// SPDX-License-Identifier: Apache-2.0
#include "config/codex_profiles.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include <toml++/toml.h>
#include <boost/url/parse.hpp>

namespace llmux::config {

namespace {

/// A TOML basic string.
std::string toml_string(const std::string& text) {
  std::string out = "\"";
  for (const char character : text) {
    const auto code = static_cast<unsigned char>(character);
    if (character == '"' || character == '\\') {
      out += '\\';
      out += character;
    } else if (code < 0x20 || code == 0x7f) {
      out += fmt::format("\\u{:04X}", code);
    } else {
      out += character;
    }
  }
  return out + '"';
}

/// A key as TOML writes it: bare when it can be, else quoted.
std::string toml_key(const std::string& key) {
  const bool bare = !key.empty() && std::all_of(key.begin(), key.end(), [](char character) {
    return std::isalnum(static_cast<unsigned char>(character)) || character == '-' ||
           character == '_';
  });
  return bare ? key : toml_string(key);
}

std::string trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r");
  return std::string(text.substr(first, last - first + 1));
}

/// A dotted key with each part unquoted and trimmed: `model_providers . "dgx"` ->
/// model_providers.dgx (a quoted part holding a dot stays quoted, so it cannot collide).
std::string normal_key(std::string_view key) {
  std::vector<std::string> parts;
  std::string cur;
  char quote = 0;
  for (const char character : key) {
    if (quote) {
      if (character == quote) {
        quote = 0;
      } else {
        cur += character;
      }
    } else if (character == '"' || character == '\'') {
      quote = character;
    } else if (character == '.') {
      parts.push_back(trim(cur));
      cur.clear();
    } else {
      cur += character;
    }
  }
  parts.push_back(trim(cur));
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i) out += '.';
    out += parts[i].find('.') != std::string::npos ? toml_string(parts[i]) : parts[i];
  }
  return out;
}

/// One line of a TOML document: a table header (`name` set), a top-level key/value (`key`
/// set: before any header), or anything else.
struct Line {
  std::string text;
  std::string header;  // [a.b] or [[a.b]] -> "a.b"
  std::string key;     // a top-level key's first line
};

/// Splits `text` into lines and classifies them, following strings (multi-line too), comments
/// and arrays/inline tables spanning lines, so a `[` inside a value is never a header.
std::vector<Line> scan(const std::string& text) {
  std::vector<Line> lines;
  std::istringstream input(text);
  std::string raw;
  int depth = 0;                    // open [ { of a value
  std::string multiline_delimiter;  // the delimiter of an open multi-line string ("""/''')
  bool headers = false;             // a header was seen: keys are no longer top-level
  while (std::getline(input, raw)) {
    Line line;
    line.text = raw;
    const std::string trimmed = trim(raw);
    if (multiline_delimiter.empty() && depth == 0 && !trimmed.empty() && trimmed[0] == '[') {
      const bool arr = trimmed.starts_with("[[");
      const auto close = trimmed.find(arr ? "]]" : "]");
      line.header = normal_key(trimmed.substr(
          arr ? 2 : 1, close == std::string::npos ? std::string::npos : close - (arr ? 2 : 1)));
      headers = true;
      lines.push_back(std::move(line));
      continue;
    }
    std::size_t pos = 0;
    if (multiline_delimiter.empty() && depth == 0 && !headers && !trimmed.empty() &&
        trimmed[0] != '#') {
      const auto equals_sign = raw.find('=');
      if (equals_sign != std::string::npos) line.key = normal_key(raw.substr(0, equals_sign));
      pos = equals_sign == std::string::npos ? raw.size() : equals_sign + 1;
    }
    // Follow the value's strings and brackets to the line's end.
    while (pos < raw.size()) {
      if (!multiline_delimiter.empty()) {
        if (raw.compare(pos, 3, multiline_delimiter) == 0) {
          pos += 3;
          multiline_delimiter.clear();
        } else {
          pos += (multiline_delimiter == "\"\"\"" && raw[pos] == '\\') ? 2 : 1;
        }
        continue;
      }
      const char character = raw[pos];
      if (character == '#') break;
      if (raw.compare(pos, 3, "\"\"\"") == 0 || raw.compare(pos, 3, "'''") == 0) {
        multiline_delimiter = raw.substr(pos, 3);
        pos += 3;
        continue;
      }
      if (character == '"' || character == '\'') {
        for (++pos; pos < raw.size() && raw[pos] != character; ++pos)
          if (character == '"' && raw[pos] == '\\') ++pos;
        ++pos;
        continue;
      }
      if (character == '[' || character == '{') ++depth;
      if ((character == ']' || character == '}') && depth > 0) --depth;
      ++pos;
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

std::string join(const std::vector<Line>& lines) {
  std::string out;
  for (const auto& line : lines) out += line.text + '\n';
  return out;
}

/// The line index after the section that starts at line `header_index` (the next header or the
/// end).
std::size_t section_end(const std::vector<Line>& lines, std::size_t header_index) {
  std::size_t end = header_index + 1;
  while (end < lines.size() && lines[end].header.empty()) ++end;
  return end;
}

std::vector<Line> body_lines(const std::string& header, const std::string& body) {
  std::vector<Line> out;
  out.push_back(Line{"[" + header + "]", header, {}});
  std::istringstream input(body);
  std::string raw;
  while (std::getline(input, raw)) out.push_back(Line{raw, {}, {}});
  return out;
}

/// A node's value as the TOML text we wrote it (strings and integers are all we write).
std::string node_text(const toml::node* node) {
  if (!node) return "<missing>";
  if (auto text = node->value<std::string>()) return toml_string(*text);
  if (auto integer = node->value<long long>()) return std::to_string(*integer);
  if (const auto* table = node->as_table()) {
    std::string out = "{";
    for (const auto& [key, value] : *table)
      out += fmt::format(" {} = {},", toml_key(std::string(key.str())), node_text(&value));
    return out + " }";
  }
  return "<other>";
}

}  // namespace

std::string codex_base_url(const std::string& url) {
  auto parsed = boost::urls::parse_absolute_uri(url);
  if (!parsed)
    throw std::invalid_argument(fmt::format(
        "'{}' is not a URL with a scheme: write it as http://HOST:PORT (or https://)", url));
  if (parsed->scheme() != "http" && parsed->scheme() != "https")
    throw std::invalid_argument(
        parsed->has_authority()
            ? fmt::format("'{}': the scheme must be http or https, not {}", url,
                          std::string_view(parsed->scheme()))
            : fmt::format("'{}' has no scheme: write it as http://{} (or https://)", url, url));
  if (parsed->host().empty()) throw std::invalid_argument(fmt::format("'{}' names no host", url));
  if (parsed->has_query() || parsed->has_fragment())
    throw std::invalid_argument(fmt::format("'{}': a base URL takes no query or fragment", url));
  std::string out(parsed->buffer());
  while (!out.empty() && out.back() == '/') out.pop_back();
  if (!out.ends_with("/v1")) out += "/v1";
  return out;
}

CodexFiles codex_files(const CodexOptions& options) {
  if (options.name.empty() || options.model.empty())
    throw std::invalid_argument("the profile name and the model must not be empty");
  for (const char character : options.name)
    if (!std::isalnum(static_cast<unsigned char>(character)) && character != '-' &&
        character != '_')
      throw std::invalid_argument(fmt::format(
          "profile name '{}': use letters, digits, '-' and '_' (it names a file)", options.name));
  CodexFiles files;
  if (options.context_window)
    files.top_keys.emplace_back("model_context_window", std::to_string(*options.context_window));
  struct Target {
    std::string name, url, title, use;
  };
  const Target targets[] = {
      {options.name, codex_base_url(options.gateway), "llmux gateway", "through the gateway"},
      {options.name + "-direct", codex_base_url(options.direct), "vLLM server (direct)",
       "straight to one server"}};
  for (const auto& target : targets) {
    std::string body = fmt::format("name = {}\nbase_url = {}\nwire_api = \"responses\"\n",
                                   toml_string(target.title), toml_string(target.url));
    if (!options.env_key.empty())
      body += fmt::format("env_key = {}\n", toml_string(options.env_key));
    if (!options.headers.empty()) {
      body += "http_headers = {";
      for (std::size_t i = 0; i < options.headers.size(); ++i)
        body += fmt::format("{} {} = {}", i ? "," : "", toml_key(options.headers[i].first),
                            toml_string(options.headers[i].second));
      body += " }\n";
    }
    files.tables.emplace_back("model_providers." + toml_key(target.name), std::move(body));
    files.profiles.emplace_back(
        target.name + ".config.toml",
        fmt::format("# `codex --profile {}`: {} (written by `llmux client-config codex`)\n"
                    "model = {}\nmodel_provider = {}\n",
                    target.name, target.use, toml_string(options.model), toml_string(target.name)));
    files.profile_names.push_back(target.name);
  }
  return files;
}

std::string merge_codex_config(const std::string& existing, const CodexFiles& files,
                               std::vector<std::string>& notes) {
  try {
    (void)toml::parse(existing);
  } catch (const toml::parse_error& error) {
    throw std::runtime_error(
        fmt::format("the existing config.toml is not valid TOML ({} at line {}); "
                    "nothing was changed",
                    error.description(), error.source().begin.line));
  }
  std::vector<Line> lines = scan(existing);
  // Old [profiles.NAME] tables (Codex >= 0.134 refuses them), with their subtables.
  for (const auto& profile : files.profile_names) {
    const std::string header = "profiles." + toml_key(profile);
    for (std::size_t i = 0; i < lines.size();) {
      if (lines[i].header == header || lines[i].header.starts_with(header + ".")) {
        lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(i),
                    lines.begin() + static_cast<std::ptrdiff_t>(section_end(lines, i)));
        notes.push_back(
            fmt::format("removed [{}] (Codex reads {}.config.toml instead)", header, profile));
      } else {
        ++i;
      }
    }
  }
  for (const auto& [header, body] : files.tables) {
    const auto it = std::find_if(lines.begin(), lines.end(),
                                 [&](const Line& candidate) { return candidate.header == header; });
    std::vector<Line> ours = body_lines(header, body);
    if (it != lines.end()) {
      const std::size_t start = static_cast<std::size_t>(it - lines.begin());
      std::size_t end = section_end(lines, start);
      // Keep the blank lines and comments that lead into the next section.
      while (end > start + 1 &&
             (trim(lines[end - 1].text).empty() || trim(lines[end - 1].text)[0] == '#'))
        --end;
      lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(start),
                  lines.begin() + static_cast<std::ptrdiff_t>(end));
      lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(start), ours.begin(), ours.end());
      notes.push_back(fmt::format("replaced [{}]", header));
    } else {
      if (!lines.empty() && !trim(lines.back().text).empty()) lines.push_back(Line{});
      lines.insert(lines.end(), ours.begin(), ours.end());
      notes.push_back(fmt::format("added [{}]", header));
    }
  }
  for (const auto& [key, value] : files.top_keys) {
    const std::string text = key + " = " + value;
    const auto it = std::find_if(lines.begin(), lines.end(),
                                 [&](const Line& candidate) { return candidate.key == key; });
    if (it != lines.end()) {
      it->text = text;
      notes.push_back(fmt::format("set {} (top level: every model)", key));
      continue;
    }
    const auto first = std::find_if(lines.begin(), lines.end(), [](const Line& candidate) {
      return !candidate.header.empty();
    });
    lines.insert(first, {Line{text, {}, key}, Line{}});
    notes.push_back(fmt::format("added {} (top level: every model)", key));
  }
  std::string merged = join(lines);
  // What Codex will read must be exactly ours.
  toml::table parsed;
  try {
    parsed = toml::parse(merged);
  } catch (const toml::parse_error& error) {
    throw std::runtime_error(fmt::format(
        "merging into config.toml would make it invalid ({} at line {}): does it define the "
        "providers in another form (dotted keys, inline tables)? Nothing was changed.",
        error.description(), error.source().begin.line));
  }
  const toml::table ours_only = toml::parse(join([&] {
    std::vector<Line> all;
    for (const auto& [key, value] : files.top_keys)
      all.push_back(Line{key + " = " + value, {}, {}});
    for (const auto& [header, body] : files.tables) {
      auto section = body_lines(header, body);
      all.insert(all.end(), section.begin(), section.end());
    }
    return all;
  }()));
  for (const auto& [key, value] : files.top_keys)
    if (node_text(parsed.get(key)) != node_text(ours_only.get(key)))
      throw std::runtime_error(
          fmt::format("config.toml: {} did not merge; nothing was changed", key));
  for (const auto& [name, node] : *ours_only["model_providers"].as_table()) {
    const toml::node* got = parsed["model_providers"][name.str()].node();
    if (node_text(got) != node_text(&node))
      throw std::runtime_error(fmt::format(
          "config.toml: [model_providers.{}] did not merge cleanly (it holds {}); nothing was "
          "changed",
          name.str(), node_text(got)));
  }
  return merged;
}

std::string merge_codex_profile(const std::string& existing, const std::string& ours) {
  if (trim(existing).empty()) return ours;
  std::vector<Line> lines = scan(existing);
  const std::vector<Line> mine = scan(ours);
  std::vector<Line> add;
  for (const auto& line : mine) {
    if (line.key.empty()) continue;
    const auto it = std::find_if(lines.begin(), lines.end(),
                                 [&](const Line& candidate) { return candidate.key == line.key; });
    if (it != lines.end()) {
      it->text = line.text;
    } else {
      add.push_back(line);
    }
  }
  const auto first = std::find_if(lines.begin(), lines.end(),
                                  [](const Line& candidate) { return !candidate.header.empty(); });
  lines.insert(first, add.begin(), add.end());
  return join(lines);
}

std::vector<std::string> write_codex_home(const std::filesystem::path& home,
                                          const CodexFiles& files) {
  namespace fs = std::filesystem;
  auto read = [](const fs::path& path) {
    std::ifstream file(path, std::ios::binary);
    std::ostringstream contents;
    contents << file.rdbuf();
    return contents.str();
  };
  std::error_code ec;
  fs::create_directories(home, ec);
  if (ec)
    throw std::runtime_error(fmt::format("cannot create {}: {}", home.string(), ec.message()));
  // Everything is computed (and checked) before any file is replaced.
  std::vector<std::pair<fs::path, std::string>> out;
  std::vector<std::string> notes;
  const fs::path cfg = home / "config.toml";
  const bool had = fs::exists(cfg);
  const std::string before = had ? read(cfg) : std::string();
  out.emplace_back(cfg, merge_codex_config(before, files, notes));
  std::vector<std::string> done;
  for (const auto& [name, text] : files.profiles) {
    const fs::path path = home / name;
    const std::string merged =
        merge_codex_profile(fs::exists(path) ? read(path) : std::string(), text);
    try {
      (void)toml::parse(merged);
    } catch (const toml::parse_error& error) {
      throw std::runtime_error(fmt::format("{} would not be valid TOML ({}); nothing was changed",
                                           path.string(), error.description()));
    }
    out.emplace_back(path, merged);
  }
  if (had) {
    fs::copy_file(cfg, home / "config.toml.bak", fs::copy_options::overwrite_existing, ec);
    if (ec)
      throw std::runtime_error(
          fmt::format("cannot keep a copy of {}: {}", cfg.string(), ec.message()));
  }
  for (const auto& [path, text] : out) {
    const fs::path tmp = path.string() + ".llmux-tmp";
    {
      std::ofstream file(tmp, std::ios::binary | std::ios::trunc);
      file << text;
      if (!file) throw std::runtime_error(fmt::format("cannot write {}", tmp.string()));
    }
    fs::rename(tmp, path, ec);
    if (ec)
      throw std::runtime_error(fmt::format("cannot replace {}: {}", path.string(), ec.message()));
  }
  done.push_back(fmt::format("{}: {}{}", cfg.string(), fmt::join(notes, "; "),
                             had ? " (the previous file is config.toml.bak)" : ""));
  for (std::size_t i = 1; i < out.size(); ++i)
    done.push_back(
        fmt::format("{}: codex --profile {}", out[i].first.string(), files.profile_names[i - 1]));
  return done;
}

std::string print_codex_files(const CodexFiles& files) {
  std::string out =
      "# ===== $CODEX_HOME/config.toml (default ~/.codex/config.toml): merge these tables in "
      "=====\n";
  for (const auto& [key, value] : files.top_keys)
    out += fmt::format("{} = {}  # top level: every model\n", key, value);
  if (!files.top_keys.empty()) out += '\n';
  for (const auto& [header, body] : files.tables) out += fmt::format("[{}]\n{}\n", header, body);
  for (const auto& [name, text] : files.profiles)
    out += fmt::format("# ===== $CODEX_HOME/{} =====\n{}\n", name, text);
  out += "# Or let llmux write them: llmux client-config codex ... --codex-home ~/.codex\n";
  return out;
}

}  // namespace llmux::config
