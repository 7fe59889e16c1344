// tools/study/diff.hpp — `layoutsim diff A.json B.json`: two run summaries (`run --json`)
// side by side, with the change in percent.
//
// The summaries are read generically, as JSON: a table of the headline rows (step
// time, tokens/s, MFU, bubble, exposed communication by axis, peak memory, time and
// cost to train, the busiest links), then every other number that differs, found by
// walking both documents (list entries matched by their name, stage or device), so
// fields added to the summary later show up without a change here.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/error.hpp"

namespace ls::tools {

/// A file that is not a layoutsim run summary (or not JSON): a user error (exit 1).
struct DiffInputError : UserError {
  using UserError::UserError;
  std::string message() const override { return what(); }  // already located, one error per line
};

struct DiffRow {
  std::string section;  // "", "comm", "memory", "links", "other"
  std::string label;    // "step time"
  std::string path;     // "step_time_s", "comm.tp.exposed_s"
  std::string unit;     // "s", "B", "%", "" (count), "text"
  bool has_a = false, has_b = false;
  double a = 0, b = 0;
  std::string text_a{}, text_b{};  // unit "text"
  /// (b − a) / a; NaN when a is 0 or a side is missing.
  double change() const;
};

struct DiffReport {
  std::string name_a, name_b;  // file names
  std::string scenario_a, scenario_b;
  std::vector<DiffRow> rows;   // headline rows first, then "other" rows in A's order
  std::size_t other_total = 0; // "other" rows before any truncation by the table
};

/// Parses and checks one summary; `name` is used in messages. Throws DiffInputError.
nlohmann::json read_summary(const std::string& text, const std::string& name);

/// The rows for two summaries. Numbers that differ by less than `rel_tol` (relative)
/// are left out of the "other" rows.
DiffReport diff_summaries(const nlohmann::json& a, const nlohmann::json& b, const std::string& name_a, const std::string& name_b,
                          double rel_tol = 1e-9);

/// The side-by-side table; at most `max_other` "other" rows.
std::string format_diff(const DiffReport& r, std::size_t max_other = 30);

/// {a, b, scenario_a, scenario_b, rows: [{section, label, path, unit, a, b, change}]}.
nlohmann::ordered_json diff_json(const DiffReport& r);

}  // namespace ls::tools
