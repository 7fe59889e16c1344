// tools/scenario.hpp — the scenario loader: YAML text → wl::Scenario, validated.
//
// This is the only code in layoutsim that touches yaml-cpp. The keys, units and
// defaults are documented in the comment block at the top of tools/scenario.cpp
// (the README's scenario reference is written from it) and in CONTRACT.md.
//
// Errors are compiler style, one per line of ScenarioError::what():
//   FILE:LINE:COL: error: KEY.PATH: what was expected (hint)
// LINE and COL are 1-based. Errors in a `--set KEY=VALUE` override are located at
// `--set:N:COL`, N being the override's 1-based position in `sets` and COL the column
// inside the "KEY=VALUE" text. The loader reports every problem it can find in one
// pass (all unknown keys, all bad values); layout rules (wl::validate) are checked
// only once the file itself converts cleanly.
//
// Not checked here: perturbation *link* names (they exist only once the topology is
// built; simulate() rejects unknown ones). Perturbation *device* names are checked.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/spec.hpp"

namespace ls::tools {

/// An invalid scenario: what() holds one compiler-style message per line.
struct ScenarioError : std::runtime_error {
  using runtime_error::runtime_error;
};

/// Reads and loads a scenario file. `sets` are "KEY.PATH=YAML-VALUE" overrides applied
/// in order to the document tree before conversion (later ones win). Throws ScenarioError.
wl::Scenario load_scenario_file(const std::string& path, const std::vector<std::string>& sets = {});

/// Loads scenario text; `source_name` is used in messages and stored in Scenario::source.
wl::Scenario load_scenario_string(std::string_view yaml, const std::string& source_name,
                                  const std::vector<std::string>& sets = {});

/// The built-in default scenario's YAML (tools/default_scenario.yaml, embedded at build time).
std::string_view default_scenario_yaml();

/// load_scenario_string(default_scenario_yaml(), "<default>", sets).
wl::Scenario load_default_scenario(const std::vector<std::string>& sets = {});

}  // namespace ls::tools
