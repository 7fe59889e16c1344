// tools/cli/cmd_check.cpp — `layoutsim check`: load and validate a scenario and print
// the layout report (groups, per-stage layers and memory budget, analytic bubble,
// warnings) without simulating.
#include <memory>

#include "tools/cli/command.hpp"
#include "tools/study/sweep_report.hpp"

namespace ls::cli {

namespace {

struct CheckArgs {
  std::string scenario;
  std::vector<std::string> sets;
};

int run(const CheckArgs& a) {
  const api::ResolvedScenario sc = [&] {
    try {
      return api::ScenarioSource::file(a.scenario).resolve_sets(a.sets);
    } catch (const api::ScenarioError& e) {  // "--set layout.tp=3: ..." rather than "--set:1:8: ..."
      throw api::ScenarioError(tools::name_set_locations(e.what(), a.sets));
    }
  }();
  print_out(api::check_text(sc, api::check(sc)));
  return kExitOk;
}

}  // namespace

Subcommand add_check(CLI::App& parent) {
  auto a = std::make_shared<CheckArgs>();
  auto* cmd = parent.add_subcommand("check", "Parse and validate a scenario, print the plan and memory budget (no simulation)");
  cmd->add_option("scenario", a->scenario, "Scenario YAML file")->required()->check(non_empty_path());
  cmd->add_option("--set", a->sets, "Override one key, YAML value: --set layout.tp=4 (repeatable)")
      ->allow_extra_args(false)
      ->type_name("KEY=VALUE");
  return {cmd, [a] { return run(*a); }};
}

}  // namespace ls::cli
