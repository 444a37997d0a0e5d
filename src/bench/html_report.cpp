// SPDX-License-Identifier: Apache-2.0
#include "bench/html_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

namespace llmux::bench {
namespace fs = std::filesystem;

bool Chart::empty() const {
  return std::all_of(series.begin(), series.end(),
                     [](const ChartSeries& line) { return line.points.empty(); });
}

ChartPoints cdf_points(std::vector<double> values, std::size_t max_points) {
  std::erase_if(values, [](double value) { return !std::isfinite(value); });
  std::sort(values.begin(), values.end());
  ChartPoints out;
  const std::size_t count = values.size();
  if (count == 0) return out;
  const std::size_t step =
      std::max<std::size_t>(1, (count + max_points - 1) / std::max<std::size_t>(1, max_points));
  for (std::size_t i = 0; i < count; i += step)
    out.emplace_back(values[i], static_cast<double>(i + 1) / static_cast<double>(count));
  if (out.back().second < 1.0) out.emplace_back(values.back(), 1.0);
  return out;
}

ChartPoints tok_s_over_time(std::span<const RequestTiming> timings, std::int64_t t0_ns,
                            double bucket_s) {
  ChartPoints out;
  if (!(bucket_s > 0)) return out;
  std::map<std::int64_t, std::uint64_t> buckets;
  for (const RequestTiming& timing : timings) {
    if (!timing.ok()) continue;
    auto add = [&](std::int64_t at_ns, std::uint64_t tokens) {
      const double offset_s = static_cast<double>(at_ns - t0_ns) * 1e-9;
      buckets[static_cast<std::int64_t>(std::floor(offset_s / bucket_s))] += tokens;
    };
    if (!timing.events.empty()) {
      for (const TokenEvent& event : timing.events) add(event.time_ns, event.tokens);
    } else if (timing.output_tokens) {
      add(timing.end_ns, *timing.output_tokens);
    }
  }
  if (buckets.empty()) return out;
  const std::int64_t first = buckets.begin()->first, last = buckets.rbegin()->first;
  for (std::int64_t b = first; b <= last; ++b) {
    const auto it = buckets.find(b);
    const double tokens = it == buckets.end() ? 0.0 : static_cast<double>(it->second);
    out.emplace_back(static_cast<double>(b) * bucket_s, tokens / bucket_s);
  }
  return out;
}

double bucket_for(double span_s, std::size_t buckets) {
  const double bucket_s = span_s / static_cast<double>(std::max<std::size_t>(1, buckets));
  return std::max(0.25, std::isfinite(bucket_s) ? bucket_s : 0.25);
}

std::string chart_data(const Chart& chart) {
  std::string out = fmt::format("# {}\n# x: {}; y: {}\n", chart.title, chart.xlabel, chart.ylabel);
  bool first = true;
  for (const ChartSeries& series : chart.series) {
    if (series.points.empty()) continue;
    if (!first) out += "\n\n";
    first = false;
    out += fmt::format("# {}\n", series.name);
    for (const auto& [x, y] : series.points) out += fmt::format("{:.6g} {:.6g}\n", x, y);
  }
  return out;
}

namespace {

/// A gnuplot double-quoted string.
std::string gp_quote(std::string_view text) {
  std::string out = "\"";
  for (char character : text) {
    if (character == '\n') {
      out += "\\n";  // a line break in a double-quoted gnuplot string
      continue;
    }
    if (character == '"' || character == '\\') out += '\\';
    if (character == '\r') character = ' ';
    out += character;
  }
  return out + "\"";
}

std::string shell_quote(std::string_view text) {
  std::string out = "'";
  for (char character : text) {
    if (character == '\'')
      out += "'\\''";
    else
      out += character;
  }
  return out + "'";
}

bool have_gnuplot() {
  return std::system("command -v gnuplot >/dev/null 2>&1") == 0;
}

std::string png_terminal() {
  return std::system("gnuplot -e 'set terminal pngcairo' >/dev/null 2>&1") == 0 ? "pngcairo"
                                                                                : "png";
}

void write(const fs::path& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error(fmt::format("cannot write {}", path.string()));
  file << text;
}

}  // namespace

std::string gnuplot_script(std::span<const Chart> charts, std::string_view png_terminal) {
  std::string out =
      "# Redraw the charts: gnuplot plots.gp (in this directory). Written by llmux bench.\n";
  for (const Chart& chart : charts) {
    if (chart.empty()) continue;
    out += fmt::format(
        "\nreset\nset grid\nset key outside right top noenhanced\nset title {} noenhanced\n"
        "set xlabel {} noenhanced\nset ylabel {} noenhanced\n",
        gp_quote(chart.title), gp_quote(chart.xlabel), gp_quote(chart.ylabel));
    if (chart.logx) out += "set logscale x 2\n";
    if (chart.kind == ChartKind::cdf) out += "set yrange [0:1]\n";
    if (chart.kind != ChartKind::cdf) out += "set yrange [0:*]\n";
    const char* style = chart.kind == ChartKind::lines ? "linespoints lw 2 pt 7"
                        : chart.kind == ChartKind::cdf ? "steps lw 2"
                                                       : "lines lw 2";
    std::string plot = "plot ";
    std::size_t index = 0;
    for (const ChartSeries& series : chart.series) {
      if (series.points.empty()) continue;
      plot += fmt::format("{}{} index {} using 1:2 with {} title {}", index ? ", " : "",
                          index ? "''" : gp_quote(chart.name + ".dat"), index, style,
                          gp_quote(series.name));
      ++index;
    }
    out += fmt::format(
        "set terminal svg size 1100,620 dynamic noenhanced background rgb 'white'\n"
        "set output {}\n{}\n"
        "set terminal {} size 1100,620 noenhanced\nset output {}\nreplot\nunset output\n",
        gp_quote(chart.name + ".svg"), plot, png_terminal, gp_quote(chart.name + ".png"));
  }
  return out;
}

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char character : text) {
    switch (character) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += character;
    }
  }
  return out;
}

std::string to_html(const Table& table) {
  std::string out = "<table>\n<thead><tr>";
  for (std::size_t c = 0; c < table.columns(); ++c)
    out += fmt::format("<th{}>{}</th>", table.align()[c] == Align::right ? " class=\"num\"" : "",
                       html_escape(table.headers()[c]));
  out += "</tr></thead>\n<tbody>\n";
  for (const auto& row : table.rows()) {
    out += "<tr>";
    for (std::size_t c = 0; c < table.columns(); ++c)
      out += fmt::format("<td{}>{}</td>", table.align()[c] == Align::right ? " class=\"num\"" : "",
                         html_escape(row[c]));
    out += "</tr>\n";
  }
  return out + "</tbody>\n</table>\n";
}

std::string to_html(const HtmlReport& report) {
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>{0}</title>\n<style>\n"
      "body{{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;"
      "color:#222}}\n"
      "table{{border-collapse:collapse;margin:1em 0}}\n"
      "th,td{{border:1px solid #ccc;padding:.3em .6em;text-align:left}}\n"
      "th{{background:#f3f3f3}}\n.num{{text-align:right;font-variant-numeric:tabular-nums}}\n"
      ".status{{padding:.6em 1em;border-radius:4px;background:#e8f5e9;border:1px solid #81c784}}\n"
      ".status.failed{{background:#ffebee;border-color:#e57373}}\n"
      "figure{{margin:1.5em 0}} img{{max-width:100%;border:1px solid #ddd}}\n"
      "</style>\n</head>\n<body>\n<h1>{0}</h1>\n",
      html_escape(report.title));
  if (!report.intro.empty()) out += fmt::format("<p>{}</p>\n", html_escape(report.intro));
  if (!report.status.empty()) {
    out += fmt::format("<div class=\"status{}\">\n", report.failed ? " failed" : "");
    for (const auto& status : report.status) out += fmt::format("<p>{}</p>\n", html_escape(status));
    out += "</div>\n";
  }
  for (const HtmlSection& section : report.sections) {
    if (!section.title.empty()) out += fmt::format("<h2>{}</h2>\n", html_escape(section.title));
    out += to_html(section.table);
    for (const auto& note : section.notes) out += fmt::format("<p>{}</p>\n", html_escape(note));
  }
  if (!report.charts.empty()) {
    out += "<h2>Charts</h2>\n";
    for (const auto& svg : report.charts) {
      std::string png = svg;
      if (png.size() > 4 && png.ends_with(".svg")) png.replace(png.size() - 4, 4, ".png");
      out += fmt::format(
          "<figure><img src=\"{0}\" alt=\"{0}\"><figcaption><a href=\"{0}\">SVG</a> · "
          "<a href=\"{1}\">PNG</a></figcaption></figure>\n",
          html_escape(svg), html_escape(png));
    }
  }
  for (const auto& note : report.notes) out += fmt::format("<p>{}</p>\n", html_escape(note));
  if (!report.files.empty()) {
    out += "<h2>Files</h2>\n<ul>\n";
    for (const auto& [href, what] : report.files)
      out += fmt::format("<li><a href=\"{0}\">{0}</a>: {1}</li>\n", html_escape(href),
                         html_escape(what));
    out += "</ul>\n";
  }
  return out + "</body>\n</html>\n";
}

ReportFiles write_report(const std::string& dir, HtmlReport report, std::span<const Chart> charts,
                         bool draw) {
  ReportFiles files;
  const fs::path root(dir), cdir = root / "charts";
  fs::create_directories(cdir);
  std::vector<std::string> names;
  for (const Chart& chart : charts) {
    if (chart.empty()) continue;
    write(cdir / (chart.name + ".dat"), chart_data(chart));
    names.push_back(chart.name);
  }
  const bool use_gnuplot = draw && !names.empty() && have_gnuplot();
  write(cdir / "plots.gp", gnuplot_script(charts, use_gnuplot ? png_terminal() : "pngcairo"));
  if (names.empty()) {
    files.note = "No charts: nothing to draw.";
  } else if (!draw) {
    files.note = fmt::format("Charts not drawn (--no-plots): their data and plots.gp are in {}.",
                             cdir.string());
  } else if (!use_gnuplot) {
    files.note = fmt::format(
        "Charts skipped: gnuplot is not installed (apt-get install gnuplot-nox); their data and "
        "plots.gp are in {} (run gnuplot plots.gp there).",
        cdir.string());
  } else {
    const std::string cmd =
        fmt::format("cd {} && gnuplot plots.gp >gnuplot.log 2>&1", shell_quote(cdir.string()));
    const int status = std::system(cmd.c_str());
    for (const auto& name : names)
      if (fs::exists(cdir / (name + ".svg"))) files.charts.push_back("charts/" + name + ".svg");
    files.gnuplot = status == 0 && files.charts.size() == names.size();
    files.note =
        files.gnuplot
            ? fmt::format("Charts: {} SVG and PNG in {}.", names.size(), cdir.string())
            : fmt::format("gnuplot failed (see {}); the charts' data and plots.gp are there.",
                          (cdir / "gnuplot.log").string());
  }
  report.charts = files.charts;
  if (!files.gnuplot) report.notes.push_back(files.note);
  report.files.emplace_back("charts/plots.gp", "the gnuplot script that draws the charts");
  write(root / "index.html", to_html(report));
  return files;
}

}  // namespace llmux::bench
