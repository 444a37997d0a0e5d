// SPDX-License-Identifier: Apache-2.0
// `llmux bench run`: the general engine. Runs each level (one, or a concurrency sweep that stops
// at the saturation knee), prints the Markdown report and, against llmux sim, the timing error
// against the simulator's ground truth. The output files are run_output.cpp's.
#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bench/commands_internal.hpp"
#include "core/clock.hpp"

namespace llmux::bench {
namespace json = boost::json;

using detail::backend_table;
using detail::conversation_stats;
using detail::conversation_table;
using detail::detail_table;
using detail::error_summary;
using detail::first_error;
using detail::LevelResult;
using detail::ms;
using detail::summary_table;

namespace {

/// Compares the client's timings of every request with llmux sim's /debug/requests; prints the
/// table on `md` and returns the "ground_truth" JSON of run.json.
json::object ground_truth(const RunCommand& command, const std::vector<LevelResult>& levels,
                          std::ostream& md) {
  json::object gt_json;
  std::vector<Record> all;
  for (const auto& level : levels)
    all.insert(all.end(), level.run.records.begin(), level.run.records.end());
  GroundTruthCheck check = check_against_sim(command.run.url, all, 2000, command.run.client);
  const Summary te = summarize(check.ttft_err_s), ie = summarize(check.itl_err_s),
                ke = summarize(check.token_err_s), rd = summarize(check.request_delay_s);
  auto abs_of = [](std::vector<double> values) {
    for (auto& x : values) x = std::fabs(x);
    return summarize(values);
  };
  const Summary tea = abs_of(check.ttft_err_s), iea = abs_of(check.itl_err_s);
  md << "\n";
  Table table({"Timing error vs llmux sim ground truth", "samples", "p50 ms", "p99 ms",
               "|err| p50 ms", "|err| p99 ms", "max |err| ms"});
  table.add_row({"TTFT (client - sim)", std::to_string(te.count), ms(te.p50, 3), ms(te.p99, 3),
                 ms(tea.p50, 3), ms(tea.p99, 3), ms(tea.max, 3)});
  table.add_row({"ITL per token (client gap - sim gap)", std::to_string(ie.count), ms(ie.p50, 3),
                 ms(ie.p99, 3), ms(iea.p50, 3), ms(iea.p99, 3), ms(iea.max, 3)});
  table.add_row({"Token arrival (client read - sim send)", std::to_string(ke.count), ms(ke.p50, 3),
                 ms(ke.p99, 3), "", "", ""});
  table.add_row({"Request delivery (sim arrival - client start)", std::to_string(rd.count),
                 ms(rd.p50, 3), ms(rd.p99, 3), "", "", ""});
  md << to_markdown(table);
  gt_json["requests"] = check.requests;
  gt_json["missing"] = check.missing;
  gt_json["ttft_err_ms"] = to_json(te, 1e3);
  gt_json["ttft_abs_err_ms"] = to_json(tea, 1e3);
  gt_json["itl_err_ms"] = to_json(ie, 1e3);
  gt_json["itl_abs_err_ms"] = to_json(iea, 1e3);
  gt_json["token_arrival_err_ms"] = to_json(ke, 1e3);
  gt_json["request_delay_ms"] = to_json(rd, 1e3);
  return gt_json;
}

/// One level over a fixed split: a load per target, all at once (one thread each), merged in
/// start order; a request no gateway named a backend for is named after its target.
RunResult run_split(const RunCommand& command, const RunOptions& ro, const LoadSpec& spec) {
  std::size_t clients = 0;
  for (const auto& target : command.split) clients += target.clients;
  std::vector<RunResult> parts(command.split.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < command.split.size(); ++i) {
    threads.emplace_back([&, i] {
      RunOptions options = ro;
      options.url = command.split[i].url;
      // One progress line: the first target's (threads would overwrite each other's).
      options.progress = ro.progress && i == 0;
      options.label = fmt::format("{} {} (1st of {} targets)", ro.label, command.split[i].name,
                                  command.split.size());
      options.request_id_prefix = fmt::format("{}-t{}", ro.request_id_prefix, i);
      options.conversation.key_prefix = fmt::format("{}-t{}", ro.conversation.key_prefix, i);
      LoadSpec target_spec = spec;
      target_spec.concurrency = command.split[i].clients;
      // A request count is shared out in proportion to the clients (at least one each).
      if (spec.num_requests)
        target_spec.num_requests =
            std::max<std::size_t>(1, spec.num_requests * command.split[i].clients / clients);
      if (spec.warmup_requests)
        target_spec.warmup_requests = spec.warmup_requests * command.split[i].clients / clients;
      parts[i] = run_load(options, target_spec, command.prompts);
    });
  }
  for (auto& thread : threads) thread.join();
  RunResult out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    out.connections += parts[i].connections;
    out.max_in_flight += parts[i].max_in_flight;
    for (auto& record : parts[i].records) {
      if (record.t.backend.empty()) record.t.backend = command.split[i].name;
      out.records.push_back(std::move(record));
    }
  }
  std::stable_sort(out.records.begin(), out.records.end(),
                   [](const Record& a, const Record& b) { return a.t.start_ns < b.t.start_ns; });
  std::int64_t first = 0, last = 0;
  for (std::size_t i = 0; i < out.records.size(); ++i) {
    auto& record = out.records[i];
    record.index = i;
    if (record.warmup) continue;
    if (first == 0 || record.t.start_ns < first) first = record.t.start_ns;
    last = std::max(last, record.t.end_ns);
  }
  out.wall_s = last > first ? static_cast<double>(last - first) / 1e9 : 0.0;
  return out;
}

}  // namespace

int bench_run(const RunCommand& command, std::ostream& md) {
  std::vector<LevelResult> levels;
  std::vector<SweepPoint> points;
  std::vector<std::size_t> conc = command.sweep;
  const bool open = command.load.mode == LoadSpec::Mode::open;
  if (conc.empty()) conc.push_back(command.load.concurrency);
  AggregateOptions aopt;
  aopt.extra_percentiles = command.out.percentiles;
  aopt.slo = command.slo;
  for (std::size_t n : conc) {
    LoadSpec spec = command.load;
    if (!command.sweep.empty()) spec.concurrency = n;
    RunOptions ro = command.run;
    LevelResult level;
    level.load = open ? spec.request_rate : static_cast<double>(spec.concurrency);
    level.label =
        open ? fmt::format("r{:g}", spec.request_rate) : fmt::format("c{}", spec.concurrency);
    ro.label = fmt::format("[{}]", level.label);
    ro.progress = command.out.progress;
    ro.request_id_prefix =
        fmt::format("{}-{}-{}", command.run.request_id_prefix, mono_ns() % 1000000, level.label);
    // Each level's users hold conversations of their own.
    if (!command.sweep.empty()) ro.conversation.key_prefix += "-" + level.label;
    level.run =
        command.split.empty() ? run_load(ro, spec, command.prompts) : run_split(command, ro, spec);
    const auto measured = level.run.measured();
    aopt.wall_s = level.run.wall_s;
    level.agg = aggregate(measured, aopt);
    if (ro.conversation.enabled())
      level.conv = conversation_stats(level.run, ro.conversation.turns);
    points.push_back(SweepPoint{level.load, level.agg.output_tok_s});
    levels.push_back(std::move(level));
    if (!command.sweep.empty() && sweep_should_stop(points, command.knee)) break;
  }

  // Markdown.
  const auto& body = command.run.body;
  std::string where = command.run.url.str();
  if (!command.split.empty()) {
    std::vector<std::string> parts;
    for (const auto& target : command.split)
      parts.push_back(fmt::format("{} ×{}", target.url.str(), target.clients));
    where = fmt::format("split {}", fmt::join(parts, ", "));
  }
  md << fmt::format("### llmux bench run: {} {} ({})\n\n", where, endpoint_path(body.dialect),
                    body.model);
  std::string load;
  if (open)
    load = fmt::format("open loop, Poisson arrivals at {:g} req/s{}", command.load.request_rate,
                       command.load.concurrency
                           ? fmt::format(" (at most {} in flight)", command.load.concurrency)
                           : "");
  else if (!command.sweep.empty())
    load = "closed loop, concurrency sweep";
  else
    load = fmt::format("closed loop, concurrency {}", command.load.concurrency);
  const ConversationSpec& cs = command.run.conversation;
  if (cs.enabled())
    load += fmt::format(
        "; each client a user holding a conversation of {} turns ({}: {})", cs.turns,
        to_string(cs.mode),
        cs.mode == ConversationMode::previous
            ? "previous_response_id, store true"
            : "the whole history replayed, store false, prompt_cache_key per conversation");
  std::string bound;
  if (command.load.num_requests) bound = fmt::format("{} requests", command.load.num_requests);
  if (command.load.duration_s > 0)
    bound += fmt::format("{}{:g} s", bound.empty() ? "" : ", at most ", command.load.duration_s);
  if (bound.empty()) bound = cs.enabled() ? "all turns" : "one round";
  std::string warm;
  if (command.load.warmup_requests)
    warm = fmt::format(", warm-up {} requests excluded", command.load.warmup_requests);
  if (command.load.warmup_s > 0)
    warm = fmt::format(", warm-up {:g} s excluded", command.load.warmup_s);
  HtmlReport html;
  html.title =
      fmt::format("llmux bench run: {} {} ({})", where, endpoint_path(body.dialect), body.model);
  html.intro =
      fmt::format("Load: {} ({} per level{}). Workload: {}. {}; {} connections.", load, bound, warm,
                  command.workload_desc,
                  body.stream ? "Streaming with stream_options.include_usage" : "Non-streaming",
                  to_string(command.run.client.mode));
  md << html.intro << "\n\n";
  md << to_markdown(summary_table(command, levels));
  html.sections.push_back({"Summary", summary_table(command, levels), {}});

  std::vector<std::string> notes;
  KneeResult knee;
  if (levels.size() > 1) {
    knee = detect_knee(points, command.knee);
    if (knee.saturated)
      notes.push_back(fmt::format(
          "Saturation knee at {} {:g} ({} tok/s): the next level gained less than {:g}% of linear "
          "scaling; the sweep stopped there.",
          open ? "rate" : "concurrency", knee.knee_concurrency, fmt_num(knee.knee_tok_s),
          command.knee.min_efficiency * 100));
    else
      notes.push_back("No saturation knee within the levels swept.");
    if (knee.peak_index)
      notes.push_back(
          fmt::format("Peak: {} tok/s at {} {:g}.", fmt_num(points[*knee.peak_index].tok_s),
                      open ? "rate" : "concurrency", points[*knee.peak_index].concurrency));
  }
  if (cs.enabled()) {
    md << "\n";
    md << to_markdown(conversation_table(levels),
                      MarkdownOptions{.title = "Conversations", .heading_level = 4, .notes = {}});
    html.sections.push_back({"Conversations", conversation_table(levels), {}});
  }
  if (auto bt = backend_table(command, levels)) {
    md << "\n";
    md << to_markdown(*bt, MarkdownOptions{.title = "Where the gateway sent them (X-Llmux-Backend)",
                                           .heading_level = 4,
                                           .notes = {}});
    html.sections.push_back({"Where the gateway sent them (X-Llmux-Backend)", *bt, {}});
  }
  const LevelResult& last = levels.back();
  if (levels.size() == 1) {
    md << "\n";
    md << to_markdown(
        detail_table(last.agg, command.out.percentiles),
        MarkdownOptions{.title = "Latency distribution", .heading_level = 4, .notes = {}});
    html.sections.push_back(
        {"Latency distribution", detail_table(last.agg, command.out.percentiles), {}});
  }
  notes.push_back(
      "TTFT = request start to the first content token (a chat stream's role-only first chunk "
      "does not count); ITL counts a chunk of k tokens as k tokens of gap/k each; TPOT = (E2E - "
      "TTFT) / (output tokens - 1); per-stream tok/s = 1/TPOT; aggregate tok/s = all output "
      "tokens / wall time.");
  std::size_t est = 0, okn = 0;
  for (const auto& level : levels) {
    est += level.agg.estimated_requests;
    okn += level.agg.ok;
  }
  notes.push_back(est ? fmt::format("Output tokens: estimated with llmux's tokenizer for {} of {} "
                                    "requests (the server sent no usage); the rest from usage.",
                                    est, okn)
                      : "Output tokens: from the server's usage.");
  std::size_t cached_reported = 0;
  for (const auto& level : levels) cached_reported += level.agg.cached_reported;
  notes.push_back(
      cached_reported
          ? "Cached prompt tokens: usage.prompt_tokens_details.cached_tokens (Responses: "
            "input_tokens_details), the prompt tokens the server served from its prefix cache; "
            "Cached % = cached / prompt tokens of the successful requests."
          : "Cached prompt tokens: the server reported none (vLLM reports "
            "usage.prompt_tokens_details on completions and chat only when started with "
            "--enable-prompt-tokens-details).");
  if (cs.enabled() && cs.mode == ConversationMode::previous)
    notes.push_back(
        "Not found: turns answered 404 \"not found\" (the server did not hold the "
        "previous_response_id: another backend, or a server without a response store).");
  for (const auto& level : levels) {
    if (level.agg.failed) {
      auto ts = level.run.measured();
      notes.push_back(fmt::format("Errors at {}: {}; first: {}", level.label,
                                  error_summary(level.agg), first_error(ts)));
    }
  }
  if (!command.slo.empty()) {
    std::string slo_text;
    if (command.slo.ttft_s) slo_text += fmt::format(" TTFT <= {:g} ms", *command.slo.ttft_s * 1e3);
    if (command.slo.tpot_s) slo_text += fmt::format(" TPOT <= {:g} ms", *command.slo.tpot_s * 1e3);
    if (command.slo.e2e_s) slo_text += fmt::format(" E2E <= {:g} ms", *command.slo.e2e_s * 1e3);
    notes.push_back("Goodput: successful requests per second meeting every SLO:" + slo_text + ".");
  }

  json::object gt_json;
  if (command.sim_ground_truth) gt_json = ground_truth(command, levels, md);

  std::size_t requests = 0, failed = 0, rejected = 0;
  std::map<ErrorKind, std::size_t> kinds;
  for (const auto& level : levels) {
    requests += level.agg.requests;
    failed += level.agg.failed;
    rejected += level.agg.rejected;
    for (const auto& [kind, count] : level.agg.errors) kinds[kind] += count;
  }
  std::string kinds_s;
  for (auto [kind, count] : kinds) {
    if (kind == ErrorKind::http_status) count -= std::min(count, rejected);  // the 429s are apart
    if (count)
      kinds_s += fmt::format("{}{} {}", kinds_s.empty() ? "" : ", ", count, to_string(kind));
  }
  const detail::Outcome oc = detail::outcome(requests, failed, rejected, kinds_s, command.out);
  html.status.push_back(oc.line);
  html.failed = oc.status != 0;
  html.notes = notes;
  detail::write_run_files(command, levels, knee, gt_json, std::move(html), where, notes);
  md << "\n";
  detail::report_outcome(oc, md, "bench run");
  for (const auto& note : notes) md << note << "\n\n";
  return oc.status;
}

}  // namespace llmux::bench
