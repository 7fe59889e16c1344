// tools/cli/cmd_calibrate.cpp — `layoutsim calibrate`: fit a GPU's efficiency constants
// to the measured step times of a runs file (tools/study/calibrate.hpp) and write the
// fitted profile.
#include <memory>

#include <fmt/format.h>

#include "tools/api/layoutsim.hpp"
#include "tools/cli/command.hpp"
#include "tools/report/progress.hpp"
#include "tools/scenario/gpu_profile_file.hpp"
#include "tools/study/calibrate.hpp"

namespace ls::cli {

namespace {

struct CalibrateArgs {
  std::string runs, gpu, out, json, fit, leave_out;
  int jobs = 0, iterations = 30;
  bool quiet = false;
};

int run(const CalibrateArgs& a) {
  check_outputs({{"--json", &a.json}, {"--out", &a.out}}, {{"runs", &a.runs}});
  auto rows = api::read_runs({a.runs});
  if (!a.gpu.empty()) std::erase_if(rows, [&](const tools::RunRow& r) { return r.scenario.gpu.name != a.gpu; });
  if (rows.empty()) throw UserError(fmt::format("calibrate: no runs{} in {}", a.gpu.empty() ? "" : " on GPU " + a.gpu, a.runs));
  const std::vector<api::TunableConstant> constants = api::calibration_constants(a.fit);
  // The number of simulations depends on the fit's path: a count without a total.
  tools::Progress progress({.label = "calibrate", .unit = "simulations", .enabled = tools::progress_wanted(a.quiet)});
  const api::Calibration c = api::calibrate(rows, constants,
                                                {.jobs = a.jobs,
                                                 .max_iterations = a.iterations,
                                                 .leave_out = a.leave_out,
                                                 .on_simulation = [&] { progress.advance(); }});
  progress.finish();
  if (!a.json.empty()) write_out(a.json, api::calibration_json(c).dump(2) + "\n");
  if (!a.out.empty()) {
    const std::string origin = fmt::format(
        "GPU profile fitted by `layoutsim calibrate {}` ({} runs on {}).\nFit: mean |error| {:.1f}%, max {:.1f}%; leave-one-out mean |error| {:.1f}%.\n"
        "Load it with cluster.gpu: {{preset: {}, profile: THIS_FILE}}.",
        a.runs, c.fit.count, c.gpu, 100 * c.fit.mean_abs_error, 100 * c.fit.max_abs_error, 100 * c.loo_mean_abs_error, c.gpu);
    write_out(a.out, tools::profile_yaml(tools::calibration_profile(c), origin));
  }
  if (a.json != "-" && a.out != "-") print_out(api::calibration_text(c, constants));
  return kExitOk;
}

}  // namespace

Subcommand add_calibrate(CLI::App& parent) {
  auto a = std::make_shared<CalibrateArgs>();
  auto* cmd = parent.add_subcommand("calibrate", "Fit a GPU's efficiency constants to the measured step times of a runs file");
  cmd->add_option("runs", a->runs, "Runs YAML file")->required()->check(non_empty_path());
  cmd->add_option("--gpu", a->gpu, "Fit only the runs on this GPU (required when the file mixes GPUs)")->type_name("NAME");
  cmd->add_option("--fit", a->fit, "Constants to fit, comma-separated (default: all)")->type_name("LIST");
  cmd->add_option("--out", a->out, "Write the fitted profile YAML ('-' = stdout)")->type_name("PROFILE.yaml")->check(non_empty_path());
  cmd->add_option("--json", a->json, "Write {gpu, constants, fit, leave_one_out} JSON ('-' = stdout)")->type_name("FILE")->check(non_empty_path());
  cmd->add_option("--leave-out", a->leave_out,
                  "'model' or a group kind such as 'source': also refit without each label's rows and report that label's "
                  "error (leave-one-model-out, leave-one-source-out)")
      ->type_name("model|source|KIND");
  cmd->add_option("--iterations", a->iterations, "Most Levenberg-Marquardt iterations")->check(CLI::PositiveNumber);
  cmd->add_option("--jobs,-j", a->jobs, "Parallel simulations (default: hardware threads)")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--quiet,-q", a->quiet, "No progress line on stderr");
  return {cmd, [a] { return run(*a); }};
}

}  // namespace ls::cli
