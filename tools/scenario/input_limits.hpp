// tools/scenario/input_limits.hpp — the most bytes the scenario language reads from a
// file of each kind. With the report room's limits (tools/report/atomic_file.hpp: runs
// files, summaries, shards, traces) it is the one input-size policy the README states:
// no input (a gzip bomb, /dev/zero, a runaway file) can exhaust memory or hang a
// command, and a larger file is a user error naming the limit.
#pragma once

#include <cstddef>
#include <istream>
#include <string>

namespace ls::tools {

/// A scenario is a page of YAML; a generated one for 100k GPUs stays far below this.
inline constexpr std::size_t kMaxScenarioBytes = std::size_t{16} << 20;
/// A `calibrate --out` profile: a GPU name and a dozen constants.
inline constexpr std::size_t kMaxProfileBytes = std::size_t{1} << 20;
/// Reads `in` to its end or until more than `max_bytes` have come (then `out` holds
/// max_bytes + some, and the caller reports the limit): a wrong file (/dev/zero) costs
/// at most one chunk more than the bound. False when the stream failed.
inline bool read_at_most(std::istream& in, std::size_t max_bytes, std::string& out) {
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    out.append(buf, static_cast<std::size_t>(in.gcount()));
    if (out.size() > max_bytes) return true;
  }
  return !in.bad();
}

}  // namespace ls::tools
