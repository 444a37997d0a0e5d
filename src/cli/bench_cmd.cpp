// `llmux bench`: flags → bench::*Command → bench_run / bench_throughput / bench_compare /
// bench_report (src/bench/commands.hpp). Wiring only.
#include <unistd.h>

#include <iostream>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "bench/commands.hpp"
#include "cli/commands.hpp"

namespace llmux::cli {
namespace {

using namespace llmux::bench;

http::Url parse_url_or_throw(const std::string& s, const std::string& flag) {
  std::string err;
  auto u = http::Url::parse(s, &err);
  if (!u) throw std::invalid_argument(fmt::format("{} '{}': {}", flag, s, err));
  return *u;
}

/// "2", "2%" or "0.02"? Percent: "2" and "2%" both mean 2%.
double parse_percent(const std::string& s, const std::string& flag) {
  std::string t = s;
  if (!t.empty() && t.back() == '%') t.pop_back();
  std::size_t pos = 0;
  double v = -1;
  try {
    v = std::stod(t, &pos);
  } catch (const std::logic_error&) {
  }
  if (pos != t.size() || v < 0)
    throw std::invalid_argument(fmt::format("{} '{}': expected a percentage", flag, s));
  return v / 100.0;
}

std::chrono::milliseconds secs(double s) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(s * 1000));
}

/// Flags shared by throughput and compare.
struct SeedFlags {
  std::string model;
  std::size_t repeat = 3;
  std::string levels;
  std::uint32_t max_tokens = 128;
  std::string connection = "fresh";
  double timeout = 300;
  std::string out;
  void add(CLI::App* sub, const std::string& default_levels) {
    levels = default_levels;
    sub->add_option("--model", model,
                    "Model name to send (default: the first id of each URL's GET /v1/models)");
    sub->add_option("--repeat", repeat, "Serial runs of each prompt (the seed: 3)")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    sub->add_option("--concurrency", levels,
                    "Concurrency levels, comma-separated: N requests started together at each")
        ->capture_default_str();
    sub->add_option("--max-tokens", max_tokens, "max_tokens of every request (the seed: 128)")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    sub->add_option("--connection", connection,
                    "fresh: a new TCP connection per request, as the seed's urllib; keep-alive: "
                    "reuse connections")
        ->capture_default_str()
        ->check(CLI::IsMember({"fresh", "keep-alive"}));
    sub->add_option("--timeout", timeout, "Seconds a request may take in all (the seed: 300)")
        ->capture_default_str();
    sub->add_option("--out", out,
                    "Directory for the JSON (settings and every request's timings) and CSV files");
  }
  http::ClientOptions client() const {
    http::ClientOptions c;
    c.mode = *http::parse_connection_mode(connection);
    c.timeouts.total = secs(timeout);
    c.timeouts.idle = secs(timeout);
    return c;
  }
};

struct RunFlags {
  std::string url = "http://127.0.0.1:30000";
  std::vector<std::string> split;
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
  double temperature = 0;
  std::string connection = "keep-alive";
  double timeout = 600, idle_timeout = 60, connect_timeout = 10;
  std::vector<std::string> headers;
  double slo_ttft = 0, slo_tpot = 0, slo_e2e = 0;
  std::string percentiles;
  std::string out;
  bool sim_ground_truth = false;
  std::string request_id_prefix = "bench";
};

int guarded(const std::function<int()>& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 2;
  }
}

Runner add_run(CLI::App* bench) {
  auto* sub = bench->add_subcommand(
      "run",
      "The general load generator: closed loop at a fixed concurrency (a new request when one "
      "ends) or open loop at a Poisson request rate; per-request TTFB, TTFT, TPOT, ITL and E2E; "
      "aggregate and per-stream tok/s, percentiles, goodput and errors by kind.");
  auto f = std::make_shared<RunFlags>();
  auto* tg = "Target";
  sub->add_option("--url", f->url, "Base URL of the OpenAI-compatible server (http only)")
      ->capture_default_str()
      ->group(tg);
  sub->add_option("--split", f->split,
                  "A fixed split instead of --url: URL=N sends N of the closed loop's clients "
                  "straight to URL (repeat for each target; the concurrency is their sum); each "
                  "request's backend is its target. The baseline a gateway is compared with")
      ->group(tg);
  sub->add_option("--endpoint", f->endpoint,
                  "completions (/v1/completions), chat (/v1/chat/completions) or responses "
                  "(/v1/responses)")
      ->capture_default_str()
      ->check(CLI::IsMember({"completions", "chat", "responses"}))
      ->group(tg);
  sub->add_option("--model", f->model,
                  "Model name to send (default: the first id of GET /v1/models)")
      ->group(tg);
  sub->add_option("--header", f->headers, "Extra request header 'Name: value' (repeatable)")
      ->group(tg);

  auto* ld = "Load";
  sub->add_option("--concurrency", f->concurrency,
                  "Closed loop: requests in flight. With --request-rate: the most in flight (0 = "
                  "no cap)")
      ->capture_default_str()
      ->group(ld);
  sub->add_option("--request-rate", f->rate,
                  "Open loop: mean request arrivals per second (Poisson); 0 = closed loop")
      ->capture_default_str()
      ->group(ld);
  sub->add_option("--num-requests", f->num_requests,
                  "Measured requests per level (default 100 when no --duration is given)")
      ->group(ld);
  sub->add_option("--duration", f->duration,
                  "Seconds per level to keep starting requests (with --num-requests, whichever "
                  "comes first)")
      ->group(ld);
  sub->add_option("--warmup", f->warmup,
                  "Warm-up excluded from the figures: N requests, or a duration such as 5s")
      ->capture_default_str()
      ->group(ld);
  sub->add_option("--sweep", f->sweep,
                  "Concurrency levels to sweep, e.g. 1,2,4,8,16 or 1..256 (powers of two); stops "
                  "once past the saturation knee and reports it")
      ->group(ld);
  sub->add_option("--knee-efficiency", f->knee_efficiency,
                  "A step whose tok/s gain is below this fraction of linear scaling is flat")
      ->capture_default_str()
      ->group(ld);
  sub->add_option("--knee-patience", f->knee_patience,
                  "Flat steps in a row that mean saturation (the sweep stops)")
      ->capture_default_str()
      ->group(ld);
  sub->add_option("--seed", f->seed, "Seed of the synthetic prompts and of the Poisson arrivals")
      ->capture_default_str()
      ->group(ld);

  auto* wl = "Workload";
  sub->add_option("--input-len", f->input_len,
                  "Synthetic prompt length, tokens (llmux's tokenizer)")
      ->capture_default_str()
      ->group(wl);
  sub->add_option("--output-len", f->output_len, "max_tokens of synthetic requests")
      ->capture_default_str()
      ->group(wl);
  sub->add_option("--input-spread", f->input_spread,
                  "Spread of prompt lengths: drawn uniformly in input-len*(1±spread)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0))
      ->group(wl);
  sub->add_option("--output-spread", f->output_spread,
                  "Spread of output lengths: max_tokens drawn uniformly in len*(1±spread)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0))
      ->group(wl);
  sub->add_option("--dataset", f->dataset,
                  "JSONL of prompts ({\"prompt\": ...}, optional max_tokens) or ShareGPT "
                  "conversations; used round-robin instead of synthetic prompts")
      ->group(wl);
  sub->add_option("--max-prompts", f->max_prompts,
                  "Read at most this many dataset records (0 = all)")
      ->group(wl);
  sub->add_flag("--no-stream", f->no_stream,
                "Non-streaming requests (no TTFT/ITL; tok/s from usage and E2E)")
      ->group(wl);
  sub->add_flag("--ignore-eos", f->ignore_eos,
                "Send ignore_eos: generate exactly max_tokens (vLLM)")
      ->group(wl);
  sub->add_option("--temperature", f->temperature, "Sampling temperature sent")
      ->capture_default_str()
      ->group(wl);

  auto* cn = "Connections and timeouts";
  sub->add_option("--connection", f->connection,
                  "keep-alive: each stream reuses its connection; fresh: a new connection per "
                  "request (Connection: close), like Python's urllib in the seed's scripts")
      ->capture_default_str()
      ->check(CLI::IsMember({"fresh", "keep-alive"}))
      ->group(cn);
  sub->add_option("--timeout", f->timeout, "Seconds a request may take in all (then: timeout)")
      ->capture_default_str()
      ->group(cn);
  sub->add_option("--idle-timeout", f->idle_timeout,
                  "Seconds of silence before a request counts as stalled (timeout)")
      ->capture_default_str()
      ->group(cn);
  sub->add_option("--connect-timeout", f->connect_timeout, "Seconds to connect")
      ->capture_default_str()
      ->group(cn);

  auto* rp = "Report";
  sub->add_option("--slo-ttft", f->slo_ttft, "Goodput SLO: TTFT at most this many ms")->group(rp);
  sub->add_option("--slo-tpot", f->slo_tpot, "Goodput SLO: TPOT at most this many ms")->group(rp);
  sub->add_option("--slo-e2e", f->slo_e2e, "Goodput SLO: end-to-end latency at most this many ms")
      ->group(rp);
  sub->add_option("--percentiles", f->percentiles,
                  "Extra percentiles besides p50/p90/p95/p99, e.g. 99.9,75")
      ->group(rp);
  sub->add_option("--out", f->out,
                  "Directory for run.json (settings + every request's timings), requests.csv, "
                  "summary.csv and, for sweeps with gnuplot, throughput.png and latency.png")
      ->group(rp);
  sub->add_flag("--no-progress", f->no_progress,
                "No progress line on stderr (shown only on a terminal)")
      ->group(rp);
  sub->add_flag("--no-plots", f->no_plots, "Do not run gnuplot")->group(rp);
  sub->add_flag("--sim-ground-truth", f->sim_ground_truth,
                "Target is `llmux sim`: compare TTFT/ITL with its /debug/requests ground truth")
      ->group(rp);
  sub->add_option("--request-id-prefix", f->request_id_prefix,
                  "X-Request-Id prefix of the requests")
      ->capture_default_str()
      ->group(rp);

  return [f]() -> int {
    return guarded([&]() -> int {
      RunCommand c;
      c.run.url = parse_url_or_throw(f->url, "--url");
      std::size_t split_clients = 0;
      for (const auto& s : f->split) {
        const auto eq = s.rfind('=');
        std::size_t n = 0, pos = 0;
        if (eq != std::string::npos && eq + 1 < s.size()) {
          try {
            n = std::stoul(s.substr(eq + 1), &pos);
          } catch (const std::exception&) {
            pos = 0;
          }
        }
        if (eq == std::string::npos || n == 0 || pos != s.size() - eq - 1)
          throw std::invalid_argument(
              fmt::format("--split '{}': expected URL=N with N ≥ 1 clients", s));
        const std::string u = s.substr(0, eq);
        c.split.push_back(SplitTarget{u, parse_url_or_throw(u, "--split"), n});
        split_clients += n;
      }
      if (!c.split.empty()) c.run.url = c.split.front().url;  // the model is asked there
      c.run.body.dialect = *parse_dialect(f->endpoint);
      c.run.body.model = f->model;
      if (c.run.body.model.empty()) {
        std::string err;
        c.run.body.model = discover_model(c.run.url, &err);
        if (c.run.body.model.empty())
          throw std::runtime_error(
              fmt::format("cannot find the model at {} ({}); pass --model", c.run.url.str(), err));
      }
      c.run.body.stream = !f->no_stream;
      c.run.body.temperature = f->temperature;
      c.run.body.ignore_eos = f->ignore_eos;
      c.run.body.max_tokens = static_cast<std::uint32_t>(f->output_len);
      c.run.client.mode = *http::parse_connection_mode(f->connection);
      c.run.client.timeouts.total = secs(f->timeout);
      c.run.client.timeouts.idle = secs(f->idle_timeout);
      c.run.client.timeouts.connect = secs(f->connect_timeout);
      c.run.request_id_prefix = f->request_id_prefix;
      for (const auto& h : f->headers) {
        const auto colon = h.find(':');
        if (colon == std::string::npos || colon == 0)
          throw std::invalid_argument(fmt::format("--header '{}': expected 'Name: value'", h));
        std::string v = h.substr(colon + 1);
        while (!v.empty() && v.front() == ' ') v.erase(0, 1);
        c.run.headers.push_back(http::Header{h.substr(0, colon), v});
      }
      c.load.mode = f->rate > 0 ? LoadSpec::Mode::open : LoadSpec::Mode::closed;
      c.load.request_rate = f->rate;
      c.load.concurrency = f->concurrency;
      if (!c.split.empty()) {
        if (c.load.mode == LoadSpec::Mode::open || !f->sweep.empty() || f->sim_ground_truth)
          throw std::invalid_argument(
              "--split is one closed-loop level: not with --request-rate, --sweep or "
              "--sim-ground-truth");
        c.load.concurrency = split_clients;
      }
      if (c.load.mode == LoadSpec::Mode::closed && c.load.concurrency == 0)
        throw std::invalid_argument("--concurrency must be at least 1 in a closed loop");
      c.load.num_requests = f->num_requests;
      c.load.duration_s = f->duration;
      if (!c.load.num_requests && c.load.duration_s <= 0) c.load.num_requests = 100;
      c.load.seed = f->seed;
      if (!f->warmup.empty() && f->warmup.back() == 's') {
        c.load.warmup_s = std::stod(f->warmup.substr(0, f->warmup.size() - 1));
      } else {
        std::size_t pos = 0;
        const long w = std::stol(f->warmup, &pos);
        if (pos != f->warmup.size() || w < 0)
          throw std::invalid_argument(
              fmt::format("--warmup '{}': N requests or a duration like 5s", f->warmup));
        c.load.warmup_requests = static_cast<std::size_t>(w);
      }
      if (!f->sweep.empty()) {
        if (c.load.mode == LoadSpec::Mode::open)
          throw std::invalid_argument("--sweep sweeps concurrency: not with --request-rate");
        c.sweep = parse_levels(f->sweep);
      }
      c.knee.min_efficiency = f->knee_efficiency;
      c.knee.patience = std::max<std::size_t>(1, f->knee_patience);
      if (f->slo_ttft > 0) c.slo.ttft_s = f->slo_ttft / 1e3;
      if (f->slo_tpot > 0) c.slo.tpot_s = f->slo_tpot / 1e3;
      if (f->slo_e2e > 0) c.slo.e2e_s = f->slo_e2e / 1e3;
      if (!f->percentiles.empty()) c.out.percentiles = parse_percentiles(f->percentiles);
      c.out.out_dir = f->out;
      c.out.progress = !f->no_progress && ::isatty(2);
      c.out.plots = !f->no_plots;
      c.sim_ground_truth = f->sim_ground_truth;
      if (!f->dataset.empty()) {
        c.prompts = load_dataset(f->dataset, f->max_prompts);
        c.workload_desc = fmt::format("dataset {} ({} prompts)", f->dataset, c.prompts.size());
      } else {
        SyntheticSpec s;
        s.input_tokens = f->input_len;
        s.output_tokens = f->output_len;
        s.output_spread = f->output_spread;
        s.input_spread = f->input_spread;
        s.seed = f->seed;
        const std::size_t n =
            std::clamp<std::size_t>(c.load.num_requests + c.load.warmup_requests, 1, 1024);
        c.prompts = synthetic_workload(s, n);
        const auto spread = [](double s) {
          return s > 0 ? fmt::format(" ±{:g}%", s * 100) : std::string();
        };
        c.workload_desc =
            fmt::format("synthetic, {} prompt tokens{}, max_tokens {}{}", f->input_len,
                        spread(f->input_spread), f->output_len, spread(f->output_spread));
      }
      return bench_run(c, std::cout);
    });
  };
}

Runner add_throughput(CLI::App* bench) {
  auto* sub = bench->add_subcommand(
      "throughput",
      "The seed's qwen36-throughput.py: on each target, short/medium/long prompts one after the "
      "other (--repeat times), then N requests started together with the medium prompt; "
      "non-streaming /v1/completions, temperature 0, max_tokens 128. Prints per-target tables and "
      "whether the targets agree.");
  struct F {
    std::vector<std::string> targets;
    std::string agree = "2";
    SeedFlags seed;
  };
  auto f = std::make_shared<F>();
  sub->add_option("--target", f->targets,
                  "A server to measure as NAME=URL, e.g. server1=http://10.0.0.1:30000 "
                  "(repeatable; a bare URL is named serverN)")
      ->required();
  sub->add_option("--agree", f->agree,
                  "Targets agree when their tok/s spread, (max-min)/max, is within this percentage")
      ->capture_default_str();
  f->seed.add(sub, "4,8");
  return [f]() -> int {
    return guarded([&]() -> int {
      ThroughputCommand c;
      int i = 0;
      for (const auto& t : f->targets) {
        ++i;
        const auto eq = t.find('=');
        const bool named = eq != std::string::npos && t.find("://") > eq;
        NamedUrl n;
        n.name = named ? t.substr(0, eq) : fmt::format("server{}", i);
        n.url = parse_url_or_throw(named ? t.substr(eq + 1) : t, "--target");
        c.targets.push_back(std::move(n));
      }
      c.model = f->seed.model;
      c.repeat = f->seed.repeat;
      c.levels = parse_levels(f->seed.levels);
      c.max_tokens = f->seed.max_tokens;
      c.agree = parse_percent(f->agree, "--agree");
      c.client = f->seed.client();
      c.out.out_dir = f->seed.out;
      return bench_throughput(c, std::cout);
    });
  };
}

Runner add_compare(CLI::App* bench) {
  auto* sub = bench->add_subcommand(
      "compare",
      "The seed's qwen36-gateway-vs-direct.py: named paths (URL + endpoint), each measured "
      "serially and with N requests started together; tok/s per path and level, and each "
      "gateway path's ratio to the direct path of the same endpoint.");
  struct F {
    std::string direct, gateway, prompt = "medium";
    std::vector<std::string> paths;
    SeedFlags seed;
  };
  auto f = std::make_shared<F>();
  sub->add_option("--direct", f->direct,
                  "Direct URL of one backend (with --gateway: the seed's four paths)");
  sub->add_option("--gateway", f->gateway, "Gateway URL (with --direct: the seed's four paths)");
  sub->add_option("--path", f->paths,
                  "A path as NAME=URL,ENDPOINT with ENDPOINT completions or chat (repeatable); a "
                  "path named direct* is the baseline of the others with the same endpoint");
  sub->add_option("--prompt", f->prompt, "Prompt size: short, medium or long")
      ->capture_default_str()
      ->check(CLI::IsMember({"short", "medium", "long"}));
  f->seed.add(sub, "8,16");
  return [f]() -> int {
    return guarded([&]() -> int {
      CompareCommand c;
      if (!f->direct.empty() || !f->gateway.empty()) {
        if (f->direct.empty() || f->gateway.empty())
          throw std::invalid_argument("--direct and --gateway go together");
        c.paths = seed_paths(parse_url_or_throw(f->direct, "--direct"),
                             parse_url_or_throw(f->gateway, "--gateway"));
      }
      for (const auto& p : f->paths) {
        const auto eq = p.find('=');
        const auto comma = p.rfind(',');
        if (eq == std::string::npos || comma == std::string::npos || comma < eq)
          throw std::invalid_argument(fmt::format("--path '{}': expected NAME=URL,ENDPOINT", p));
        NamedUrl n;
        n.name = p.substr(0, eq);
        n.url = parse_url_or_throw(p.substr(eq + 1, comma - eq - 1), "--path");
        auto d = parse_dialect(p.substr(comma + 1));
        if (!d)
          throw std::invalid_argument(
              fmt::format("--path '{}': endpoint must be completions, chat or responses", p));
        n.dialect = *d;
        c.paths.push_back(std::move(n));
      }
      if (c.paths.empty()) throw std::invalid_argument("give --direct and --gateway, or --path");
      c.model = f->seed.model;
      c.repeat = f->seed.repeat;
      c.levels = parse_levels(f->seed.levels);
      c.max_tokens = f->seed.max_tokens;
      c.prompt = f->prompt;
      c.client = f->seed.client();
      c.out.out_dir = f->seed.out;
      return bench_compare(c, std::cout);
    });
  };
}

Runner add_report(CLI::App* bench) {
  auto* sub = bench->add_subcommand(
      "report",
      "Compare two results written with --out (before and after a deployment change): every "
      "figure of their summaries, flagging changes beyond a threshold. Exit status 1 when "
      "something changed.");
  struct F {
    std::string a, b, threshold = "5";
    bool all = false;
  };
  auto f = std::make_shared<F>();
  sub->add_option("A", f->a, "Result before (run.json, throughput.json or compare.json)")
      ->required();
  sub->add_option("B", f->b, "Result after")->required();
  sub->add_option("--threshold", f->threshold, "Flag changes beyond this percentage")
      ->capture_default_str();
  sub->add_flag("--all", f->all, "List every metric, not only the flagged ones");
  return [f]() -> int {
    return guarded([&]() -> int {
      return bench_report(f->a, f->b, parse_percent(f->threshold, "--threshold"), f->all,
                          std::cout);
    });
  };
}

}  // namespace

Runner add_bench(CLI::App& app) {
  auto* bench = app.add_subcommand(
      "bench",
      "Benchmark OpenAI-compatible servers (vLLM, llmux gateway, llmux sim): `run` for load "
      "tests and sweeps, `throughput` and `compare` for the seed's two scripts, `report` to "
      "compare two results. Markdown on stdout; --out DIR adds JSON and CSV.");
  bench->require_subcommand(1);
  auto runners = std::make_shared<std::vector<std::pair<CLI::App*, Runner>>>();
  for (auto* add : {&add_run, &add_throughput, &add_compare, &add_report}) {
    Runner r = (*add)(bench);
    runners->emplace_back(bench->get_subcommands({}).back(), std::move(r));
  }
  return [runners]() -> int {
    for (auto& [sub, r] : *runners)
      if (sub->parsed()) return r();
    return 2;
  };
}

}  // namespace llmux::cli
