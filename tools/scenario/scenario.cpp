// tools/scenario/scenario.cpp — the scenario loader's public API: read the text, build the
// located tree (yaml_tree), apply --set overrides (set_overrides), convert it
// (scenario_convert), then wl::resolve it, pointing each of resolve's errors at the
// key it blames in the file. The keys, their types, defaults and docs are the key
// table (tools/scenario/scenario_keys.cpp), printed into the README by `layoutsim keys`.
#include "tools/scenario/scenario.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "tools/scenario/input_limits.hpp"
#include "tools/scenario/scenario_convert.hpp"
#include "tools/scenario/set_overrides.hpp"
#include "tools/scenario/yaml_tree.hpp"

namespace ls::tools {
namespace embedded {
extern const std::string_view default_scenario_yaml_text;  // generated: default_scenario.cpp
}

wl::ResolvedScenario load_scenario_string(std::string_view yaml, const std::string& source_name,
                                          const std::vector<std::string>& sets) {
  YNode root = parse_scenario_yaml(yaml, source_name);
  Diag d;
  apply_sets(root, sets, d);
  d.throw_if_any();
  wl::Scenario partial = convert_scenario(root, source_name, d);
  d.throw_if_any();
  try {
    return wl::resolve(std::move(partial));
  } catch (const wl::InvalidScenario& e) {
    for (const auto& issue : e.issues()) {
      const std::string& blame = issue.blame_path.empty() ? issue.key_path : issue.blame_path;
      d.error(locate(root, blame, source_name, issue.at_value), issue.key_path, issue.message, issue.hint);
    }
    d.throw_if_any();
    throw;
  }
}

wl::ResolvedScenario load_scenario_file(const std::string& path, const std::vector<std::string>& sets) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ScenarioError(fmt::format("{}:1:1: error: is a directory, not a scenario file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    throw ScenarioError(fmt::format("{}:1:1: error: cannot open the scenario file: {}", path, std::strerror(err)));
  }
  std::string text;  // past kMaxScenarioBytes, load_scenario_string reports the size
  if (!read_at_most(in, kMaxScenarioBytes, text))
    throw ScenarioError(fmt::format("{}:1:1: error: cannot read the scenario file", path));
  return load_scenario_string(text, path, sets);
}

std::string_view default_scenario_yaml() { return embedded::default_scenario_yaml_text; }

wl::ResolvedScenario load_default_scenario(const std::vector<std::string>& sets) {
  return load_scenario_string(default_scenario_yaml(), "<default>", sets);
}

}  // namespace ls::tools
