// SPDX-License-Identifier: Apache-2.0
// `llmux bench run`: flags → bench::RunCommand → bench_run (src/bench/commands.hpp). Wiring only.
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bench/commands.hpp"
#include "bench/groups.hpp"
#include "bench/mix.hpp"
#include "bench/tenants.hpp"
#include "cli/bench_common.hpp"

namespace llmux::cli::bench_cli {
namespace {

using namespace llmux::bench;

struct RunFlags {
  std::string url = "http://127.0.0.1:30000";
  std::vector<std::string> split;
  std::vector<std::string> tenants, mix;
  std::string workload;
  std::string endpoint = "completions";
  std::string model;
  std::size_t concurrency = 1;
  double rate = 0;
  std::size_t num_requests = 0;
  double duration = 0;
  std::string warmup = "0";
  std::string sweep;
  double knee_efficiency = 0.10;
  std::size_t knee_patience = 1;
  std::size_t input_len = 256, output_len = 128;
  double output_spread = 0;
  double input_spread = 0;
  std::uint64_t seed = 1;
  std::string dataset;
  std::size_t max_prompts = 0;
  bool no_stream = false, ignore_eos = false, no_progress = false, no_plots = false;
  bool fail_on_reject = false;
  double temperature = 0;
  std::string connection = "keep-alive";
  double timeout = 600, idle_timeout = 60, connect_timeout = 10;
  std::vector<std::string> headers;
  TlsFlags tls;
  double slo_ttft = 0, slo_tpot = 0, slo_e2e = 0;
  std::string percentiles;
  std::string out;
  bool sim_ground_truth = false;
  std::string request_id_prefix = "bench";
  std::size_t conversation_turns = 0;
  std::string conversation_mode = "previous";
  double error_pause_ms = 0;
  std::size_t shared_prefix = 0, prefix_len = 1024;
};

}  // namespace

Runner add_run(CLI::App* bench) {
  auto* sub = bench->add_subcommand(
      "run",
      "The general load generator: closed loop at a fixed concurrency (a new request when one "
      "ends) or open loop at a Poisson request rate; per-request TTFB, TTFT, TPOT, ITL and E2E; "
      "aggregate and per-stream tok/s, percentiles, goodput and errors by kind.");
  auto flags = std::make_shared<RunFlags>();
  auto* target_group = "Target";
  sub->add_option("--url", flags->url, "Base URL of the OpenAI-compatible server (http only)")
      ->capture_default_str()
      ->group(target_group);
  sub->add_option("--split", flags->split,
                  "A fixed split instead of --url: URL=N sends N of the closed loop's clients "
                  "straight to URL (repeat for each target; the concurrency is their sum); each "
                  "request's backend is its target. The baseline a gateway is compared with")
      ->group(target_group);
  sub->add_option("--tenant", flags->tenants,
                  "NAME:CLIENTS[:PRIORITY[:WORKLOAD]] (repeat): tenants sharing a gateway at "
                  "once, each a closed loop of CLIENTS sending X-Llmux-Tenant: NAME and "
                  "X-Llmux-Priority: PRIORITY, WORKLOAD IN/OUT its prompt tokens and max_tokens, "
                  "each N or MIN-MAX (default the run's); reports each tenant's TTFT, E2E and "
                  "tok/s and Jain's index over the token rates. The concurrency is their sum")
      ->group(target_group);
  sub->add_option("--endpoint", flags->endpoint,
                  "completions (/v1/completions), chat (/v1/chat/completions), responses "
                  "(/v1/responses) or messages (Anthropic's /v1/messages; TTFT and ITL from its "
                  "content_block_delta events)")
      ->capture_default_str()
      ->check(CLI::IsMember({"completions", "chat", "responses", "messages"}))
      ->group(target_group);
  sub->add_option("--model", flags->model,
                  "Model name to send (default: the first id of GET /v1/models)")
      ->group(target_group);
  flags->tls.add(sub);
  sub->add_option("--header", flags->headers, "Extra request header 'Name: value' (repeatable)")
      ->group(target_group);

  auto* load_group = "Load";
  sub->add_option("--concurrency", flags->concurrency,
                  "Closed loop: requests in flight. With --request-rate: the most in flight (0 = "
                  "no cap)")
      ->capture_default_str()
      ->group(load_group);
  sub->add_option("--request-rate", flags->rate,
                  "Open loop: mean request arrivals per second (Poisson); 0 = closed loop")
      ->capture_default_str()
      ->group(load_group);
  sub->add_option("--num-requests", flags->num_requests,
                  "Measured requests per level (default 100 when no --duration is given)")
      ->group(load_group);
  sub->add_option("--duration", flags->duration,
                  "Seconds per level to keep starting requests (with --num-requests, whichever "
                  "comes first)")
      ->group(load_group);
  sub->add_option("--warmup", flags->warmup,
                  "Warm-up excluded from the figures: N requests, or a duration such as 5s")
      ->capture_default_str()
      ->group(load_group);
  sub->add_option("--sweep", flags->sweep,
                  "Concurrency levels to sweep, e.g. 1,2,4,8,16 or 1..256 (powers of two); stops "
                  "once past the saturation knee and reports it")
      ->group(load_group);
  sub->add_option("--knee-efficiency", flags->knee_efficiency,
                  "A step whose tok/s gain is below this fraction of linear scaling is flat")
      ->capture_default_str()
      ->group(load_group);
  sub->add_option("--knee-patience", flags->knee_patience,
                  "Flat steps in a row that mean saturation (the sweep stops)")
      ->capture_default_str()
      ->group(load_group);
  sub->add_option("--seed", flags->seed,
                  "Seed of the synthetic prompts and of the Poisson arrivals")
      ->capture_default_str()
      ->group(load_group);

  auto* workload_group = "Workload";
  sub->add_option("--input-len", flags->input_len,
                  "Synthetic prompt length, tokens (llmux's tokenizer)")
      ->capture_default_str()
      ->group(workload_group);
  sub->add_option("--output-len", flags->output_len, "max_tokens of synthetic requests")
      ->capture_default_str()
      ->group(workload_group);
  sub->add_option("--input-spread", flags->input_spread,
                  "Spread of prompt lengths: drawn uniformly in input-len*(1±spread)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0))
      ->group(workload_group);
  sub->add_option("--output-spread", flags->output_spread,
                  "Spread of output lengths: max_tokens drawn uniformly in len*(1±spread)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0))
      ->group(workload_group);
  sub->add_option("--mix", flags->mix,
                  "NAME:CLIENTS:IN/OUT (repeat): a workload mix, each class a closed loop of "
                  "CLIENTS whose prompt tokens and max_tokens are drawn uniformly from IN and OUT "
                  "(MIN-MAX, or N with the run's spreads), all at once with no header of their "
                  "own; reports each class's TTFT, ITL (the stall other classes' prefills cause) "
                  "and E2E. The concurrency is their sum; bound it with --duration")
      ->group(workload_group);
  std::string workload_help = "A named workload mix, its --mix classes (more --mix add to them):";
  for (const NamedWorkload& workload : named_workloads())
    workload_help += fmt::format(" {}: {} (--mix {})", workload.name, workload.description,
                                 fmt::join(workload.classes, " --mix "));
  sub->add_option("--workload", flags->workload, workload_help)->group(workload_group);
  sub->add_option("--dataset", flags->dataset,
                  "JSONL of prompts ({\"prompt\": ...}, optional max_tokens) or ShareGPT "
                  "conversations; used round-robin instead of synthetic prompts")
      ->group(workload_group);
  sub->add_option("--max-prompts", flags->max_prompts,
                  "Read at most this many dataset records (0 = all)")
      ->group(workload_group);
  sub->add_flag("--no-stream", flags->no_stream,
                "Non-streaming requests (no TTFT/ITL; tok/s from usage and E2E)")
      ->group(workload_group);
  sub->add_flag("--ignore-eos", flags->ignore_eos,
                "Send ignore_eos: generate exactly max_tokens (vLLM)")
      ->group(workload_group);
  sub->add_option("--temperature", flags->temperature, "Sampling temperature sent")
      ->capture_default_str()
      ->group(workload_group);

  auto* conversation_group = "Conversations and shared prefixes";
  auto* turns_opt =
      sub->add_option(
             "--conversation-turns", flags->conversation_turns,
             "With --endpoint responses: each closed-loop client is a user holding one "
             "conversation of this many turns, each turn sent when the previous one ended (a new "
             "user message of --input-len tokens, distinct per user and turn); the run ends when "
             "every user has sent its turns (or earlier by --num-requests/--duration). Every "
             "turn carries X-Session-ID: conv-<seed>-<user>")
          ->group(conversation_group);
  sub->add_option("--conversation-mode", flags->conversation_mode,
                  "previous: turn k>1 sends only the new message with previous_response_id (the "
                  "server keeps the history, store true); replay: every turn sends the whole "
                  "history as input items (store false, prompt_cache_key per conversation), as "
                  "the Codex CLI does")
      ->capture_default_str()
      ->check(CLI::IsMember({"previous", "replay"}))
      ->needs(turns_opt)
      ->group(conversation_group);
  sub->add_option("--error-pause", flags->error_pause_ms,
                  "Milliseconds a user waits after a failed turn before its next one (0: none)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 600000.0))
      ->needs(turns_opt)
      ->group(conversation_group);
  sub->add_option("--shared-prefix", flags->shared_prefix,
                  "N distinct synthetic system prompts of --prefix-len tokens, each request (each "
                  "conversation) drawing one at random by --seed: chat sends a system message, "
                  "completions prepends it to the prompt, responses sends it as instructions")
      ->group(conversation_group);
  sub->add_option("--prefix-len", flags->prefix_len, "Tokens of each --shared-prefix system prompt")
      ->capture_default_str()
      ->check(CLI::PositiveNumber)
      ->group(conversation_group);

  auto* connection_group = "Connections and timeouts";
  sub->add_option("--connection", flags->connection,
                  "keep-alive: each stream reuses its connection; fresh: a new connection per "
                  "request (Connection: close), like Python's urllib in the seed's scripts")
      ->capture_default_str()
      ->check(CLI::IsMember({"fresh", "keep-alive"}))
      ->group(connection_group);
  sub->add_option("--timeout", flags->timeout, "Seconds a request may take in all (then: timeout)")
      ->capture_default_str()
      ->group(connection_group);
  sub->add_option("--idle-timeout", flags->idle_timeout,
                  "Seconds of silence before a request counts as stalled (timeout)")
      ->capture_default_str()
      ->group(connection_group);
  sub->add_option("--connect-timeout", flags->connect_timeout, "Seconds to connect")
      ->capture_default_str()
      ->group(connection_group);

  auto* report_group = "Report";
  sub->add_option("--slo-ttft", flags->slo_ttft, "Goodput SLO: TTFT at most this many ms")
      ->group(report_group);
  sub->add_option("--slo-tpot", flags->slo_tpot, "Goodput SLO: TPOT at most this many ms")
      ->group(report_group);
  sub->add_option("--slo-e2e", flags->slo_e2e,
                  "Goodput SLO: end-to-end latency at most this many ms")
      ->group(report_group);
  sub->add_option("--percentiles", flags->percentiles,
                  "Extra percentiles besides p50/p90/p95/p99, e.g. 99.9,75")
      ->group(report_group);
  sub->add_option("--out", flags->out,
                  "Directory for run.json (settings + every request's timings), requests.csv, "
                  "summary.csv, index.html and SVG/PNG charts (with gnuplot): tok/s vs "
                  "concurrency, TTFT/ITL/E2E distributions, tok/s over time")
      ->group(report_group);
  sub->add_flag("--fail-on-reject", flags->fail_on_reject,
                "Exit status 1 also when requests were rejected with 429 (otherwise only "
                "failures do: transport errors, timeouts, other error statuses)")
      ->group(report_group);
  sub->add_flag("--no-progress", flags->no_progress,
                "No progress line on stderr (shown only on a terminal)")
      ->group(report_group);
  sub->add_flag("--no-plots", flags->no_plots, "With --out: do not run gnuplot")
      ->group(report_group);
  sub->add_flag("--sim-ground-truth", flags->sim_ground_truth,
                "Target is `llmux sim`: compare TTFT/ITL with its /debug/requests ground truth")
      ->group(report_group);
  sub->add_option("--request-id-prefix", flags->request_id_prefix,
                  "X-Request-Id prefix of the requests")
      ->capture_default_str()
      ->group(report_group);

  return [flags]() -> int {
    return guarded([&]() -> int {
      RunCommand command;
      command.run.url = parse_url_or_throw(flags->url, "--url");
      std::size_t split_clients = 0;
      for (const auto& split : flags->split) {
        const auto equals_sign = split.rfind('=');
        std::size_t clients = 0, pos = 0;
        if (equals_sign != std::string::npos && equals_sign + 1 < split.size()) {
          try {
            clients = std::stoul(split.substr(equals_sign + 1), &pos);
          } catch (const std::exception&) {
            pos = 0;
          }
        }
        if (equals_sign == std::string::npos || clients == 0 ||
            pos != split.size() - equals_sign - 1)
          throw std::invalid_argument(
              fmt::format("--split '{}': expected URL=N with N ≥ 1 clients", split));
        const std::string url_text = split.substr(0, equals_sign);
        command.split.push_back(
            SplitTarget{url_text, parse_url_or_throw(url_text, "--split"), clients});
        split_clients += clients;
      }
      if (!command.split.empty())
        command.run.url = command.split.front().url;  // the model is asked there
      for (const auto& header : flags->headers) {
        const auto colon = header.find(':');
        if (colon == std::string::npos || colon == 0)
          throw std::invalid_argument(fmt::format("--header '{}': expected 'Name: value'", header));
        std::string value = header.substr(colon + 1);
        while (!value.empty() && value.front() == ' ') value.erase(0, 1);
        command.run.headers.push_back(http::Header{header.substr(0, colon), value});
      }
      // https:// (the URL, or any --split target): the TLS context, before GET /v1/models.
      bool any_https = command.run.url.tls;
      for (const auto& target : command.split) any_https = any_https || target.url.tls;
      flags->tls.apply(command.run.client, any_https);
      command.run.body.dialect = *parse_dialect(flags->endpoint);
      command.run.body.model = flags->model;
      if (command.run.body.model.empty()) {
        std::string err;
        command.run.body.model =
            discover_model(command.run.url, &err, command.run.client, command.run.headers);
        if (command.run.body.model.empty())
          throw std::runtime_error(fmt::format("cannot find the model at {} ({}); pass --model",
                                               command.run.url.str(), err));
      }
      command.run.body.stream = !flags->no_stream;
      command.run.body.temperature = flags->temperature;
      command.run.body.ignore_eos = flags->ignore_eos;
      command.run.body.max_tokens = static_cast<std::uint32_t>(flags->output_len);
      command.run.client.mode = *http::parse_connection_mode(flags->connection);
      command.run.client.timeouts.total = secs(flags->timeout);
      command.run.client.timeouts.idle = secs(flags->idle_timeout);
      command.run.client.timeouts.connect = secs(flags->connect_timeout);
      command.run.request_id_prefix = flags->request_id_prefix;
      command.load.mode = flags->rate > 0 ? LoadSpec::Mode::open : LoadSpec::Mode::closed;
      command.load.request_rate = flags->rate;
      command.load.concurrency = flags->concurrency;
      if (!command.split.empty()) {
        if (command.load.mode == LoadSpec::Mode::open || !flags->sweep.empty() ||
            flags->sim_ground_truth)
          throw std::invalid_argument(
              "--split is one closed-loop level: not with --request-rate, --sweep or "
              "--sim-ground-truth");
        command.load.concurrency = split_clients;
      }
      for (const auto& text : flags->tenants) command.groups.push_back(parse_tenant(text));
      if (!flags->workload.empty())
        for (ClientGroup& mix_class : workload_classes(flags->workload))
          command.groups.push_back(std::move(mix_class));
      for (const auto& text : flags->mix) command.groups.push_back(parse_mix(text));
      if (!command.groups.empty()) {
        if (command.load.mode == LoadSpec::Mode::open || !flags->sweep.empty() ||
            !command.split.empty() || flags->sim_ground_truth)
          throw std::invalid_argument(
              "--tenant, --mix and --workload are one closed-loop level: not with "
              "--request-rate, --sweep, --split or --sim-ground-truth");
        check_group_names(command.groups);
        command.load.concurrency = 0;
        for (const auto& group : command.groups) command.load.concurrency += group.clients;
      }
      if (command.load.mode == LoadSpec::Mode::closed && command.load.concurrency == 0)
        throw std::invalid_argument("--concurrency must be at least 1 in a closed loop");
      ConversationSpec& conv = command.run.conversation;
      conv.turns = flags->conversation_turns;
      conv.mode = *parse_conversation_mode(flags->conversation_mode);
      conv.error_pause_s = flags->error_pause_ms / 1000.0;
      conv.key_prefix = fmt::format("conv-{}", flags->seed);
      if (conv.enabled()) {
        if (command.run.body.dialect != Dialect::responses)
          throw std::invalid_argument("--conversation-turns needs --endpoint responses");
        if (command.load.mode == LoadSpec::Mode::open)
          throw std::invalid_argument(
              "--conversation-turns is a closed loop (one user per client): not with "
              "--request-rate");
      }
      command.load.num_requests = flags->num_requests;
      command.load.duration_s = flags->duration;
      if (!command.load.num_requests && command.load.duration_s <= 0 && !conv.enabled())
        command.load.num_requests = 100;
      command.load.seed = flags->seed;
      if (!flags->warmup.empty() && flags->warmup.back() == 's') {
        command.load.warmup_s = std::stod(flags->warmup.substr(0, flags->warmup.size() - 1));
      } else {
        std::size_t pos = 0;
        const long warmup = std::stol(flags->warmup, &pos);
        if (pos != flags->warmup.size() || warmup < 0)
          throw std::invalid_argument(
              fmt::format("--warmup '{}': N requests or a duration like 5s", flags->warmup));
        command.load.warmup_requests = static_cast<std::size_t>(warmup);
      }
      if (!flags->sweep.empty()) {
        if (command.load.mode == LoadSpec::Mode::open)
          throw std::invalid_argument("--sweep sweeps concurrency: not with --request-rate");
        command.sweep = parse_levels(flags->sweep);
      }
      command.knee.min_efficiency = flags->knee_efficiency;
      command.knee.patience = std::max<std::size_t>(1, flags->knee_patience);
      if (flags->slo_ttft > 0) command.slo.ttft_s = flags->slo_ttft / 1e3;
      if (flags->slo_tpot > 0) command.slo.tpot_s = flags->slo_tpot / 1e3;
      if (flags->slo_e2e > 0) command.slo.e2e_s = flags->slo_e2e / 1e3;
      if (!flags->percentiles.empty())
        command.out.percentiles = parse_percentiles(flags->percentiles);
      command.out.out_dir = flags->out;
      command.out.progress = !flags->no_progress && ::isatty(2);
      command.out.plots = !flags->no_plots;
      command.out.fail_on_reject = flags->fail_on_reject;
      command.sim_ground_truth = flags->sim_ground_truth;
      if (!flags->dataset.empty()) {
        for (const ClientGroup& group : command.groups)
          if (!group.input.empty())
            throw std::invalid_argument(fmt::format(
                "{} {}: a WORKLOAD (IN/OUT) is for synthetic prompts, not with --dataset",
                group.kind == ClientGroup::Kind::tenant ? "--tenant" : "--mix", group.name));
        command.prompts = load_dataset(flags->dataset, flags->max_prompts);
        command.workload_desc =
            fmt::format("dataset {} ({} prompts)", flags->dataset, command.prompts.size());
      } else {
        SyntheticSpec synthetic;
        synthetic.input_tokens = flags->input_len;
        synthetic.output_tokens = flags->output_len;
        synthetic.output_spread = flags->output_spread;
        synthetic.input_spread = flags->input_spread;
        synthetic.seed = flags->seed;
        // Distinct prompts: one per request (up to 1024, then round robin); a conversation
        // workload one per user and turn (up to 65536).
        std::size_t prompt_count = command.load.num_requests
                                       ? command.load.num_requests + command.load.warmup_requests
                                       : 1024;
        prompt_count = std::clamp<std::size_t>(prompt_count, 1, 1024);
        if (conv.enabled()) {
          std::size_t users = command.load.concurrency;
          for (std::size_t level : command.sweep) users = std::max(users, level);
          prompt_count = std::clamp<std::size_t>(users * conv.turns, 1, 65536);
        }
        command.prompts = synthetic_workload(synthetic, prompt_count);
        const auto spread = [](double fraction) {
          return fraction > 0 ? fmt::format(" ±{:g}%", fraction * 100) : std::string();
        };
        command.workload_desc = fmt::format("synthetic, {} prompt tokens{}, max_tokens {}{}",
                                            flags->input_len, spread(flags->input_spread),
                                            flags->output_len, spread(flags->output_spread));
        // A tenant or mix class with a workload of its own: its own synthetic prompts (and when
        // every group has its own, the run's are never sent).
        const std::string groups_desc = make_group_prompts(command.groups, synthetic, prompt_count);
        const bool own_prompts_only =
            !command.groups.empty() &&
            std::all_of(command.groups.begin(), command.groups.end(),
                        [](const ClientGroup& group) { return !group.prompts.empty(); });
        command.workload_desc =
            (own_prompts_only ? "synthetic" : command.workload_desc) + groups_desc;
      }
      if (flags->shared_prefix > 0) {
        command.shared_prefixes = flags->shared_prefix;
        command.prefix_tokens = flags->prefix_len;
        const auto prefixes = shared_prefixes(flags->shared_prefix, flags->prefix_len, flags->seed);
        apply_shared_prefixes(command.prompts, prefixes, conv.enabled() ? conv.turns : 1,
                              flags->seed + 1);
        for (ClientGroup& group : command.groups)
          apply_shared_prefixes(group.prompts, prefixes, conv.enabled() ? conv.turns : 1,
                                flags->seed + 1);
        command.workload_desc += fmt::format(
            "; {} shared system prompts of {} tokens, drawn at random by the {}",
            flags->shared_prefix, flags->prefix_len, conv.enabled() ? "conversations" : "requests");
      }
      return bench_run(command, std::cout);
    });
  };
}

}  // namespace llmux::cli::bench_cli
