// tools/cli/cmd_search.cpp — `layoutsim search`: rank the layouts of a scenario's
// cluster, model and global batch (the search itself: tools/study/search.hpp). Here:
// options, outputs, exit code (0 when a candidate ran, 1 when none survived pruning).
#include <memory>
#include <mutex>
#include <tuple>

#include <fmt/format.h>

#include "tools/api/layoutsim.hpp"
#include "tools/cli/command.hpp"
#include "tools/cli/mpi_shard.hpp"
#include "tools/report/progress.hpp"
#include "tools/report/trace.hpp"
#include "tools/study/search.hpp"

namespace ls::cli {

namespace {

struct SearchArgs {
  std::string scenario, csv, json, emit, html, objective = "step_time", shard;
  std::vector<std::string> vary, fix;
  int top = 20, simulate_top = 64, jobs = 0;
  bool quiet = false;
  bool no_remedies = false;
  bool explain = false;
  bool whole_space = false;
};

/// `--whole-space`: the axes a default search keeps short, opened to every value (the
/// user's own --vary/--fix, applied after, still narrow them).
const std::vector<std::string> kWholeSpace = {"v=all", "mbs=all", "tp_overlap=false,true", "dp_overlap=true,false"};

int run(const SearchArgs& a) {
  check_outputs({{"--csv", &a.csv}, {"--json", &a.json}, {"--emit", &a.emit}, {"--html", &a.html}}, {{"scenario", &a.scenario}});
  for (const std::string* out : {&a.csv, &a.json, &a.emit, &a.html})
    if (a.explain && *out == "-") throw UsageError("--explain writes to stdout: give the other outputs a file name");
  const tools::SearchBase start = api::ScenarioSource::file(a.scenario).resolve_search_base();
  if (!start.layout_note.empty() && !a.quiet) fmt::print(stderr, "search: note: {}\n", start.layout_note);
  const api::ResolvedScenario& base = start.scenario;
  std::vector<std::string> vary = a.whole_space ? kWholeSpace : std::vector<std::string>{};
  vary.insert(vary.end(), a.vary.begin(), a.vary.end());
  api::SearchOptions o = api::search_options(base, vary, a.fix, a.objective, a.scenario);
  o.global_batch = start.global_batch;
  o.simulate_top = a.simulate_top;
  o.remedies = !a.no_remedies;
  o.jobs = a.jobs;
  // Two stages on one line, each with its own clock: the analytic estimate of every
  // candidate, then the simulation of the best.
  tools::Progress progress({.label = "search: analytic", .unit = "candidates", .enabled = tools::progress_wanted(a.quiet)});
  std::once_flag simulating;  // on_simulated runs on the search's worker threads
  o.on_analyzed = [&](std::size_t done, std::size_t total) { progress.update(done, total); };
  o.on_simulated = [&](std::size_t done, std::size_t total) {
    std::call_once(simulating, [&] { progress.stage("search: simulating", "candidates", total); });
    progress.update(done, total);
  };
  try {
    if (!a.shard.empty()) std::tie(o.shard_index, o.shard_count) = tools::parse_shard(a.shard);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  const auto mpi = tools::mpi_exchange();  // null unless started by mpirun with N > 1
  o.exchange = mpi.get();
  const api::SearchReport rep = api::search(base, o);
  progress.finish();
  if (mpi && mpi->rank() != 0) return rep.ranked.empty() ? kExitInvalid : kExitOk;  // rank 0 writes
  if (!a.csv.empty()) write_out(a.csv, api::search_csv(rep));
  if (!a.json.empty()) write_out(a.json, api::search_json(rep).dump(2) + "\n");
  if (!a.html.empty()) write_out(a.html, tools::search_html_report(rep, a.top));
  if (!a.emit.empty() && !rep.ranked.empty())
    write_out(a.emit, tools::emit_scenario_yaml(tools::read_text_file(a.scenario), a.scenario, rep, rep.ranked.front()));
  if (a.explain) {
    // The explanation alone, in place of the table.
    const std::string why = tools::explain_winner(rep);
    print_out(why.empty() ? std::string("search: nothing to explain: fewer than two layouts with different degrees were simulated\n")
                          : why.substr(why.find_first_not_of('\n')));
  } else if (a.csv != "-" && a.json != "-" && a.emit != "-" && a.html != "-") {
    print_out(api::search_text(rep, a.top));
  }
  if (rep.ranked.empty()) {
    fmt::print(stderr, "search: no candidate survived pruning ({} evaluated; see the counts)\n", rep.evaluated);
    return kExitInvalid;
  }
  return kExitOk;
}

}  // namespace

Subcommand add_search(CLI::App& parent) {
  auto a = std::make_shared<SearchArgs>();
  auto* cmd = parent.add_subcommand("search", "Search the layouts of a scenario's cluster, model and global batch for the fastest");
  cmd->add_option("scenario", a->scenario, "Scenario YAML file (cluster, model, global batch)")->required()->check(non_empty_path());
  cmd->add_option("--vary", a->vary, "KEY=V1,V2,...: the values of one axis (repeatable; keys: tp pp dp ep cp zero sp recompute mbs schedule v stage_layers placement "
                  "global_batch tp_overlap dp_overlap; mbs=all and v=all: every divisor)")
      ->allow_extra_args(false)
      ->type_name("KEY=LIST");
  cmd->add_option("--fix", a->fix, "KEY=V: pin one axis (repeatable)")->allow_extra_args(false)->type_name("KEY=VALUE");
  cmd->add_option("--top", a->top, "Rows of the printed table (default 20)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--simulate-top", a->simulate_top, "Simulate the best K by the analytic estimate (default 64)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--objective", a->objective, "Rank by step_time (default), tokens_per_s or cost")
      ->check(CLI::IsMember({"step_time", "tokens_per_s", "cost"}));
  cmd->add_flag("--explain", a->explain,
                "Print only why the winner beats the best layout of other degrees (compute, bubble, exposed communication by "
                "axis, memory), in place of the table");
  cmd->add_flag("--whole-space", a->whole_space,
                "Every interleaving dividing a stage's layers, every micro-batch size dividing a rank's batch, TP comm overlap off "
                "and on, gradient reduction beside and after the backward (several times the default space)");
  cmd->add_flag("--no-remedies", a->no_remedies,
                "Leave out the remedy candidates (a layout that does not fit, with the out-of-memory warning's HSDP or offload remedy)");
  cmd->add_option("--csv", a->csv, "Write one CSV row per candidate ('-' = stdout)")->type_name("FILE")->check(non_empty_path());
  cmd->add_option("--json", a->json, "Write {candidates, pareto, counts, wall_s} JSON ('-' = stdout)")->type_name("FILE")->check(non_empty_path());
  cmd->add_option("--html", a->html, "Write a self-contained HTML report: the ranking, why the winner wins, step time vs memory ('-' = stdout)")
      ->type_name("FILE")
      ->check(non_empty_path());
  cmd->add_option("--emit", a->emit, "Write the winner as a runnable scenario file")->type_name("BEST.yaml")->check(non_empty_path());
  cmd->add_option("--jobs,-j", a->jobs, "Parallel threads (default: hardware threads)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--shard", a->shard, "Evaluate only candidates with index mod N == I (job arrays)")->type_name("I/N");
  cmd->add_flag("--quiet,-q", a->quiet, "No progress line on stderr");
  return {cmd, [a] { return run(*a); }};
}

}  // namespace ls::cli
