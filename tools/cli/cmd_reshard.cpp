// tools/cli/cmd_reshard.cpp — `layoutsim reshard`: price moving a sharded checkpoint
// written under one layout to another layout of the same model.
#include <memory>

#include "tools/cli/command.hpp"
#include "tools/report/atomic_file.hpp"
#include "tools/scenario/input_limits.hpp"
#include "tools/study/reshard.hpp"

namespace ls::cli {

namespace {

struct ReshardArgs {
  std::string from, to, json;
};

int run(const ReshardArgs& a) {
  check_outputs({{"--json", &a.json}}, {{"from", &a.from}, {"to", &a.to}});
  const api::ResolvedScenario from = api::ScenarioSource::file(a.from).resolve();
  const api::ResolvedScenario to = api::ScenarioSource::file(a.to).resolve();
  // The target's text: the plan locates its errors in it (readable: resolve() just read it).
  const tools::ReshardPlan p = tools::plan_reshard(from.scenario(), to.scenario(), tools::read_input(a.to, tools::kMaxScenarioBytes), a.to);
  if (!a.json.empty()) write_out(a.json, tools::reshard_json(p));
  if (a.json != "-") write_out("-", tools::format_reshard(p));
  return kExitOk;
}

}  // namespace

Subcommand add_reshard(CLI::App& parent) {
  auto a = std::make_shared<ReshardArgs>();
  auto* cmd = parent.add_subcommand("reshard", "Price moving a sharded checkpoint from one layout of a model to another");
  cmd->add_option("from", a->from, "Scenario the checkpoint was written under")->required()->check(non_empty_path());
  cmd->add_option("to", a->to, "Scenario to restore it under")->required()->check(non_empty_path());
  cmd->add_option("--json", a->json, "Write the JSON plan to FILE ('-' = stdout, replaces the table)")->type_name("FILE")->check(non_empty_path());
  return {cmd, [a] { return run(*a); }};
}

}  // namespace ls::cli
