// tests/scenario_fixtures.hpp — scenarios loaded from YAML text, for the tests of an
// implementation key: its presets, a value a scenario sets, and a bad value's message.
#pragma once

#include <functional>
#include <string>

#include "tools/scenario/scenario.hpp"

namespace ls::test {

/// `base` (the model and layout lines) with `implementation: {implementation}` after
/// them, loaded as `name`: the implementation block is line 3 when `base` is two lines.
inline wl::ResolvedScenario with_implementation(const std::string& base, const std::string& implementation,
                                                const std::string& name) {
  return tools::load_scenario_string(base + "implementation: {" + implementation + "}\n", name);
}

/// The message of the ScenarioError that `load` throws ("" when it loads).
inline std::string scenario_error(const std::function<void()>& load) {
  try {
    load();
  } catch (const tools::ScenarioError& e) {
    return e.what();
  }
  return "";
}

}  // namespace ls::test
