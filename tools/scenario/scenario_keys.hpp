// tools/scenario/scenario_keys.hpp — every scenario key, once: its path, type, allowed
// values, default and one-line doc.
//
// The table drives the loader's lists of valid keys (and so its "did you mean"
// hints and the check of every --set key), the loader's lists of allowed values,
// and the README's scenario reference, which is generated from it
// (`layoutsim keys --markdown`; a test fails when the README is out of date).
// Defaults that depend on other keys are derived by wl::resolve; the table only
// documents them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ls::tools {

struct ScenarioKey {
  /// Dotted path; "[]" marks the entries of a list of maps
  /// ("cluster.graph.links[].bandwidth").
  std::string_view path;
  std::string_view type;                 // int, number, bool, string, size, bandwidth, time, map, list, ...
  std::vector<std::string_view> values;  // the allowed values of a choice (empty: any value of the type)
  std::string_view default_text;         // "" when there is none (required, or absent means absent)
  std::string_view doc;                  // one line (markdown), read after the type
};

/// Every key, parents before children, siblings in the order the loader lists them.
const std::vector<ScenarioKey>& scenario_keys();

/// The names of the keys directly under `parent` ("" for the top level,
/// "cluster.graph.links[]" for the entries of a list), in table order.
std::vector<std::string> scenario_key_names(std::string_view parent);

/// The allowed values of the choice at `path`, in table order. Throws
/// std::logic_error when the table has no such key with values (a loader bug).
std::vector<std::string> scenario_key_values(std::string_view path);

/// The README's scenario reference: one markdown table per top-level key.
std::string scenario_keys_markdown();

}  // namespace ls::tools
