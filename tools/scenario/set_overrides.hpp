// tools/scenario/set_overrides.hpp — `--set KEY.PATH=VALUE` overrides on the located tree.
//
// VALUE is YAML ("4", "100 Gb/s", "[20, 20]", "{skew: zipf}"); it replaces or
// creates the key (intermediate maps are created; list entries are addressed as
// key[i]; a scalar cluster.gpu becomes {preset: NAME} when a sub-key is set). The
// key itself is checked later, by the converter, against the key table like every
// key in a file. Errors are located at --set:N:COL, N being the override's 1-based
// position and COL the column inside the "KEY=VALUE" text.
#pragma once

#include <string>
#include <vector>

#include "tools/scenario/yaml_tree.hpp"

namespace ls::tools {

/// Applies one override (1-based `ordinal`) to `root`; errors go to `d`.
void apply_set(YNode& root, const std::string& set, int ordinal, Diag& d);

/// Applies every override in order (later ones win).
void apply_sets(YNode& root, const std::vector<std::string>& sets, Diag& d);

}  // namespace ls::tools
