// tools/report/report_json.hpp — the JSON summary of one simulated scenario (README.md,
// "JSON reference"). Keys come out in a fixed order (nlohmann::ordered_json) and numbers
// are printed by nlohmann's shortest round-trip formatter, so the same Result always
// serialises to the same bytes.
//
// Units: SI (seconds, bytes, FLOP). Ownership: returns values, holds nothing.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "workloads/build/result.hpp"

namespace ls::tools {

struct JsonOptions {
  /// Adds `engine.wall_s` (host wall-clock time of the simulation). Off by default
  /// because it differs run to run and the summary must be byte-identical.
  bool include_wall_time = false;
};

/// Every key of README.md's "JSON reference" in its order, then extras: `step_stats`,
/// memory terms `master`/`buffers`, critical-path seconds, `engine.events`.
/// Non-finite numbers are written as null (JSON has no NaN). O(stages + links).
nlohmann::ordered_json to_json(const wl::Result& r, const JsonOptions& opts = {});

/// One axis's `comm.<axis>` object (check prints it without exposed_s: nothing ran).
nlohmann::ordered_json axis_comm_json(const wl::AxisComm& c);

/// to_json(r).dump(2) plus a trailing newline.
std::string to_json_string(const wl::Result& r, const JsonOptions& opts = {});

}  // namespace ls::tools
