// tools/sweep_command.cpp — `layoutsim sweep`: run the points, write the outputs,
// report the failed points (see sweep_command.hpp).
#include "tools/sweep_command.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <tuple>

#include <fmt/format.h>

#include "sim/time.hpp"
#include "tools/atomic_file.hpp"
#include "tools/output_check.hpp"
#include "tools/progress.hpp"
#include "tools/report_json.hpp"
#include "tools/scenario.hpp"
#include "tools/sweep_shard.hpp"
#include "workloads/resolve.hpp"
#include "workloads/simulate.hpp"

namespace ls::tools {

namespace {
constexpr int kSweepExitOk = 0, kSweepExitInvalid = 1, kSweepExitInternal = 3;
}  // namespace

int run_sweep_command(const SweepCommand& a) {
  if (a.axes.empty()) throw SweepUsageError("sweep: give at least one --microbatches LIST or --set KEY=V1,V2,...");
  const auto keys = sweep_keys(a.axes);
  std::vector<SweepPoint> points;
  try {
    if (!a.select.sort_key.empty()) check_sort_key(a.select.sort_key, keys);
    points = a.zip ? zip_sweep(a.axes) : expand_sweep(a.axes);
  } catch (const std::invalid_argument& e) {
    throw SweepUsageError(e.what());
  }
  if (!a.merge.empty() && !a.shard.empty()) throw SweepUsageError("sweep: --merge combines the shards; give it without --shard");
  int shard_index = 0, shard_count = 1;
  if (!a.shard.empty()) {
    try {
      std::tie(shard_index, shard_count) = parse_shard(a.shard);
    } catch (const std::invalid_argument& e) {
      throw SweepUsageError(e.what());
    }
  }
  const bool writer = !a.exchange || a.exchange->rank() == 0;  // under MPI, rank 0 writes
  std::vector<SweepOutcome> outcomes;
  if (!a.merge.empty()) {
    try {
      outcomes = merge_shard_files(points, a.merge);
    } catch (const std::invalid_argument& e) {
      throw SweepUsageError(e.what());
    }
  } else {
    const auto which = shard_points(points.size(), shard_index, shard_count);
    const std::size_t ranks = a.exchange ? static_cast<std::size_t>(a.exchange->size()) : 1;
    const std::size_t me = a.exchange ? static_cast<std::size_t>(a.exchange->rank()) : 0;
    Progress progress({.label = "sweep", .unit = "points", .total = which.size() / ranks + (me < which.size() % ranks ? 1 : 0),
                       .enabled = writer && progress_wanted(a.quiet)});
    outcomes = run_points(
        points, which,
        [&](const SweepPoint& p) {
          const auto sets = point_sets(p);
          try {
            const wl::ResolvedScenario sc = load_scenario_file(a.scenario, sets);
            wl::Result r = wl::simulate(sc);
            check_summary_numbers(to_json(r));  // the post-condition of `run`, per point
            return r;
          } catch (const ScenarioError& e) {  // name the --set behind each error, not its index in the point
            throw ScenarioError(name_set_locations(e.what(), sets));
          }
        },
        a.jobs, a.exchange, [&](std::size_t, std::size_t) { progress.advance(); });
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
  const int status = internal > 0 ? kSweepExitInternal : ran > 0 ? kSweepExitOk : kSweepExitInvalid;
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
    const std::string t = format_sweep_table(keys, shown);
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

}  // namespace ls::tools
