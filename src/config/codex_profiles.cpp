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
std::string toml_string(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\u{:04X}", c);
    } else {
      out += ch;
    }
  }
  return out + '"';
}

/// A key as TOML writes it: bare when it can be, else quoted.
std::string toml_key(const std::string& k) {
  const bool bare = !k.empty() && std::all_of(k.begin(), k.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  });
  return bare ? k : toml_string(k);
}

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

/// A dotted key with each part unquoted and trimmed: `model_providers . "dgx"` ->
/// model_providers.dgx (a quoted part holding a dot stays quoted, so it cannot collide).
std::string normal_key(std::string_view s) {
  std::vector<std::string> parts;
  std::string cur;
  char quote = 0;
  for (const char c : s) {
    if (quote) {
      if (c == quote) {
        quote = 0;
      } else {
        cur += c;
      }
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '.') {
      parts.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
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
  std::istringstream in(text);
  std::string raw;
  int depth = 0;         // open [ { of a value
  std::string ml;        // the delimiter of an open multi-line string ("""/''')
  bool headers = false;  // a header was seen: keys are no longer top-level
  while (std::getline(in, raw)) {
    Line l;
    l.text = raw;
    const std::string t = trim(raw);
    if (ml.empty() && depth == 0 && !t.empty() && t[0] == '[') {
      const bool arr = t.starts_with("[[");
      const auto close = t.find(arr ? "]]" : "]");
      l.header = normal_key(t.substr(
          arr ? 2 : 1, close == std::string::npos ? std::string::npos : close - (arr ? 2 : 1)));
      headers = true;
      lines.push_back(std::move(l));
      continue;
    }
    std::size_t i = 0;
    if (ml.empty() && depth == 0 && !headers && !t.empty() && t[0] != '#') {
      const auto eq = raw.find('=');
      if (eq != std::string::npos) l.key = normal_key(raw.substr(0, eq));
      i = eq == std::string::npos ? raw.size() : eq + 1;
    }
    // Follow the value's strings and brackets to the line's end.
    while (i < raw.size()) {
      if (!ml.empty()) {
        if (raw.compare(i, 3, ml) == 0) {
          i += 3;
          ml.clear();
        } else {
          i += (ml == "\"\"\"" && raw[i] == '\\') ? 2 : 1;
        }
        continue;
      }
      const char c = raw[i];
      if (c == '#') break;
      if (raw.compare(i, 3, "\"\"\"") == 0 || raw.compare(i, 3, "'''") == 0) {
        ml = raw.substr(i, 3);
        i += 3;
        continue;
      }
      if (c == '"' || c == '\'') {
        for (++i; i < raw.size() && raw[i] != c; ++i)
          if (c == '"' && raw[i] == '\\') ++i;
        ++i;
        continue;
      }
      if (c == '[' || c == '{') ++depth;
      if ((c == ']' || c == '}') && depth > 0) --depth;
      ++i;
    }
    lines.push_back(std::move(l));
  }
  return lines;
}

std::string join(const std::vector<Line>& lines) {
  std::string out;
  for (const auto& l : lines) out += l.text + '\n';
  return out;
}

/// The line index after the section that starts at header `h` (the next header or the end).
std::size_t section_end(const std::vector<Line>& lines, std::size_t h) {
  std::size_t e = h + 1;
  while (e < lines.size() && lines[e].header.empty()) ++e;
  return e;
}

std::vector<Line> body_lines(const std::string& header, const std::string& body) {
  std::vector<Line> out;
  out.push_back(Line{"[" + header + "]", header, {}});
  std::istringstream in(body);
  std::string raw;
  while (std::getline(in, raw)) out.push_back(Line{raw, {}, {}});
  return out;
}

/// A node's value as the TOML text we wrote it (strings and integers are all we write).
std::string node_text(const toml::node* n) {
  if (!n) return "<missing>";
  if (auto s = n->value<std::string>()) return toml_string(*s);
  if (auto i = n->value<long long>()) return std::to_string(*i);
  if (const auto* t = n->as_table()) {
    std::string out = "{";
    for (const auto& [k, v] : *t)
      out += fmt::format(" {} = {},", toml_key(std::string(k.str())), node_text(&v));
    return out + " }";
  }
  return "<other>";
}

}  // namespace

std::string codex_base_url(const std::string& url) {
  auto u = boost::urls::parse_absolute_uri(url);
  if (!u)
    throw std::invalid_argument(fmt::format(
        "'{}' is not a URL with a scheme: write it as http://HOST:PORT (or https://)", url));
  if (u->scheme() != "http" && u->scheme() != "https")
    throw std::invalid_argument(
        u->has_authority()
            ? fmt::format("'{}': the scheme must be http or https, not {}", url,
                          std::string_view(u->scheme()))
            : fmt::format("'{}' has no scheme: write it as http://{} (or https://)", url, url));
  if (u->host().empty()) throw std::invalid_argument(fmt::format("'{}' names no host", url));
  if (u->has_query() || u->has_fragment())
    throw std::invalid_argument(fmt::format("'{}': a base URL takes no query or fragment", url));
  std::string out(u->buffer());
  while (!out.empty() && out.back() == '/') out.pop_back();
  if (!out.ends_with("/v1")) out += "/v1";
  return out;
}

CodexFiles codex_files(const CodexOptions& o) {
  if (o.name.empty() || o.model.empty())
    throw std::invalid_argument("the profile name and the model must not be empty");
  for (const char c : o.name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_')
      throw std::invalid_argument(fmt::format(
          "profile name '{}': use letters, digits, '-' and '_' (it names a file)", o.name));
  CodexFiles f;
  if (o.context_window)
    f.top_keys.emplace_back("model_context_window", std::to_string(*o.context_window));
  struct Target {
    std::string name, url, title, use;
  };
  const Target targets[] = {
      {o.name, codex_base_url(o.gateway), "llmux gateway", "through the gateway"},
      {o.name + "-direct", codex_base_url(o.direct), "vLLM server (direct)",
       "straight to one server"}};
  for (const auto& t : targets) {
    std::string body = fmt::format("name = {}\nbase_url = {}\nwire_api = \"responses\"\n",
                                   toml_string(t.title), toml_string(t.url));
    if (!o.env_key.empty()) body += fmt::format("env_key = {}\n", toml_string(o.env_key));
    if (!o.headers.empty()) {
      body += "http_headers = {";
      for (std::size_t i = 0; i < o.headers.size(); ++i)
        body += fmt::format("{} {} = {}", i ? "," : "", toml_key(o.headers[i].first),
                            toml_string(o.headers[i].second));
      body += " }\n";
    }
    f.tables.emplace_back("model_providers." + toml_key(t.name), std::move(body));
    f.profiles.emplace_back(
        t.name + ".config.toml",
        fmt::format("# `codex --profile {}`: {} (written by `llmux client-config codex`)\n"
                    "model = {}\nmodel_provider = {}\n",
                    t.name, t.use, toml_string(o.model), toml_string(t.name)));
    f.profile_names.push_back(t.name);
  }
  return f;
}

std::string merge_codex_config(const std::string& existing, const CodexFiles& f,
                               std::vector<std::string>& notes) {
  try {
    (void)toml::parse(existing);
  } catch (const toml::parse_error& e) {
    throw std::runtime_error(
        fmt::format("the existing config.toml is not valid TOML ({} at line {}); "
                    "nothing was changed",
                    e.description(), e.source().begin.line));
  }
  std::vector<Line> lines = scan(existing);
  // Old [profiles.NAME] tables (Codex >= 0.134 refuses them), with their subtables.
  for (const auto& p : f.profile_names) {
    const std::string h = "profiles." + toml_key(p);
    for (std::size_t i = 0; i < lines.size();) {
      if (lines[i].header == h || lines[i].header.starts_with(h + ".")) {
        lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(i),
                    lines.begin() + static_cast<std::ptrdiff_t>(section_end(lines, i)));
        notes.push_back(fmt::format("removed [{}] (Codex reads {}.config.toml instead)", h, p));
      } else {
        ++i;
      }
    }
  }
  for (const auto& [header, body] : f.tables) {
    const auto it =
        std::find_if(lines.begin(), lines.end(), [&](const Line& l) { return l.header == header; });
    std::vector<Line> ours = body_lines(header, body);
    if (it != lines.end()) {
      const std::size_t h = static_cast<std::size_t>(it - lines.begin());
      std::size_t e = section_end(lines, h);
      // Keep the blank lines and comments that lead into the next section.
      while (e > h + 1 && (trim(lines[e - 1].text).empty() || trim(lines[e - 1].text)[0] == '#'))
        --e;
      lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(h),
                  lines.begin() + static_cast<std::ptrdiff_t>(e));
      lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(h), ours.begin(), ours.end());
      notes.push_back(fmt::format("replaced [{}]", header));
    } else {
      if (!lines.empty() && !trim(lines.back().text).empty()) lines.push_back(Line{});
      lines.insert(lines.end(), ours.begin(), ours.end());
      notes.push_back(fmt::format("added [{}]", header));
    }
  }
  for (const auto& [key, value] : f.top_keys) {
    const std::string text = key + " = " + value;
    const auto it =
        std::find_if(lines.begin(), lines.end(), [&](const Line& l) { return l.key == key; });
    if (it != lines.end()) {
      it->text = text;
      notes.push_back(fmt::format("set {} (top level: every model)", key));
      continue;
    }
    const auto first =
        std::find_if(lines.begin(), lines.end(), [](const Line& l) { return !l.header.empty(); });
    lines.insert(first, {Line{text, {}, key}, Line{}});
    notes.push_back(fmt::format("added {} (top level: every model)", key));
  }
  std::string merged = join(lines);
  // What Codex will read must be exactly ours.
  toml::table parsed;
  try {
    parsed = toml::parse(merged);
  } catch (const toml::parse_error& e) {
    throw std::runtime_error(fmt::format(
        "merging into config.toml would make it invalid ({} at line {}): does it define the "
        "providers in another form (dotted keys, inline tables)? Nothing was changed.",
        e.description(), e.source().begin.line));
  }
  const toml::table ours_only = toml::parse(join([&] {
    std::vector<Line> all;
    for (const auto& [k, v] : f.top_keys) all.push_back(Line{k + " = " + v, {}, {}});
    for (const auto& [h, b] : f.tables) {
      auto l = body_lines(h, b);
      all.insert(all.end(), l.begin(), l.end());
    }
    return all;
  }()));
  for (const auto& [k, v] : f.top_keys)
    if (node_text(parsed.get(k)) != node_text(ours_only.get(k)))
      throw std::runtime_error(
          fmt::format("config.toml: {} did not merge; nothing was changed", k));
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
  for (const auto& m : mine) {
    if (m.key.empty()) continue;
    const auto it =
        std::find_if(lines.begin(), lines.end(), [&](const Line& l) { return l.key == m.key; });
    if (it != lines.end()) {
      it->text = m.text;
    } else {
      add.push_back(m);
    }
  }
  const auto first =
      std::find_if(lines.begin(), lines.end(), [](const Line& l) { return !l.header.empty(); });
  lines.insert(first, add.begin(), add.end());
  return join(lines);
}

std::vector<std::string> write_codex_home(const std::filesystem::path& home, const CodexFiles& f) {
  namespace fs = std::filesystem;
  auto read = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
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
  out.emplace_back(cfg, merge_codex_config(before, f, notes));
  std::vector<std::string> done;
  for (const auto& [name, text] : f.profiles) {
    const fs::path p = home / name;
    const std::string merged = merge_codex_profile(fs::exists(p) ? read(p) : std::string(), text);
    try {
      (void)toml::parse(merged);
    } catch (const toml::parse_error& e) {
      throw std::runtime_error(fmt::format("{} would not be valid TOML ({}); nothing was changed",
                                           p.string(), e.description()));
    }
    out.emplace_back(p, merged);
  }
  if (had) {
    fs::copy_file(cfg, home / "config.toml.bak", fs::copy_options::overwrite_existing, ec);
    if (ec)
      throw std::runtime_error(
          fmt::format("cannot keep a copy of {}: {}", cfg.string(), ec.message()));
  }
  for (const auto& [p, text] : out) {
    const fs::path tmp = p.string() + ".llmux-tmp";
    {
      std::ofstream o(tmp, std::ios::binary | std::ios::trunc);
      o << text;
      if (!o) throw std::runtime_error(fmt::format("cannot write {}", tmp.string()));
    }
    fs::rename(tmp, p, ec);
    if (ec)
      throw std::runtime_error(fmt::format("cannot replace {}: {}", p.string(), ec.message()));
  }
  done.push_back(fmt::format("{}: {}{}", cfg.string(), fmt::join(notes, "; "),
                             had ? " (the previous file is config.toml.bak)" : ""));
  for (std::size_t i = 1; i < out.size(); ++i)
    done.push_back(
        fmt::format("{}: codex --profile {}", out[i].first.string(), f.profile_names[i - 1]));
  return done;
}

std::string print_codex_files(const CodexFiles& f) {
  std::string out =
      "# ===== $CODEX_HOME/config.toml (default ~/.codex/config.toml): merge these tables in "
      "=====\n";
  for (const auto& [k, v] : f.top_keys)
    out += fmt::format("{} = {}  # top level: every model\n", k, v);
  if (!f.top_keys.empty()) out += '\n';
  for (const auto& [h, b] : f.tables) out += fmt::format("[{}]\n{}\n", h, b);
  for (const auto& [name, text] : f.profiles)
    out += fmt::format("# ===== $CODEX_HOME/{} =====\n{}\n", name, text);
  out += "# Or let llmux write them: llmux client-config codex ... --codex-home ~/.codex\n";
  return out;
}

}  // namespace llmux::config
