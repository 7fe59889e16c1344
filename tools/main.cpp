// tools/main.cpp — the `layoutsim` command (README.md, "Commands").
//
// Exit codes: 0 success (a layout that does not fit is still a success, with a
// warning); 1 invalid scenario or impossible layout (the loader's located
// ScenarioError, or wl::InvalidScenario), a step outside the representable time
// range (sim::TimeRangeError), a user I/O error (tools::IoError: cannot read or write
// a file, full or closed stdout), also an invalid trace for check-trace;
// 2 usage error (CLI11 parse error, an empty path, two outputs on stdout); 3 internal error (anything else: a broken
// internal precondition, a deadlocked schedule). A scenario is resolved — every
// user error found — before plan() or simulate() runs, so an exception from them
// is a bug, never "invalid scenario". Errors go to stderr; stdout carries only results.
#include <sys/resource.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <cstdio>
#include <iostream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "tools/atomic_file.hpp"
#include "tools/chakra_export.hpp"
#include "tools/diff.hpp"
#include "tools/output_check.hpp"
#include "tools/plot.hpp"
#include "tools/progress.hpp"
#include "tools/report_json.hpp"
#include "tools/scenario.hpp"
#include "tools/search.hpp"
#include "tools/mpi_shard.hpp"
#include "tools/summary.hpp"
#include "tools/sweep.hpp"
#include "tools/sweep_command.hpp"
#include "tools/reshard.hpp"
#include "tools/trace.hpp"
#include "tools/trace_check.hpp"
#include "tools/calibrate.hpp"
#include "tools/profile.hpp"
#include "tools/validate.hpp"
#include "workloads/scenario_keys.hpp"
#include "workloads/program_builder.hpp"
#include "workloads/simulate.hpp"

#ifndef LAYOUTSIM_VERSION
#define LAYOUTSIM_VERSION "unknown"
#endif

namespace {

using namespace ls;

constexpr int kExitOk = 0, kExitInvalid = 1, kExitUsage = 2, kExitInternal = 3;

struct UsageError : std::runtime_error {
  using runtime_error::runtime_error;
};

// Every output file (and "-" = stdout) goes through the atomic writer: a failure is
// an IoError (exit 1) and never damages an older file.
void write_out(const std::string& path, const std::string& text) { tools::write_output(path, text); }

// At most one output may go to stdout, or the two would interleave.
void one_stdout(std::initializer_list<std::pair<const char*, const std::string*>> outputs) {
  std::string dashes;
  int n = 0;
  for (const auto& [flag, path] : outputs)
    if (*path == "-") {
      dashes += (n++ ? " and " : "") + std::string(flag);
    }
  if (n > 1) throw UsageError(fmt::format("{} both write to stdout ('-'): give a file name to all but one", dashes));
}

wl::ResolvedScenario load(const std::string& path, const std::vector<std::string>& sets) {
  return path.empty() ? tools::load_default_scenario(sets) : tools::load_scenario_file(path, sets);
}

double peak_rss_bytes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) * 1024.0;  // Linux reports KiB
}

// ---------------------------------------------------------------- run
struct RunArgs {
  std::string scenario;
  std::vector<std::string> sets;
  std::string json, trace;
  std::string chakra;  // --chakra DIR
  std::vector<std::string> trace_devices;  // --trace-devices LIST | auto | all
  bool quiet = false, profile = false;
};

int cmd_run(const RunArgs& a) {
  one_stdout({{"--json", &a.json}, {"--trace", &a.trace}});
  const wl::ResolvedScenario sc = load(a.scenario, a.sets);
  wl::SimOptions opt;
  opt.trace = !a.trace.empty();
  opt.trace_devices = a.trace_devices;
  const auto t0 = std::chrono::steady_clock::now();
  // A run that lasts more than a couple of seconds shows that it is alive (stderr, terminal only).
  tools::Progress progress({.label = "run " + sc->name, .enabled = tools::progress_wanted(a.quiet), .min_interval_s = 0.5, .delay_s = 2,
                            .heartbeat_s = 0.5});
  wl::Result r;
  try {
    r = wl::simulate(sc, opt);
  } catch (const wl::UnknownTraceDevice& e) {
    throw UsageError(e.what());
  }
  progress.finish();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (r.wall_s <= 0) r.wall_s = wall;

  // Post-condition: no summary number may be negative, NaN, infinite or a fraction
  // above 1 (tools/output_check.hpp); a violation is a bug (exit 3), found before
  // anything is written.
  tools::check_summary_numbers(tools::to_json(r, {.include_wall_time = a.profile}));
  if (!a.json.empty()) write_out(a.json, tools::to_json_string(r, {.include_wall_time = a.profile}));
  if (!a.trace.empty()) write_out(a.trace, tools::chrome_trace_json(r));
  tools::ChakraExportSummary chakra;
  if (!a.chakra.empty()) {  // the program just simulated, as Chakra ETs; a DIR we cannot write is a user error
    try {
      chakra = tools::write_chakra_traces(wl::build_program(sc).program, sc->name, a.chakra);
    } catch (const tools::ChakraWriteError& e) {
      fmt::print(stderr, "error: --chakra {}: {}\n", a.chakra, e.what());
      return kExitInvalid;
    }
  }
  const bool table = !a.quiet && a.json != "-" && a.trace != "-";
  if (table) {
    const std::string s = tools::format_summary(r);
    std::fwrite(s.data(), 1, s.size(), stdout);
    if (!a.trace.empty()) fmt::print("\nTrace written to {} (open it at https://ui.perfetto.dev)\n", a.trace);
    if (!a.chakra.empty())
      fmt::print("\nChakra traces written to {} ({} files, {} nodes; ASTRA-sim workload prefix {}/{})\n", a.chakra, chakra.files,
                 chakra.nodes, a.chakra, tools::chakra_file_stem(sc->name));
  } else if (!a.quiet) {
    for (const auto& w : r.warnings) fmt::print(stderr, "warning [{}]: {}\n", w.code, w.message);
  }
  if (a.profile) {
    fmt::print(stderr, "profile: {} events in {} wall ({} events/s), peak RSS {}\n", r.events, tools::human_seconds(r.wall_s),
               tools::human_count(r.wall_s > 0 ? static_cast<double>(r.events) / r.wall_s : 0.0),
               tools::human_bytes(peak_rss_bytes()));
  }
  return kExitOk;
}

// ---------------------------------------------------------------- check
int cmd_check(const std::string& path, const std::vector<std::string>& sets) {
  const wl::ResolvedScenario sc = [&] {
    try {
      return load(path, sets);
    } catch (const tools::ScenarioError& e) {  // "--set layout.tp=3: ..." rather than "--set:1:8: ..."
      throw tools::ScenarioError(tools::name_set_locations(e.what(), sets));
    }
  }();
  const wl::PlanSummary p = wl::plan(sc);
  const std::string s = tools::format_plan(sc.scenario(), p);
  std::fwrite(s.data(), 1, s.size(), stdout);
  return kExitOk;
}

int cmd_check_trace(const std::string& path) {
  const tools::TraceCheckReport rep = tools::check_trace_file(path);
  if (rep.ok()) {
    fmt::print("{}: ok ({} events: {} slices, {} flows, {} counter samples, {} metadata)\n", path, rep.events, rep.slices, rep.flows,
               rep.counters, rep.metadata);
    return kExitOk;
  }
  const std::size_t show = 50;
  for (std::size_t i = 0; i < rep.violations.size() && i < show; ++i) fmt::print(stderr, "{}: error: {}\n", path, rep.violations[i]);
  if (rep.violation_count() > show) fmt::print(stderr, "{}: ... and {} more\n", path, rep.violation_count() - show);
  fmt::print(stderr, "{}: {} violation{}\n", path, rep.violation_count(), rep.violation_count() == 1 ? "" : "s");
  return kExitInvalid;
}

// ---------------------------------------------------------------- keys
int cmd_keys(bool markdown) {
  if (markdown) {
    const std::string md = wl::scenario_keys_markdown();
    std::fwrite(md.data(), 1, md.size(), stdout);
    return kExitOk;
  }
  for (const auto& k : wl::scenario_keys())
    fmt::print("{:<42} {}\n", k.path, k.default_text.empty() ? "-" : k.default_text);
  return kExitOk;
}

// ---------------------------------------------------------------- sweep
// tools/sweep_command.cpp (points: sweep.hpp; what is shown: sweep_report.hpp).
int cmd_sweep(const tools::SweepCommand& a) {
  one_stdout({{"--csv", &a.csv}, {"--json", &a.json}, {"--plot", &a.plot}});
  const auto mpi = tools::mpi_exchange();  // null unless started by mpirun with N > 1
  try {
    tools::SweepCommand with_ranks = a;
    with_ranks.exchange = mpi.get();
    return tools::run_sweep_command(with_ranks);
  } catch (const tools::SweepUsageError& e) {
    throw UsageError(e.what());
  }
}

// ---------------------------------------------------------------- search
// The search itself: tools/search.hpp. Here: options, outputs, exit code (0 when a
// candidate ran, 1 when none survived pruning).
struct SearchArgs {
  std::string scenario, csv, json, emit, objective = "step_time", shard;
  std::vector<std::string> vary, fix;
  int top = 20, simulate_top = 64, jobs = 0;
  bool quiet = false;
};

int cmd_search(const SearchArgs& a) {
  one_stdout({{"--csv", &a.csv}, {"--json", &a.json}, {"--emit", &a.emit}});
  const wl::ResolvedScenario base = load(a.scenario, {});
  tools::SearchOptions o;
  o.axes = tools::default_axes(base.scenario());
  o.simulate_top = a.simulate_top;
  o.jobs = a.jobs;
  try {
    for (const auto& v : a.vary) tools::apply_axis_option(o.axes, v, false);
    for (const auto& f : a.fix) tools::apply_axis_option(o.axes, f, true);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (a.objective == "cost" && base->training.gpu_hour_price < 0)
    throw UsageError(fmt::format("--objective cost: {} gives no GPU-hour price (add training: {{gpu_hour_price: 2.5 USD}}, "
                                 "optionally tokens: 15T for the cost to train)", a.scenario));
  o.objective = a.objective == "tokens_per_s" ? tools::SearchObjective::tokens_per_s
                : a.objective == "cost"       ? tools::SearchObjective::cost
                                              : tools::SearchObjective::step_time;
  tools::Progress progress({.label = "search: simulating", .unit = "candidates", .enabled = tools::progress_wanted(a.quiet)});
  o.on_simulated = [&](std::size_t done, std::size_t total) { progress.update(done, total); };
  try {
    if (!a.shard.empty()) std::tie(o.shard_index, o.shard_count) = tools::parse_shard(a.shard);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  const auto mpi = tools::mpi_exchange();  // null unless started by mpirun with N > 1
  o.exchange = mpi.get();
  const tools::SearchReport rep = tools::run_search(base, o);
  progress.finish();
  if (mpi && mpi->rank() != 0) return rep.ranked.empty() ? kExitInvalid : kExitOk;  // rank 0 writes
  if (!a.csv.empty()) write_out(a.csv, tools::search_csv(rep));
  if (!a.json.empty()) write_out(a.json, tools::search_json(rep).dump(2) + "\n");
  if (!a.emit.empty() && !rep.ranked.empty())
    write_out(a.emit, tools::emit_scenario_yaml(tools::read_text_file(a.scenario), a.scenario, rep, rep.ranked.front()));
  if (a.csv != "-" && a.json != "-" && a.emit != "-") {
    const std::string s = tools::format_search(rep, a.top);
    std::fwrite(s.data(), 1, s.size(), stdout);
  }
  if (rep.ranked.empty()) {
    fmt::print(stderr, "search: no candidate survived pruning ({} evaluated; see the counts)\n", rep.evaluated);
    return kExitInvalid;
  }
  return kExitOk;
}

// ---------------------------------------------------------------- validate / calibrate
// Runs files: tools/validate.hpp; the shipped set: validation/ (README.md there).
#ifndef LAYOUTSIM_VALIDATION_DIR
#define LAYOUTSIM_VALIDATION_DIR "validation"
#endif
struct ValidateArgs {
  std::vector<std::string> sets;
  std::string json, plot, profile;
  int jobs = 0;
  bool quiet = false;
};

std::vector<tools::RunRow> read_runs(const std::vector<std::string>& files) {
  std::vector<tools::RunRow> rows;
  for (const auto& f : files) {
    auto more = tools::read_runs_file(f);
    rows.insert(rows.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }
  return rows;
}

int cmd_validate(const ValidateArgs& a) {
  one_stdout({{"--json", &a.json}, {"--plot", &a.plot}});
  std::vector<std::string> files = a.sets;
  if (files.empty()) files = {LAYOUTSIM_VALIDATION_DIR "/llm_foundry.yaml", LAYOUTSIM_VALIDATION_DIR "/megatron_bridge.yaml"};
  auto rows = read_runs(files);
  if (!a.profile.empty()) {
    const tools::GpuProfile prof = tools::read_profile_file(a.profile);
    for (auto& row : rows)
      if (row.scenario.gpu.name == prof.gpu) tools::apply_profile(row.scenario.gpu, prof);
  }
  const auto t0 = std::chrono::steady_clock::now();
  tools::Progress progress({.label = "validate", .unit = "runs", .total = rows.size(), .enabled = tools::progress_wanted(a.quiet)});
  const tools::ValidationReport rep =
      tools::summarize(tools::evaluate_runs(rows, a.jobs, {}, [&](std::size_t, std::size_t) { progress.advance(); }));
  progress.finish();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!a.json.empty()) write_out(a.json, tools::validation_json(rep).dump(2) + "\n");
  if (!a.plot.empty()) write_out(a.plot, tools::validation_svg(rep, "layoutsim validate: predicted vs measured step time"));
  if (a.json != "-" && a.plot != "-") {
    const std::string s = tools::format_validation(rep);
    std::fwrite(s.data(), 1, s.size(), stdout);
  }
  fmt::print(stderr, "validate: {} runs simulated in {}\n", rows.size(), tools::human_seconds(wall));
  for (const auto& r : rep.rows)
    if (!r.failure.empty()) fmt::print(stderr, "run {}: {}\n", r.name, r.failure);
  return rep.failed > 0 ? kExitInternal : kExitOk;
}

struct CalibrateArgs {
  std::string runs, gpu, out, json, fit, leave_out;
  int jobs = 0, iterations = 30;
  bool quiet = false;
};

int cmd_calibrate(const CalibrateArgs& a) {
  one_stdout({{"--json", &a.json}, {"--out", &a.out}});
  auto rows = read_runs({a.runs});
  if (!a.gpu.empty()) std::erase_if(rows, [&](const tools::RunRow& r) { return r.scenario.gpu.name != a.gpu; });
  if (rows.empty()) throw std::invalid_argument(fmt::format("calibrate: no runs{} in {}", a.gpu.empty() ? "" : " on GPU " + a.gpu, a.runs));
  std::vector<tools::TunableConstant> constants;
  if (a.fit.empty()) constants = tools::default_fit_constants();
  for (const auto& tc : tools::all_constants())
    if (!a.fit.empty() && ("," + a.fit + ",").find("," + tc.name + ",") != std::string::npos) constants.push_back(tc);
  if (constants.empty()) throw UsageError(fmt::format("--fit '{}': no known constant named", a.fit));
  // The number of simulations depends on the fit's path: a count without a total.
  tools::Progress progress({.label = "calibrate", .unit = "simulations", .enabled = tools::progress_wanted(a.quiet)});
  const tools::Calibration c = tools::calibrate(rows, constants,
                                                {.jobs = a.jobs,
                                                 .max_iterations = a.iterations,
                                                 .leave_out_model = a.leave_out == "model",
                                                 .on_simulation = [&] { progress.advance(); }});
  progress.finish();
  if (!a.json.empty()) write_out(a.json, tools::calibration_json(c).dump(2) + "\n");
  if (!a.out.empty()) {
    const std::string origin = fmt::format(
        "GPU profile fitted by `layoutsim calibrate {}` ({} runs on {}).\nFit: mean |error| {:.1f}%, max {:.1f}%; leave-one-out mean |error| {:.1f}%.\n"
        "Load it with cluster.gpu: {{preset: {}, profile: THIS_FILE}}.",
        a.runs, c.fit.count, c.gpu, 100 * c.fit.mean_abs_error, 100 * c.fit.max_abs_error, 100 * c.loo_mean_abs_error, c.gpu);
    write_out(a.out, tools::profile_yaml(tools::calibration_profile(c), origin));
  }
  if (a.json != "-" && a.out != "-") {
    const std::string s = tools::format_calibration(c, constants);
    std::fwrite(s.data(), 1, s.size(), stdout);
  }
  return kExitOk;
}

// ---------------------------------------------------------------- diff
int cmd_diff(const std::string& path_a, const std::string& path_b, const std::string& json) {
  auto read = [](const std::string& p) {
    try {
      return tools::read_summary(tools::read_text_file(p), p);
    } catch (const tools::DiffInputError& e) {
      throw;
    } catch (const std::exception& e) {
      throw tools::DiffInputError(fmt::format("{}: error: {}", p, e.what()));
    }
  };
  const tools::DiffReport rep = tools::diff_summaries(read(path_a), read(path_b), path_a, path_b);
  if (!json.empty()) write_out(json, tools::diff_json(rep).dump(2) + "\n");
  if (json != "-") {
    const std::string s = tools::format_diff(rep);
    std::fwrite(s.data(), 1, s.size(), stdout);
  }
  return kExitOk;
}

/// Keeps freed memory in the process for reuse. `search` and `sweep` build and drop
/// a program of several MB per candidate. By default glibc hands a freed block above
/// its (dynamic, at most 32 MiB) mmap threshold back to the kernel and trims the heap
/// once twice that is free at its top, so each candidate faulted its pages in anew: on
/// the 2-core machine of README "Performance" (a paravirtualised guest, where a page
/// fault is dear) a quarter of the search's analytic stage was page faults. Blocks
/// below 32 MiB now come from the heap, which keeps up to 256 MiB free at its top
/// (measured there: the GPT-3 scenario's search, analytic stage 28 → 13 s on 2
/// threads; peak RSS 205 → about 280 MiB). Other C libraries keep their defaults.
void keep_freed_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}

}  // namespace

int main(int argc, char** argv) {
  keep_freed_memory();
  // An empty path is a usage error: '' must not silently mean "the default scenario"
  // or "write nothing".
  const CLI::Validator kNonEmptyPath(
      [](std::string& v) { return v.empty() ? std::string("an empty string is not a file name ('-' = stdout/stdin)") : std::string(); },
      "", "non-empty path");
  CLI::App app{"layoutsim — discrete-event simulator of LLM training parallelism layouts on GPU clusters"};
  app.set_version_flag("--version", "layoutsim " LAYOUTSIM_VERSION);
  app.require_subcommand(1);
  app.footer("Run `layoutsim SUBCOMMAND --help` for the options of one command. Exit codes: 0 ok, 1 invalid scenario, 2 usage, 3 internal.");

  RunArgs ra;
  auto* run = app.add_subcommand("run", "Simulate a scenario (the built-in default when none is given) and print a summary");
  run->add_option("scenario", ra.scenario, "Scenario YAML file (default: the built-in scenario)")->check(kNonEmptyPath);
  run->add_option("--set", ra.sets, "Override one key, YAML value: --set layout.tp=4 (repeatable)")
      ->allow_extra_args(false)
      ->type_name("KEY=VALUE");
  run->add_option("--json", ra.json, "Write the JSON summary to FILE ('-' = stdout, replaces the table)")->type_name("FILE")->check(kNonEmptyPath);
  run->add_option("--trace", ra.trace, "Write a Chrome trace (gzip when FILE ends in .gz; '-' = stdout, replaces the table)")->type_name("FILE")->check(kNonEmptyPath);
  run->add_option("--trace-devices", ra.trace_devices,
                  "Devices the trace draws: 'auto' (default: 8 of replica 0, one per stage, every perturbed device and every "
                  "device on the critical path), 'all', or GPU names (node3.gpu5,node0.gpu0)")
      ->delimiter(',')
      ->type_name("LIST|auto|all");
  run->add_option("--chakra", ra.chakra, "Write Chakra execution traces (DIR/<name>.<rank>.et, DIR/<name>.comm_groups.json)")->type_name("DIR")->check(kNonEmptyPath);
  run->add_flag("--quiet,-q", ra.quiet, "Print no summary table");
  run->add_flag("--profile", ra.profile, "Print engine events, events/s, wall time and peak RSS to stderr");

  tools::SweepCommand sa;
  std::vector<std::string> sweep_sets, sweep_mbs;
  auto* sweep = app.add_subcommand("sweep", "Run the cartesian product of value lists in parallel");
  sweep->add_option("scenario", sa.scenario, "Scenario YAML file")->required()->check(kNonEmptyPath);
  auto* mb_opt = sweep->add_option("--microbatches", sweep_mbs, "Micro-batch counts, e.g. 1,2,4,8 (= --set layout.microbatches=LIST)")
                     ->allow_extra_args(false)
                     ->type_name("LIST");
  auto* set_opt = sweep->add_option("--set", sweep_sets, "KEY=V1,V2,...: one swept key (repeatable; lists form a product)")
                      ->allow_extra_args(false)
                      ->type_name("KEY=LIST");
  sweep->add_option("--csv", sa.csv, "Write one CSV row per point ('-' = stdout)")->type_name("FILE")->check(kNonEmptyPath);
  sweep->add_option("--json", sa.json, "Write [{set, summary}] JSON ('-' = stdout)")->type_name("FILE")->check(kNonEmptyPath);
  sweep->add_option("--plot", sa.plot, "Write an SVG plot of step time and bubble fraction ('-' = stdout)")->type_name("FILE.svg")->check(kNonEmptyPath);
  sweep->add_option("--jobs,-j", sa.jobs, "Parallel simulations (default: hardware threads)")->check(CLI::NonNegativeNumber);
  sweep->add_flag("--zip", sa.zip, "Pair the lists' values (point i takes value i of each list) instead of their product");
  sweep->add_option("--sort", sa.select.sort_key,
                    "Order the rows: step_time, tokens_per_s, mfu, bubble, peak_memory, time_to_train, gpu_hours, cost (best first) or a swept key")
      ->type_name("KEY");
  sweep->add_flag("--fits-only", sa.select.fits_only, "Keep only the points that fit in memory");
  sweep->add_option("--top", sa.select.top, "Keep the first N rows (after --sort)")->type_name("N")->check(CLI::PositiveNumber);
  sweep->add_option("--shard", sa.shard, "Run only the points with index mod N == I (job arrays; --json marks each point for --merge)")->type_name("I/N");
  sweep->add_option("--merge", sa.merge, "Combine the shards' --json files (same lists) instead of simulating")
      ->type_name("FILE")
      ->check(kNonEmptyPath);
  sweep->add_flag("--quiet,-q", sa.quiet, "No progress line on stderr");

  SearchArgs sra;
  auto* search = app.add_subcommand("search", "Search the layouts of a scenario's cluster, model and global batch for the fastest");
  search->add_option("scenario", sra.scenario, "Scenario YAML file (cluster, model, global batch)")->required()->check(kNonEmptyPath);
  search->add_option("--vary", sra.vary, "KEY=V1,V2,...: the values of one axis (repeatable; keys: tp pp dp ep cp zero sp recompute mbs schedule v stage_layers placement)")
      ->allow_extra_args(false)->type_name("KEY=LIST");
  search->add_option("--fix", sra.fix, "KEY=V: pin one axis (repeatable)")->allow_extra_args(false)->type_name("KEY=VALUE");
  search->add_option("--top", sra.top, "Rows of the printed table (default 20)")->check(CLI::NonNegativeNumber);
  search->add_option("--simulate-top", sra.simulate_top, "Simulate the best K by the analytic estimate (default 64)")->check(CLI::NonNegativeNumber);
  search->add_option("--objective", sra.objective, "Rank by step_time (default), tokens_per_s or cost")
      ->check(CLI::IsMember({"step_time", "tokens_per_s", "cost"}));
  search->add_option("--csv", sra.csv, "Write one CSV row per candidate ('-' = stdout)")->type_name("FILE")->check(kNonEmptyPath);
  search->add_option("--json", sra.json, "Write {candidates, pareto, counts, wall_s} JSON ('-' = stdout)")->type_name("FILE")->check(kNonEmptyPath);
  search->add_option("--emit", sra.emit, "Write the winner as a runnable scenario file")->type_name("BEST.yaml")->check(kNonEmptyPath);
  search->add_option("--jobs,-j", sra.jobs, "Parallel threads (default: hardware threads)")->check(CLI::NonNegativeNumber);
  search->add_option("--shard", sra.shard, "Evaluate only candidates with index mod N == I (job arrays)")->type_name("I/N");
  search->add_flag("--quiet,-q", sra.quiet, "No progress line on stderr");

  std::string check_path;
  std::vector<std::string> check_sets;
  auto* check = app.add_subcommand("check", "Parse and validate a scenario, print the plan and memory budget (no simulation)");
  check->add_option("scenario", check_path, "Scenario YAML file")->required()->check(kNonEmptyPath);
  check->add_option("--set", check_sets, "Override one key, YAML value: --set layout.tp=4 (repeatable)")
      ->allow_extra_args(false)
      ->type_name("KEY=VALUE");

  bool keys_markdown = false;
  auto* keys = app.add_subcommand("keys", "List every scenario key with its default (the key table)");
  keys->add_flag("--markdown", keys_markdown, "Print the README's scenario reference tables");

  std::string reshard_from, reshard_to, reshard_json;
  auto* reshard = app.add_subcommand("reshard", "Price moving a sharded checkpoint from one layout of a model to another");
  reshard->add_option("from", reshard_from, "Scenario the checkpoint was written under")->required()->check(kNonEmptyPath);
  reshard->add_option("to", reshard_to, "Scenario to restore it under")->required()->check(kNonEmptyPath);
  reshard->add_option("--json", reshard_json, "Write the JSON plan to FILE ('-' = stdout, replaces the table)")->type_name("FILE")->check(kNonEmptyPath);

  std::string trace_path;
  auto* check_trace = app.add_subcommand("check-trace", "Check a Chrome trace (.json or .json.gz) against Perfetto's import rules");
  check_trace->add_option("trace", trace_path, "Trace file ('-' = stdin)")->required()->check(kNonEmptyPath);

  ValidateArgs va;
  auto* validate = app.add_subcommand("validate", "Simulate published measurements (runs files; default: the shipped validation set) and report the errors");
  validate->add_option("runs", va.sets, "Runs YAML files (default: " LAYOUTSIM_VALIDATION_DIR "/llm_foundry.yaml and megatron_bridge.yaml)")->check(kNonEmptyPath);
  validate->add_option("--json", va.json, "Write {rows, mean_abs_error, max_abs_error, groups} JSON ('-' = stdout)")->type_name("FILE")->check(kNonEmptyPath);
  validate->add_option("--plot", va.plot, "Write an SVG of predicted vs measured step time (log-log; '-' = stdout)")->type_name("FILE.svg")->check(kNonEmptyPath);
  validate->add_option("--profile", va.profile, "Apply a GPU profile (from calibrate --out) to the runs on its GPU")->type_name("PROFILE.yaml")->check(kNonEmptyPath);
  validate->add_option("--jobs,-j", va.jobs, "Parallel simulations (default: hardware threads)")->check(CLI::NonNegativeNumber);
  validate->add_flag("--quiet,-q", va.quiet, "No progress line on stderr");

  CalibrateArgs ca;
  auto* calibrate = app.add_subcommand("calibrate", "Fit a GPU's efficiency constants to the measured step times of a runs file");
  calibrate->add_option("runs", ca.runs, "Runs YAML file")->required()->check(kNonEmptyPath);
  calibrate->add_option("--gpu", ca.gpu, "Fit only the runs on this GPU (required when the file mixes GPUs)")->type_name("NAME");
  calibrate->add_option("--fit", ca.fit, "Constants to fit, comma-separated (default: all)")->type_name("LIST");
  calibrate->add_option("--out", ca.out, "Write the fitted profile YAML ('-' = stdout)")->type_name("PROFILE.yaml")->check(kNonEmptyPath);
  calibrate->add_option("--json", ca.json, "Write {gpu, constants, fit, leave_one_out} JSON ('-' = stdout)")->type_name("FILE")->check(kNonEmptyPath);
  calibrate->add_option("--leave-out", ca.leave_out,
                        "'model': also refit without each model's rows and report that model's error (leave-one-model-out)")
      ->type_name("model")
      ->check(CLI::IsMember({"model"}));
  calibrate->add_option("--iterations", ca.iterations, "Most Levenberg-Marquardt iterations")->check(CLI::PositiveNumber);
  calibrate->add_option("--jobs,-j", ca.jobs, "Parallel simulations (default: hardware threads)")->check(CLI::NonNegativeNumber);
  calibrate->add_flag("--quiet,-q", ca.quiet, "No progress line on stderr");

  std::string diff_a, diff_b, diff_json_path;
  auto* diff = app.add_subcommand("diff", "Compare two run summaries (run --json) side by side, with the change in percent");
  diff->add_option("a", diff_a, "First summary JSON (A)")->required()->check(kNonEmptyPath);
  diff->add_option("b", diff_b, "Second summary JSON (B)")->required()->check(kNonEmptyPath);
  diff->add_option("--json", diff_json_path, "Write {a, b, rows: [{section, label, path, unit, a, b, change}]} ('-' = stdout, replaces the table)")
      ->type_name("FILE")
      ->check(kNonEmptyPath);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }

  // Runs the chosen command, then flushes stdout: a closed or full stdout is an I/O
  // error (exit 1), not a silent success.
  auto finish = [](int rc) {
    tools::flush_stdout();
    return rc;
  };
  try {
    if (*run) return finish(cmd_run(ra));
    if (*check) return finish(cmd_check(check_path, check_sets));
    if (*diff) return finish(cmd_diff(diff_a, diff_b, diff_json_path));
    if (*check_trace) return finish(cmd_check_trace(trace_path));
    if (*reshard) return finish(tools::reshard_command(reshard_from, reshard_to, reshard_json));
    if (*validate) return finish(cmd_validate(va));
    if (*calibrate) return finish(cmd_calibrate(ca));
    if (*keys) return finish(cmd_keys(keys_markdown));
    if (*search) return finish(cmd_search(sra));
    if (*sweep) {
      // Axes in command-line order, interleaving --microbatches and --set as given.
      // A malformed list is a usage error (2), not an invalid scenario (1).
      std::size_t mi = 0, si = 0;
      try {
        for (const CLI::Option* o : sweep->parse_order()) {
          if (o == mb_opt && mi < sweep_mbs.size()) {
            sa.axes.push_back(tools::parse_sweep_set("layout.microbatches=" + sweep_mbs[mi++]));
          } else if (o == set_opt && si < sweep_sets.size()) {
            sa.axes.push_back(tools::parse_sweep_set(sweep_sets[si++]));
          }
        }
      } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
      }
      return finish(cmd_sweep(sa));
    }
  } catch (const UsageError& e) {
    fmt::print(stderr, "error: {}\nRun with --help for more information.\n", e.what());
    return kExitUsage;
  } catch (const tools::RunsFileError& e) {  // validate / calibrate input
    std::string msg = e.what();
    if (!msg.empty() && msg.back() != '\n') msg.push_back('\n');
    std::fputs(msg.c_str(), stderr);
    return kExitInvalid;
  } catch (const tools::DiffInputError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return kExitInvalid;
  } catch (const tools::ProfileError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return kExitInvalid;
  } catch (const tools::ScenarioError& e) {
    std::string msg = e.what();
    if (!msg.empty() && msg.back() != '\n') msg.push_back('\n');
    std::fputs(msg.c_str(), stderr);
    return kExitInvalid;
  } catch (const wl::InvalidScenario& e) {
    for (const auto& issue : e.issues())
      fmt::print(stderr, "error: {}{}{}\n", issue.key_path.empty() ? "" : issue.key_path + ": ", issue.message,
                 issue.hint.empty() ? "" : " (" + issue.hint + ")");
    return kExitInvalid;
  } catch (const tools::IoError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return kExitInvalid;
  } catch (const sim::TimeRangeError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return kExitInvalid;
  } catch (const tools::OutputInvariantError& e) {
    fmt::print(stderr, "internal error: {}\n", e.what());
    return kExitInternal;
  } catch (const std::exception& e) {
    fmt::print(stderr, "internal error: {}\n", e.what());
    return kExitInternal;
  } catch (...) {
    fmt::print(stderr, "internal error: unknown exception\n");
    return kExitInternal;
  }
  return kExitUsage;
}
