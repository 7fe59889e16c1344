// tools/cli/cmd_run.cpp — `layoutsim run`: simulate one scenario (the built-in default
// when none is given) and write the summary table, JSON, Chrome trace or Chakra traces.
#include <chrono>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "tools/cli/command.hpp"
#include "tools/report/chakra_export.hpp"
#include "tools/report/html_report.hpp"
#include "tools/report/human_units.hpp"
#include "tools/report/progress.hpp"
#include "tools/report/report_json.hpp"
#include "tools/report/summary.hpp"
#include "tools/report/trace.hpp"
#include "workloads/build/program_builder.hpp"

namespace ls::cli {

namespace {

struct RunArgs {
  std::string scenario;
  std::vector<std::string> sets;
  std::string json, trace;
  std::string html;                        // --html FILE
  std::string chakra;                      // --chakra DIR
  std::vector<std::string> trace_devices;  // --trace-devices LIST | auto | all
  bool chakra_nominal = false;             // --chakra-nominal
  bool split = false;                      // --split
  bool quiet = false, timing = false;
};

int run(const RunArgs& a) {
  check_outputs({{"--json", &a.json}, {"--trace", &a.trace}, {"--html", &a.html}}, {{"scenario", &a.scenario}});
  const api::ResolvedScenario sc = scenario_source(a.scenario).resolve_sets(a.sets);
  api::SimOptions opt;
  opt.trace = !a.trace.empty() || !a.html.empty();  // the HTML report draws the trace's spans
  opt.trace_devices = a.trace_devices;
  opt.step_split = a.split;
  const auto t0 = std::chrono::steady_clock::now();
  // A run that lasts more than a couple of seconds shows that it is alive (stderr, terminal only).
  tools::Progress progress({.label = "run " + sc->name, .enabled = tools::progress_wanted(a.quiet), .min_interval_s = 0.5, .delay_s = 2,
                            .heartbeat_s = 0.5});
  // api::simulate checks the summary's numbers (no negative, NaN or infinite value, no
  // fraction above 1) before anything is written: a violation is an internal error.
  api::Result r = api::simulate(sc, opt);
  progress.finish();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (r.wall_s <= 0) r.wall_s = wall;

  if (!a.json.empty()) write_out(a.json, tools::to_json_string(r, {.include_wall_time = a.timing}));
  if (!a.trace.empty()) write_out(a.trace, tools::chrome_trace_json(r));
  if (!a.html.empty()) write_out(a.html, tools::run_html_report(r));
  tools::ChakraExportSummary chakra;
  if (!a.chakra.empty()) {  // the program just simulated, as Chakra ETs; a DIR we cannot write is a user error
    try {
      // By default the compute nodes carry the durations the run simulated (slowdowns and
      // the compute beside communication), so a replay reproduces the reported step.
      const std::vector<double> factors = a.chakra_nominal ? std::vector<double>{} : r.compute_factors;
      chakra = tools::write_chakra_traces(wl::build_program(sc).program, sc->name, a.chakra, factors);
    } catch (const tools::ChakraWriteError& e) {
      throw UserError(fmt::format("--chakra {}: {}", a.chakra, e.what()));
    }
  }
  const bool table = !a.quiet && a.json != "-" && a.trace != "-" && a.html != "-";
  if (table) {
    print_out(tools::format_summary(r));
    if (!a.trace.empty()) print_out(fmt::format("\nTrace written to {} (open it at https://ui.perfetto.dev)\n", a.trace));
    if (!a.html.empty() && a.html != "-") print_out(fmt::format("\nReport written to {} (open it in a browser)\n", a.html));
    if (!a.chakra.empty())
      print_out(fmt::format("\nChakra traces written to {} ({} files, {} nodes; ASTRA-sim workload prefix {}/{})\n", a.chakra,
                            chakra.files, chakra.nodes, a.chakra, tools::chakra_file_stem(sc->name)));
  } else if (!a.quiet) {
    for (const auto& w : r.warnings) fmt::print(stderr, "warning [{}]: {}\n", w.code, w.message);
  }
  if (a.timing) {
    fmt::print(stderr, "profile: {} events in {} wall ({} events/s), peak RSS {}\n", r.events, tools::human_seconds(r.wall_s),
               tools::human_count(r.wall_s > 0 ? static_cast<double>(r.events) / r.wall_s : 0.0),
               tools::human_bytes(peak_rss_bytes()));
  }
  return kExitOk;
}

}  // namespace

Subcommand add_run(CLI::App& parent) {
  auto a = std::make_shared<RunArgs>();
  auto* cmd = parent.add_subcommand("run", "Simulate a scenario (the built-in default when none is given) and print a summary");
  cmd->add_option("scenario", a->scenario, "Scenario YAML file (default: the built-in scenario)")->check(non_empty_path());
  cmd->add_option("--set", a->sets, "Override one key, YAML value: --set layout.tp=4 (repeatable)")
      ->allow_extra_args(false)
      ->type_name("KEY=VALUE");
  cmd->add_option("--json", a->json, "Write the JSON summary to FILE ('-' = stdout, replaces the table)")->type_name("FILE")->check(non_empty_path());
  cmd->add_option("--trace", a->trace, "Write a Chrome trace (gzip when FILE ends in .gz; '-' = stdout, replaces the table)")
      ->type_name("FILE")
      ->check(non_empty_path());
  cmd->add_option("--trace-devices", a->trace_devices,
                  "Devices the trace draws: 'auto' (default: 8 of replica 0, one per stage, every perturbed device and every "
                  "device on the critical path), 'all', or GPU names (node3.gpu5,node0.gpu0)")
      ->delimiter(',')
      ->allow_extra_args(false)  // one comma list per flag: the scenario after it stays the scenario
      ->type_name("LIST|auto|all");
  cmd->add_option("--html", a->html,
                  "Write a self-contained HTML report: summary, timeline of one step, memory, links, warnings ('-' = stdout, "
                  "replaces the table)")
      ->type_name("FILE")
      ->check(non_empty_path());
  auto* chakra = cmd->add_option("--chakra", a->chakra,
                                 "Write Chakra execution traces (DIR/<name>.<rank>.et, DIR/<name>.comm_groups.json); compute "
                                 "nodes carry the durations the run simulated (slowdowns and compute beside communication)")
                     ->type_name("DIR")
                     ->check(non_empty_path());
  cmd->add_flag("--chakra-nominal", a->chakra_nominal, "Chakra compute nodes at their nominal durations instead")->needs(chakra);
  cmd->add_flag("--split", a->split,
                "Split the step into what each micro-batch adds and what it costs once (one more simulation, at m + pp "
                "micro-batches)");
  cmd->add_flag("--quiet,-q", a->quiet, "Print no summary table");
  cmd->add_flag("--timing,--profile", a->timing, "Print engine events, events/s, wall time and peak RSS to stderr");
  return {cmd, [a] { return run(*a); }};
}

}  // namespace ls::cli
