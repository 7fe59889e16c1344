// tools/study/validate.hpp — runs files (published measurements with their scenarios) and
// `layoutsim validate`: simulate every run, compare with the measurement, summarise.
//
// Runs file (YAML; validation/README.md has the full reference):
//   runs:
//     - name: ID                         REQUIRED, unique in the file
//       scenario: {<scenario map>}       inline scenario in layoutsim's format, or
//       file: PATH                       a scenario file (relative to the runs file)
//       measured: {step_time: "3.2 s"}   or {tokens_per_s: N} (whole job)
//       groups: {KIND: LABEL, ...}       optional tags (gpu, precision, parallelism)
//       citation: {...}, metadata: {...} optional, carried but not interpreted
// Unknown keys are errors. Errors carry the file name and line.
//
// Errors are fractions of step time, signed: (predicted − measured) / measured.
// Threads: evaluate_runs() simulates runs in parallel (tools/study/sweep.hpp's runner);
// each simulation builds its own state, so nothing is shared.
#pragma once

#include "sim/error.hpp"
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "workloads/spec.hpp"

namespace ls::tools {

struct RunRow {
  std::string name;
  std::string origin;                                      // "FILE:LINE" of the run entry
  std::vector<std::pair<std::string, std::string>> groups; // (kind, label), file order
  wl::Scenario scenario;
  double measured_step_s = 0;
};

/// A malformed runs file, or a run whose scenario does not load; what() is located.
struct RunsFileError : UserError {
  using UserError::UserError;
  std::string message() const override { return what(); }  // already located, one error per line
};

/// Reads a runs file; every scenario is loaded (and validated) by the scenario loader.
/// Throws RunsFileError listing every bad run.
std::vector<RunRow> read_runs_file(const std::string& path);

/// Tokens per optimizer step of a scenario: dp · microbatch_size · microbatches · seq_len.
double tokens_per_step(const wl::Scenario& s);

struct RowOutcome {
  std::string name;
  std::vector<std::pair<std::string, std::string>> groups;
  double measured_s = 0;
  double predicted_s = std::numeric_limits<double>::quiet_NaN();  // NaN when the simulation failed
  double error = std::numeric_limits<double>::quiet_NaN();        // (predicted − measured) / measured
  std::string failure;                                            // what() of the failure, "" if none
};

/// Simulates every row (what-ifs off) with `jobs` threads (≤ 0: hardware threads),
/// after `adjust` (if given) has changed the row's GPU — calibration sets its
/// constants there. Output keeps the input order.
/// `progress(done, total)` (if given) is called after each row, serialised.
std::vector<RowOutcome> evaluate_runs(const std::vector<RunRow>& rows, int jobs,
                                      const std::function<void(wl::Scenario&)>& adjust = {},
                                      const std::function<void(std::size_t, std::size_t)>& progress = {});

struct ErrorStats {
  int count = 0;
  double mean_abs_error = 0, max_abs_error = 0, mean_error = 0;
  std::string worst;  // name of the row with the largest |error|
};

/// {count, mean_abs_error, max_abs_error, mean_error}: how validate and calibrate report errors.
nlohmann::ordered_json error_stats_json(const ErrorStats& s);

struct ValidationReport {
  std::vector<RowOutcome> rows;
  ErrorStats all;
  std::vector<std::pair<std::string, ErrorStats>> groups;  // "kind:label", sorted by name
  int failed = 0;
};

/// Statistics over the rows that simulated (failed rows are counted, not averaged).
ErrorStats error_stats(const std::vector<RowOutcome>& rows);
ValidationReport summarize(std::vector<RowOutcome> rows);

/// The text table: one line per row, then the overall and per-group statistics.
std::string format_validation(const ValidationReport& r);
/// {rows: [{id, measured, predicted, error}], mean_abs_error, max_abs_error, mean_error,
///  worst, failed, groups: {NAME: {count, mean_abs_error, max_abs_error, mean_error}}}.
/// measured/predicted in seconds per step; errors as fractions.
nlohmann::ordered_json validation_json(const ValidationReport& r);
/// Predicted vs measured step time on log-log axes with the y = x line and a ±10 % band.
std::string validation_svg(const ValidationReport& r, const std::string& title);

}  // namespace ls::tools
