// tools/scenario/scenario_convert.hpp — the located YAML tree → a partial wl::Scenario.
//
// The converter reads what the file says and nothing more: keys it does not give
// stay unset, and wl::resolve derives them (the GPU, link rates, dp, kv_heads,
// ffn_hidden, micro-batches from a global batch) the same way as for a hand-built
// Scenario. It checks what only the file can tell: unknown keys, types, units,
// ranges, required keys, combinations of keys that exclude each other, and device
// names (every one of those errors located, all of them in one pass).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "tools/scenario/yaml_tree.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::tools {

class Reader;

/// The whole document (after --set overrides). Errors go to `d`; the result is only
/// meaningful when none were added.
wl::Scenario convert_scenario(const YNode& root, const std::string& source, Diag& d);

/// `cluster:` (absent: nullptr) into s.cluster and s.gpu. Returns the names of the
/// GPU vertices of an explicit graph (empty without one).
std::set<std::string> convert_cluster(const YEntry* cluster, Reader& r, wl::Scenario& s);

/// `training:`, `checkpoint:`, `failures:` (scenario_convert_training.cpp).
void convert_training(const YNode& root, Reader& r, wl::Scenario& s);

/// "node<N>.gpu<G>" → {N, G}; nullopt when the name has another shape.
std::optional<std::pair<long, long>> gpu_coords(std::string_view name);

}  // namespace ls::tools
