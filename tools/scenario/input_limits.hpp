// tools/scenario/input_limits.hpp — the most bytes the scenario language reads from a
// file of each kind. With the report room's limits (tools/report/atomic_file.hpp: runs
// files, summaries, shards, traces) it is the one input-size policy the README states:
// no input (a gzip bomb, /dev/zero, a runaway file) can exhaust memory or hang a
// command, and a larger file is a user error naming the limit.
#pragma once

#include <cstddef>

namespace ls::tools {

/// A scenario is a page of YAML; a generated one for 100k GPUs stays far below this.
inline constexpr std::size_t kMaxScenarioBytes = std::size_t{16} << 20;
/// A `calibrate --out` profile: a GPU name and a dozen constants.
inline constexpr std::size_t kMaxProfileBytes = std::size_t{1} << 20;
}  // namespace ls::tools
