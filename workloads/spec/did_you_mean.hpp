// workloads/spec/did_you_mean.hpp — "did you mean" suggestions: the one nearest-name
// helper behind every hint on a misspelt key, value, preset, unit or link name
// (the scenario loader, units and wl::resolve's link check all call it).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ls::wl {

/// Levenshtein distance (insert, delete, substitute; unit costs). O(|a|·|b|).
std::size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate closest to `word` if its edit distance is ≤ max_distance (ties: the
/// first in order), else "". Used for "did you mean" hints on keys, presets, units.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates,
                          std::size_t max_distance = 2);

}  // namespace ls::wl
