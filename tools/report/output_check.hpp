// tools/report/output_check.hpp — the post-condition on a run's JSON summary, checked before
// any output is written: every number is finite and non-negative, and every fraction
// (mfu, hfu, *fraction*, *utilization*, share_*) is at most 1. A violation is a bug in
// the simulator (or an unchecked overflow), never a result: it throws
// OutputInvariantError naming the field, which the command reports as an internal
// error (exit 3) instead of printing a nonsense success.
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/error.hpp"

namespace ls::tools {

struct OutputInvariantError : InternalError {
  using InternalError::InternalError;
};

/// True when a summary key names a fraction of 1 (so must lie in [0, 1]).
bool is_fraction_key(const std::string& key);

/// Throws OutputInvariantError for the first number that is null (a NaN or infinity
/// that report_json wrote as null), negative, or a fraction above 1; the message
/// names its path, e.g. "pipeline.per_stage[2].idle_fraction = 4998342".
void check_summary_numbers(const nlohmann::ordered_json& summary);
/// The same for a summary read back unordered (diff), without a copy.
void check_summary_numbers(const nlohmann::json& summary);

}  // namespace ls::tools
