// tools/cli/cmd_sweep.cpp — `layoutsim sweep`: expand the lists (product or --zip), run
// the points in parallel with a progress line, select (--fits-only, --sort, --top),
// write the table / CSV / JSON / plot, and report failed points.
//
// Split over processes (tools/study/sweep_shard.hpp): `--shard I/N` runs the points
// i mod N == I and writes them (its --json marks each entry with its point index);
// `--merge FILES` reads those files back and writes what the single run writes; under
// `mpirun -np N` the ranks split the points and rank 0 writes.
//
// Exit status: 0 when some point ran (an invalid point is an answer: a row with its
// reason), 1 when none did, 3 when a point hit an internal error. At most 20 error
// lines go to stderr; every point's reason is in its row.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <tuple>

#include <fmt/format.h>

#include "tools/cli/command.hpp"
#include "tools/cli/mpi_shard.hpp"
#include "tools/report/atomic_file.hpp"
#include "tools/report/progress.hpp"
#include "tools/scenario/scenario.hpp"
#include "tools/study/search.hpp"
#include "tools/study/sweep.hpp"
#include "tools/study/sweep_report.hpp"
#include "tools/study/sweep_shard.hpp"

namespace ls::cli {

namespace {

struct SweepArgs {
  std::string scenario;
  std::vector<tools::SweepAxis> axes;  // filled from --microbatches and --set in command-line order
  std::string csv, json, plot;         // "" = none, "-" = stdout
  tools::SweepSelection select;
  bool zip = false, quiet = false;
  int jobs = 0;
  std::string shard;               // "I/N" (job arrays), "" = every point
  std::vector<std::string> merge;  // shards' --json files: merge instead of simulating
  std::vector<std::string> sets, microbatches;  // as given, before parsing
};

int run(const SweepArgs& a) {
  using namespace tools;
  std::vector<NamedPath> inputs{{"scenario", &a.scenario}};
  for (const auto& m : a.merge) inputs.emplace_back("--merge", &m);
  check_outputs({{"--csv", &a.csv}, {"--json", &a.json}, {"--plot", &a.plot}}, inputs);
  const auto mpi = mpi_exchange();  // null unless started by mpirun with N > 1
  SearchExchange* const exchange = mpi.get();
  if (a.axes.empty()) throw UsageError("sweep: give at least one --microbatches LIST or --set KEY=V1,V2,...");
  const auto keys = sweep_keys(a.axes);
  std::vector<SweepPoint> points;
  try {
    if (!a.select.sort_key.empty()) check_sort_key(a.select.sort_key, keys);
    points = a.zip ? zip_sweep(a.axes) : expand_sweep(a.axes);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (!a.merge.empty() && !a.shard.empty()) throw UsageError("sweep: --merge combines the shards; give it without --shard");
  int shard_index = 0, shard_count = 1;
  if (!a.shard.empty()) {
    try {
      std::tie(shard_index, shard_count) = parse_shard(a.shard);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  const bool writer = !exchange || exchange->rank() == 0;  // under MPI, rank 0 writes
  std::vector<SweepOutcome> outcomes;
  if (!a.merge.empty()) {
    try {
      outcomes = merge_shard_files(points, a.merge);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  } else {
    const auto which = shard_points(points.size(), shard_index, shard_count);
    const std::size_t ranks = exchange ? static_cast<std::size_t>(exchange->size()) : 1;
    const std::size_t me = exchange ? static_cast<std::size_t>(exchange->rank()) : 0;
    Progress progress({.label = "sweep", .unit = "points", .total = which.size() / ranks + (me < which.size() % ranks ? 1 : 0),
                       .enabled = writer && progress_wanted(a.quiet)});
    outcomes = run_points(
        points, which,
        [&](const SweepPoint& p) {
          const auto sets = point_sets(p);
          try {
            // api::simulate checks each point's numbers as `run` does.
            return api::simulate(api::ScenarioSource::file(a.scenario).resolve_sets(sets));
          } catch (const ScenarioError& e) {  // name the --set behind each error, not its index in the point
            throw ScenarioError(name_set_locations(e.what(), sets));
          }
        },
        a.jobs, exchange, [&](std::size_t, std::size_t, std::size_t) { progress.advance(); });
    progress.finish();
  }

  std::string title;  // the scenario's name, from any point that loaded
  for (const auto& o : outcomes)
    if (o.result && title.empty()) title = o.result->scenario;
  if (title.empty()) title = std::filesystem::path(a.scenario).stem().string();
  std::size_t ran = 0, internal = 0;
  for (const auto& o : outcomes) {
    if (!o.error) ++ran;
    else if (internal_error(o)) ++internal;
  }
  const int status = internal > 0 ? kExitInternal : ran > 0 ? kExitOk : kExitInvalid;
  if (!writer) return status;  // every rank holds every outcome; one writes them

  const auto shown = select_points(outcomes, a.select);
  if (!a.csv.empty()) write_output(a.csv, sweep_csv(keys, shown));
  if (!a.json.empty()) write_output(a.json, sweep_json(shown, !a.shard.empty()).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
  if (!a.plot.empty()) {
    std::vector<SweepOutcome> in_order = shown;  // the plot's x follows the sweep, whatever --sort says
    std::stable_sort(in_order.begin(), in_order.end(), [](const auto& x, const auto& y) { return x.index < y.index; });
    if (!in_order.empty())
      write_output(a.plot, render_svg(sweep_plot(fmt::format("layoutsim sweep: {}", title), a.axes, in_order)));
  }
  if (a.csv != "-" && a.json != "-" && a.plot != "-") {  // without machine outputs on stdout, a table there
    std::string t = format_sweep_table(keys, shown);
    // The knee reads every point that ran, whatever --top or --fits-only kept in the table.
    if (const std::string knee = sweep_knee(keys, outcomes); !knee.empty()) t += "\n" + knee + "\n";
    std::fwrite(t.data(), 1, t.size(), stdout);
  }

  // Failed points: the first errors on stderr (every point's reason is in the table,
  // CSV and JSON), classified: invalid layouts are answers, anything else is a bug.
  constexpr std::size_t kMaxErrorLines = 20;
  std::size_t lines = 0;
  const std::size_t failed = outcomes.size() - ran;
  for (const auto& o : outcomes) {
    if (!o.error) continue;
    const bool user_error = !internal_error(o);
    std::string where;
    for (const auto& s : point_sets(o.point)) where += (where.empty() ? "" : " ") + s;
    const std::string text = fmt::format("sweep point [{}]: {}{}", where, user_error ? "" : "internal error: ", o.error_message);
    for (std::size_t at = 0; at <= text.size() && lines < kMaxErrorLines;) {
      const auto nl = text.find('\n', at);
      fmt::print(stderr, "{}\n", text.substr(at, nl == std::string::npos ? std::string::npos : nl - at));
      ++lines;
      if (nl == std::string::npos) break;
      at = nl + 1;
    }
  }
  if (failed > 0)
    fmt::print(stderr, "sweep: {} of {} points ran; {} invalid{}{}\n", ran, outcomes.size(), failed - internal,
               internal ? fmt::format(", {} internal errors", internal) : "", lines >= kMaxErrorLines ? " (first errors above; each point's reason is in its row)" : "");
  return status;
}


}  // namespace

Subcommand add_sweep(CLI::App& parent) {
  auto a = std::make_shared<SweepArgs>();
  auto* cmd = parent.add_subcommand("sweep", "Run the cartesian product of value lists in parallel");
  cmd->add_option("scenario", a->scenario, "Scenario YAML file")->required()->check(non_empty_path());
  auto* mb_opt = cmd->add_option("--microbatches", a->microbatches, "Micro-batch counts, e.g. 1,2,4,8 (= --set layout.microbatches=LIST)")
                     ->allow_extra_args(false)
                     ->type_name("LIST");
  auto* set_opt = cmd->add_option("--set", a->sets, "KEY=V1,V2,...: one swept key (repeatable; lists form a product)")
                      ->allow_extra_args(false)
                      ->type_name("KEY=LIST");
  cmd->add_option("--csv", a->csv, "Write one CSV row per point ('-' = stdout)")->type_name("FILE")->check(non_empty_path());
  cmd->add_option("--json", a->json, "Write [{set, summary}] JSON ('-' = stdout)")->type_name("FILE")->check(non_empty_path());
  cmd->add_option("--plot", a->plot, "Write an SVG plot of step time and bubble fraction ('-' = stdout)")->type_name("FILE.svg")->check(non_empty_path());
  cmd->add_option("--jobs,-j", a->jobs, "Parallel simulations (default: hardware threads)")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--zip", a->zip, "Pair the lists' values (point i takes value i of each list) instead of their product");
  cmd->add_option("--sort", a->select.sort_key,
                  "Order the rows: step_time, tokens_per_s, mfu, bubble, peak_memory, time_to_train, gpu_hours, cost (best first) or a swept key")
      ->type_name("KEY");
  cmd->add_flag("--fits-only", a->select.fits_only, "Keep only the points that fit in memory");
  cmd->add_option("--top", a->select.top, "Keep the first N rows (after --sort)")->type_name("N")->check(CLI::PositiveNumber);
  cmd->add_option("--shard", a->shard, "Run only the points with index mod N == I (job arrays; --json marks each point for --merge)")->type_name("I/N");
  cmd->add_option("--merge", a->merge, "Combine the shards' --json files (same lists) instead of simulating")
      ->type_name("FILE")
      ->check(non_empty_path());
  cmd->add_flag("--quiet,-q", a->quiet, "No progress line on stderr");
  return {cmd, [a, cmd, mb_opt, set_opt] {
            // Axes in command-line order, interleaving --microbatches and --set as given.
            // A malformed list is a usage error (2), not an invalid scenario (1).
            std::size_t mi = 0, si = 0;
            try {
              for (const CLI::Option* o : cmd->parse_order()) {
                if (o == mb_opt && mi < a->microbatches.size()) {
                  a->axes.push_back(tools::parse_sweep_set("layout.microbatches=" + a->microbatches[mi++]));
                } else if (o == set_opt && si < a->sets.size()) {
                  a->axes.push_back(tools::parse_sweep_set(a->sets[si++]));
                }
              }
            } catch (const std::invalid_argument& e) {
              throw UsageError(e.what());
            }
            return run(*a);
          }};
}

}  // namespace ls::cli
