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
#include "bench/groups.hpp"
#include "bench/mix.hpp"
#include "bench/tenants.hpp"
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
/// table on `markdown` and returns the "ground_truth" JSON of run.json.
json::object ground_truth(const RunCommand& command, const std::vector<LevelResult>& levels,
                          std::ostream& markdown) {
  json::object gt_json;
  std::vector<Record> all;
  for (const auto& level : levels)
    all.insert(all.end(), level.run.records.begin(), level.run.records.end());
  GroundTruthCheck check = check_against_sim(command.run.url, all, 2000, command.run.client);
  const Summary ttft_error = summarize(check.ttft_err_s), itl_error = summarize(check.itl_err_s),
                token_error = summarize(check.token_err_s),
                request_delay = summarize(check.request_delay_s);
  auto abs_of = [](std::vector<double> values) {
    for (auto& value : values) value = std::fabs(value);
    return summarize(values);
  };
  const Summary ttft_abs_error = abs_of(check.ttft_err_s), itl_abs_error = abs_of(check.itl_err_s);
  markdown << "\n";
  Table table({"Timing error vs llmux sim ground truth", "samples", "p50 ms", "p99 ms",
               "|err| p50 ms", "|err| p99 ms", "max |err| ms"});
  table.add_row({"TTFT (client - sim)", std::to_string(ttft_error.count), ms(ttft_error.p50, 3),
                 ms(ttft_error.p99, 3), ms(ttft_abs_error.p50, 3), ms(ttft_abs_error.p99, 3),
                 ms(ttft_abs_error.max, 3)});
  table.add_row({"ITL per token (client gap - sim gap)", std::to_string(itl_error.count),
                 ms(itl_error.p50, 3), ms(itl_error.p99, 3), ms(itl_abs_error.p50, 3),
                 ms(itl_abs_error.p99, 3), ms(itl_abs_error.max, 3)});
  table.add_row({"Token arrival (client read - sim send)", std::to_string(token_error.count),
                 ms(token_error.p50, 3), ms(token_error.p99, 3), "", "", ""});
  table.add_row({"Request delivery (sim arrival - client start)",
                 std::to_string(request_delay.count), ms(request_delay.p50, 3),
                 ms(request_delay.p99, 3), "", "", ""});
  markdown << to_markdown(table);
  gt_json["requests"] = check.requests;
  gt_json["missing"] = check.missing;
  gt_json["ttft_err_ms"] = to_json(ttft_error, 1e3);
  gt_json["ttft_abs_err_ms"] = to_json(ttft_abs_error, 1e3);
  gt_json["itl_err_ms"] = to_json(itl_error, 1e3);
  gt_json["itl_abs_err_ms"] = to_json(itl_abs_error, 1e3);
  gt_json["token_arrival_err_ms"] = to_json(token_error, 1e3);
  gt_json["request_delay_ms"] = to_json(request_delay, 1e3);
  return gt_json;
}

/// One level over a fixed split: a load per target, all at once (one thread each), merged in
/// start order; a request no gateway named a backend for is named after its target.
RunResult run_split(const RunCommand& command, const RunOptions& base_options,
                    const LoadSpec& spec) {
  std::size_t clients = 0;
  for (const auto& target : command.split) clients += target.clients;
  std::vector<RunResult> parts(command.split.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < command.split.size(); ++i) {
    threads.emplace_back([&, i] {
      RunOptions options = base_options;
      options.url = command.split[i].url;
      // One progress line: the first target's (threads would overwrite each other's).
      options.progress = base_options.progress && i == 0;
      options.label = fmt::format("{} {} (1st of {} targets)", base_options.label,
                                  command.split[i].name, command.split.size());
      options.request_id_prefix = fmt::format("{}-t{}", base_options.request_id_prefix, i);
      options.conversation.key_prefix =
          fmt::format("{}-t{}", base_options.conversation.key_prefix, i);
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
  for (std::size_t i = 0; i < parts.size(); ++i)
    for (auto& record : parts[i].records)
      if (record.t.backend.empty()) record.t.backend = command.split[i].name;
  return merge_concurrent(std::move(parts));
}

}  // namespace

int bench_run(const RunCommand& command, std::ostream& markdown) {
  std::vector<LevelResult> levels;
  std::vector<SweepPoint> points;
  std::vector<std::size_t> conc = command.sweep;
  const bool open = command.load.mode == LoadSpec::Mode::open;
  if (conc.empty()) conc.push_back(command.load.concurrency);
  AggregateOptions aopt;
  aopt.extra_percentiles = command.out.percentiles;
  aopt.slo = command.slo;
  for (std::size_t concurrency : conc) {
    LoadSpec spec = command.load;
    if (!command.sweep.empty()) spec.concurrency = concurrency;
    RunOptions options = command.run;
    LevelResult level;
    level.load = open ? spec.request_rate : static_cast<double>(spec.concurrency);
    level.label =
        open ? fmt::format("r{:g}", spec.request_rate) : fmt::format("c{}", spec.concurrency);
    options.label = fmt::format("[{}]", level.label);
    options.progress = command.out.progress;
    options.request_id_prefix =
        fmt::format("{}-{}-{}", command.run.request_id_prefix, mono_ns() % 1000000, level.label);
    // Each level's users hold conversations of their own.
    if (!command.sweep.empty()) options.conversation.key_prefix += "-" + level.label;
    level.run = !command.groups.empty() ? run_groups(command, options, spec)
                : command.split.empty() ? run_load(options, spec, command.prompts)
                                        : run_split(command, options, spec);
    const auto measured = level.run.measured();
    aopt.wall_s = level.run.wall_s;
    level.agg = aggregate(measured, aopt);
    if (options.conversation.enabled())
      level.conv = conversation_stats(level.run, options.conversation.turns);
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
  markdown << fmt::format("### llmux bench run: {} {} ({})\n\n", where, endpoint_path(body.dialect),
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
  const ConversationSpec& conversation = command.run.conversation;
  if (conversation.enabled())
    load += fmt::format(
        "; each client a user holding a conversation of {} turns ({}: {})", conversation.turns,
        to_string(conversation.mode),
        conversation.mode == ConversationMode::previous
            ? "previous_response_id, store true"
            : "the whole history replayed, store false, prompt_cache_key per conversation");
  std::string bound;
  if (command.load.num_requests) bound = fmt::format("{} requests", command.load.num_requests);
  if (command.load.duration_s > 0)
    bound += fmt::format("{}{:g} s", bound.empty() ? "" : ", at most ", command.load.duration_s);
  if (bound.empty()) bound = conversation.enabled() ? "all turns" : "one round";
  std::string warm;
  if (command.load.warmup_requests)
    warm = fmt::format(", warm-up {} requests excluded", command.load.warmup_requests);
  if (command.load.warmup_s > 0)
    warm = fmt::format(", warm-up {:g} s excluded", command.load.warmup_s);
  HtmlReport html;
  html.title =
      fmt::format("llmux bench run: {} {} ({})", where, endpoint_path(body.dialect), body.model);
  html.intro = fmt::format("Load: {} ({} per level{}). Workload: {}. {}; {} connections.", load,
                           bound, warm, command.workload_desc,
                           !body.stream ? "Non-streaming"
                           : body.dialect == Dialect::messages
                               ? "Streaming (usage in message_start and message_delta)"
                               : "Streaming with stream_options.include_usage",
                           to_string(command.run.client.mode));
  markdown << html.intro << "\n\n";
  markdown << to_markdown(summary_table(command, levels));
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
  if (conversation.enabled()) {
    markdown << "\n";
    markdown << to_markdown(
        conversation_table(levels),
        MarkdownOptions{.title = "Conversations", .heading_level = 4, .notes = {}});
    html.sections.push_back({"Conversations", conversation_table(levels), {}});
  }
  json::object groups_doc;
  const auto tenant_rows =
      group_figures(command, levels.back().run, aopt, ClientGroup::Kind::tenant);
  if (!tenant_rows.empty()) {
    // Each tenant's share of the one level (bench/tenants.hpp).
    markdown << "\n";
    markdown << to_markdown(tenant_table(tenant_rows),
                            MarkdownOptions{.title = "Tenants", .heading_level = 4, .notes = {}});
    html.sections.push_back({"Tenants", tenant_table(tenant_rows), {}});
    groups_doc["tenants"] = tenants_json(tenant_rows);
  }
  const auto mix_rows = group_figures(command, levels.back().run, aopt, ClientGroup::Kind::mix);
  if (!mix_rows.empty()) {
    // Each class of the workload mix (bench/mix.hpp).
    const Table table = mix_table(mix_rows, levels.back().agg);
    markdown << "\n"
             << to_markdown(table, MarkdownOptions{
                                       .title = "Workload mix", .heading_level = 4, .notes = {}});
    html.sections.push_back({"Workload mix", table, {}});
    groups_doc["mix"] = mix_json(mix_rows, levels.back().agg);
    notes.push_back(
        "Workload mix: each class a closed loop of its own clients, prompt and output lengths "
        "drawn uniformly within its bounds; ITL = the gaps between a class's tokens (its p99 and "
        "max: the stalls other classes' prefills cause its decode streams); Mean prompt tokens "
        "from usage; every rate over the run's one window.");
  }
  if (auto backends = backend_table(command, levels)) {
    markdown << "\n";
    markdown << to_markdown(
        *backends, MarkdownOptions{.title = "Where the gateway sent them (X-Llmux-Backend)",
                                   .heading_level = 4,
                                   .notes = {}});
    html.sections.push_back({"Where the gateway sent them (X-Llmux-Backend)", *backends, {}});
  }
  const LevelResult& last = levels.back();
  if (levels.size() == 1) {
    markdown << "\n";
    markdown << to_markdown(
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
  if (conversation.enabled() && conversation.mode == ConversationMode::previous)
    notes.push_back(
        "Not found: turns answered 404 \"not found\" (the server did not hold the "
        "previous_response_id: another backend, or a server without a response store).");
  for (const auto& level : levels) {
    if (level.agg.failed) {
      auto timings = level.run.measured();
      notes.push_back(fmt::format("Errors at {}: {}; first: {}", level.label,
                                  error_summary(level.agg), first_error(timings)));
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
  if (command.sim_ground_truth) gt_json = ground_truth(command, levels, markdown);

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
  const detail::Outcome outcome = detail::outcome(requests, failed, rejected, kinds_s, command.out);
  html.status.push_back(outcome.line);
  html.failed = outcome.status != 0;
  html.notes = notes;
  detail::write_run_files(command, levels, knee, gt_json, groups_doc, std::move(html), where,
                          notes);
  markdown << "\n";
  detail::report_outcome(outcome, markdown, "bench run");
  for (const auto& note : notes) markdown << note << "\n\n";
  return outcome.status;
}

}  // namespace llmux::bench
