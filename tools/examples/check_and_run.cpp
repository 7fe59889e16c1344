// tools/examples/check_and_run.cpp — a program written against the public C++ API
// (tools/api/layoutsim.hpp) alone: load a scenario (a file, or the built-in default), apply
// overrides, check it (the layout report), simulate it, print the step time and optionally write the JSON
// summary — the same bytes `layoutsim run --json` writes, which CTest checks.
//
//   check_and_run [SCENARIO.yaml] [--set KEY=VALUE]... [--json FILE]
//
// Exit codes as the command's: 0 ok, 1 invalid scenario, 2 usage, 3 internal error.
#include <cstdio>
#include <exception>
#include <fstream>
#include <iostream>
#include <string>

#include "tools/api/layoutsim.hpp"

int main(int argc, char** argv) {
  std::string scenario_path, json_path;
  ls::api::Overrides overrides;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--set" || arg == "--json") && i + 1 < argc) {
      const std::string value = argv[++i];
      if (arg == "--json") {
        json_path = value;
        continue;
      }
      const auto eq = value.find('=');
      if (eq == std::string::npos) {
        std::cerr << "check_and_run: --set " << value << ": expected KEY=VALUE\n";
        return 2;
      }
      overrides.emplace_back(value.substr(0, eq), value.substr(eq + 1));
    } else if (!arg.starts_with("-") && scenario_path.empty()) {
      scenario_path = arg;
    } else {
      std::cerr << "usage: check_and_run [SCENARIO.yaml] [--set KEY=VALUE]... [--json FILE]\n";
      return 2;
    }
  }

  try {
    const auto source = scenario_path.empty() ? ls::api::ScenarioSource::builtin() : ls::api::ScenarioSource::file(scenario_path);
    const ls::api::ResolvedScenario scenario = source.resolve(overrides);

    // Plan first: the layout and memory budget cost no simulation.
    const ls::api::LayoutReport plan = ls::api::check(scenario);
    const nlohmann::ordered_json plan_json = ls::api::check_json(scenario, plan);
    std::cout << "scenario: " << plan_json["scenario"].get<std::string>() << "\n"
              << "devices: " << plan.devices << ", stages: " << plan.stage_layers.size()
              << ", fits in memory: " << (plan_json["fits"].get<bool>() ? "yes" : "no") << "\n";

    const ls::api::Result result = ls::api::simulate(scenario);
    // %.17g: enough digits to round-trip, so the text can be compared with the JSON's.
    std::printf("step_time_s: %.17g\nmfu: %.6f\n", result.step_time_s, result.mfu);
    std::fflush(stdout);

    if (!json_path.empty()) {
      std::ofstream out(json_path, std::ios::binary);
      out << ls::api::summary_json_text(result);
      if (!out) {
        std::cerr << "check_and_run: cannot write " << json_path << "\n";
        return 3;
      }
    }
  } catch (const ls::api::ScenarioError& e) {
    std::cerr << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return 3;
  }
  return 0;
}
