// tools/cli/cmd_validate.cpp — `layoutsim validate`: simulate published measurements
// (runs files, tools/study/validate.hpp; default: the shipped validation/ set) and
// report measured vs predicted per run, per group and overall.
#include <chrono>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tools/api/layoutsim.hpp"
#include "tools/cli/command.hpp"
#include "tools/report/human_units.hpp"
#include "tools/report/progress.hpp"
#include "tools/scenario/gpu_profile_file.hpp"

#ifndef LAYOUTSIM_VALIDATION_DIR
#define LAYOUTSIM_VALIDATION_DIR "validation"
#endif

namespace ls::cli {

namespace {

struct ValidateArgs {
  std::vector<std::string> sets;
  std::string json, plot, profile, leave_out;
  int jobs = 0;
  bool quiet = false;
};

int run(const ValidateArgs& a) {
  std::vector<std::string> files = a.sets;
  if (files.empty()) files = api::default_runs_files(LAYOUTSIM_VALIDATION_DIR);
  std::vector<NamedPath> inputs{{"--profile", &a.profile}};
  for (const auto& f : files) inputs.emplace_back("runs", &f);
  check_outputs({{"--json", &a.json}, {"--plot", &a.plot}}, inputs);
  auto rows = api::read_runs(files);
  if (rows.empty()) throw UserError(fmt::format("validate: no runs in {}", fmt::join(files, ", ")));
  if (!a.profile.empty()) {
    const tools::GpuProfile prof = tools::read_profile_file(a.profile);
    for (auto& row : rows)
      if (row.scenario.gpu.name == prof.gpu) tools::apply_profile(row.scenario.gpu, prof);
  }
  const auto t0 = std::chrono::steady_clock::now();
  // The ETA weighs each run by its estimated events: runs differ 100× in cost.
  std::vector<double> cost;
  double total_cost = 0;
  for (const auto& row : rows) total_cost += cost.emplace_back(tools::row_cost_estimate(row));
  tools::Progress progress({.label = "validate",
                            .unit = "runs",
                            .total = rows.size(),
                            .total_cost = total_cost,
                            .enabled = tools::progress_wanted(a.quiet)});
  const api::ValidationReport rep = api::validate(rows, a.jobs, a.leave_out,
                                                  [&](std::size_t row, std::size_t, std::size_t) { progress.advance_cost(cost[row]); });
  progress.finish();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!a.json.empty()) write_out(a.json, api::validation_json(rep).dump(2) + "\n");
  if (!a.plot.empty()) write_out(a.plot, api::validation_svg(rep, "layoutsim validate: predicted vs measured step time"));
  if (a.json != "-" && a.plot != "-") print_out(api::validation_text(rep));
  fmt::print(stderr, "validate: {} runs simulated in {}\n", rows.size(), tools::human_seconds(wall));
  for (const auto& r : rep.rows)
    if (!r.failure.empty()) fmt::print(stderr, "run {}: {}\n", r.name, r.failure);
  return rep.failed > 0 ? kExitInternal : kExitOk;
}

}  // namespace

Subcommand add_validate(CLI::App& parent) {
  auto a = std::make_shared<ValidateArgs>();
  auto* cmd = parent.add_subcommand("validate", "Simulate published measurements (runs files; default: the shipped validation set) and report the errors");
  cmd->add_option("runs", a->sets, "Runs YAML files (default: " LAYOUTSIM_VALIDATION_DIR "/llm_foundry.yaml, megatron_bridge.yaml and corpus/*.yaml but subset.yaml)")
      ->check(non_empty_path());
  cmd->add_option("--json", a->json, "Write {rows, mean_abs_error, max_abs_error, groups} JSON ('-' = stdout)")->type_name("FILE")->check(non_empty_path());
  cmd->add_option("--plot", a->plot, "Write an SVG of predicted vs measured step time (log-log; '-' = stdout)")->type_name("FILE.svg")->check(non_empty_path());
  cmd->add_option("--profile", a->profile, "Apply a GPU profile (from calibrate --out) to the runs on its GPU")->type_name("PROFILE.yaml")->check(non_empty_path());
  cmd->add_option("--jobs,-j", a->jobs, "Parallel simulations (default: hardware threads)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--leave-out", a->leave_out,
                  "Group kind to report leave-one-out by, e.g. 'source': per label, and pooled over the labels the shipped "
                  "constants were not fitted on (runs files mark fitted sources with source: {fitted: true})")
      ->type_name("KIND");
  cmd->add_flag("--quiet,-q", a->quiet, "No progress line on stderr");
  return {cmd, [a] { return run(*a); }};
}

}  // namespace ls::cli
