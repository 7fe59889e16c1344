// tools/study/validate.hpp — runs files (published measurements with their scenarios) and
// `layoutsim validate`: simulate every run, compare with the measurement, summarise.
//
// Runs file (YAML; validation/README.md has the full reference):
//   runs:
//     - name: ID                         REQUIRED, unique in the file
//       scenario: {<scenario map>}       inline scenario in layoutsim's format, or
//       file: PATH                       a scenario file (relative to the runs file)
//       measured: {step_time: "3.2 s"}   or {tokens_per_s: N} (whole job); optionally
//                 peak_memory: "61 GiB" and memory_convention: allocated | reserved
//       groups: {KIND: LABEL, ...}       optional tags (source, framework, gpu, precision, parallelism)
//       outlier: REASON                  optional: a same-source sibling contradicts the row
//                                        arithmetically; it stays in the means, not in the worst
//       citation: {...}, metadata: {...} optional, carried but not interpreted (but for
//                                        metadata.framework_version: validate_series.hpp)
//   source: {id: ID, fitted: BOOL}       optional, once per file: every row's groups.source
//                                        (unless the row sets it), and whether the shipped
//                                        constants were fitted on this source
// Unknown keys are errors. Errors carry the file name and line.
//
// Errors are fractions of step time, signed: (predicted − measured) / measured.
// Threads: evaluate_runs() simulates runs in parallel (tools/study/sweep.hpp's runner);
// each simulation builds its own state, so nothing is shared.
#pragma once

#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "tools/study/validate_series.hpp"
#include "workloads/analysis/error_band.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::tools {

struct RunRow {
  std::string name;
  std::string origin;                                      // "FILE:LINE" of the run entry
  std::vector<std::pair<std::string, std::string>> groups; // (kind, label), file order
  wl::Scenario scenario;
  double measured_step_s = 0;
  double measured_peak_bytes = 0;                          // 0: the source prints none
  std::string memory_convention;                           // "allocated", "reserved" or ""
  std::string outlier;                                     // the reason, "" when not one
  bool fitted = false;                                     // its source fitted the shipped constants
  // Its scenario as written, less what differs between the rows of one micro-batch
  // series (name, cluster.nodes, layout.dp, layout.microbatches, layout.global_batch),
  // with its metadata.framework_version: rows with equal keys differ at most in those
  // keys, on one release (validate_series.hpp). "" when the scenario text could not be
  // read again.
  std::string series_key;
};

/// The label of a row's group `kind` ("source", "framework", ...), "" when it has none.
std::string group_label(const std::vector<std::pair<std::string, std::string>>& groups, const std::string& kind);

/// A malformed runs file, or a run whose scenario does not load; what() is located.
struct RunsFileError : UserError {
  using UserError::UserError;
  std::string message() const override { return what(); }  // already located, one error per line
};

/// Reads a runs file; every scenario is loaded (and validated) by the scenario loader.
/// Throws RunsFileError listing every bad run.
std::vector<RunRow> read_runs_file(const std::string& path);
/// The same from a runs file's text, `path` naming it in messages.
std::vector<RunRow> read_runs_text(const std::string& text, const std::string& path);

/// Tokens per optimizer step of a scenario: dp · microbatch_size · microbatches · seq_len.
double tokens_per_step(const wl::Scenario& s);

struct RowOutcome {
  std::string name;
  std::vector<std::pair<std::string, std::string>> groups;
  int devices = 0;                                                // GPUs of the run
  double measured_s = 0;
  double predicted_s = std::numeric_limits<double>::quiet_NaN();  // NaN when the simulation failed
  double error = std::numeric_limits<double>::quiet_NaN();        // (predicted − measured) / measured
  std::string failure;                                            // what() of the failure, "" if none
  std::string outlier;                                            // RunRow::outlier
  bool fitted = false;                                            // RunRow::fitted
  // Peak memory per GPU, where the source prints it (NaN otherwise).
  double measured_peak_bytes = std::numeric_limits<double>::quiet_NaN();
  double predicted_peak_bytes = std::numeric_limits<double>::quiet_NaN();
  double memory_error = std::numeric_limits<double>::quiet_NaN();  // (predicted − measured) / measured
  std::string memory_convention;
  std::string memory_verdict;                                     // fits | tight | does-not-fit
  wl::BandFeatures features;                                          // what the error band groups runs by
  int microbatches = 0;                                           // per replica
  std::string series_key;                                         // RunRow::series_key
  std::string series_label;                                       // "SOURCE MODEL tT·pP SCHEDULE mbs B", naming its series
};

/// Simulates every row (what-ifs off) with `jobs` threads (≤ 0: hardware threads),
/// after `adjust` (if given) has changed the row's GPU — calibration sets its
/// constants there. Output keeps the input order.
/// `progress(row, done, total)` (if given) is called after each row (`row`: its index,
/// failed rows too), serialised (the same type as run_sweep's PointProgress).
using RowProgress = std::function<void(std::size_t row, std::size_t done, std::size_t total)>;
std::vector<RowOutcome> evaluate_runs(const std::vector<RunRow>& rows, int jobs,
                                      const std::function<void(wl::Scenario&)>& adjust = {}, const RowProgress& progress = {});

/// The work of simulating a row, in arbitrary units proportional to the events it
/// takes: one replica's ranks (tp·cp·pp, ×ep for MoE, whose all-to-alls couple
/// replicas) × micro-batches × layers per stage, × dp where the replicas are likely to
/// run one by one (an ECMP-routed fabric of several leaves: flows between leaves hash
/// onto spines replica by replica, and the symmetric fast path splits its classes by
/// that crowding). Progress lines weigh their ETA by it (rows differ 1,000× in cost),
/// and evaluate_runs starts the dearest rows first.
double row_cost_estimate(const RunRow& row);

struct ErrorStats {
  int count = 0;
  double mean_abs_error = 0, max_abs_error = 0, mean_error = 0;
  std::string worst;  // name of the row with the largest |error|, outliers aside
  int outliers = 0;   // rows marked outlier: in the means, not in max_abs_error / worst
};

/// {count, mean_abs_error, max_abs_error, mean_error}: how validate and calibrate report errors.
nlohmann::ordered_json error_stats_json(const ErrorStats& s);

/// Leave-one-group-out (`validate --leave-out KIND`, by source in the README): every
/// label of group KIND with its rows' statistics, and whether the shipped constants were
/// fitted on rows with that label. Held out: the rows of sources the constants were not
/// fitted on, predicted by constants that never saw them. The slope is the
/// least-squares slope of the held-out rows' signed error against log2(GPUs): the error
/// gained per doubling of the GPU count.
struct LeaveOutReport {
  std::string by;                                          // "" = not asked for
  struct Group {
    std::string label;
    ErrorStats stats;
    bool fitted = false;                                   // some of its rows fitted the constants
  };
  std::vector<Group> groups;                               // sorted by label
  ErrorStats held_out;                                     // pooled over held-out rows
  double held_out_source_mean_error = 0;                   // mean over held-out groups of their signed means
  double slope_per_doubling = 0;
  std::vector<std::string> fitted_sources;                 // sources the constants were fitted on
};

/// How many rows' predicted peak fits, is tight or does not fit (wl::MemoryVerdict), over
/// the rows that simulated: every published run ran, so a row that does not fit is a
/// memory model that is wrong for it.
struct MemoryVerdicts {
  int fits = 0, tight = 0, does_not_fit = 0;
  std::vector<std::string> does_not_fit_rows;  // in row order
};

struct ValidationReport {
  std::vector<RowOutcome> rows;
  ErrorStats all;
  std::vector<std::pair<std::string, ErrorStats>> groups;  // "kind:label", sorted by name
  ErrorStats memory;                                       // peak-memory error, rows whose source prints it
  MemoryVerdicts verdicts;                                 // every row that simulated
  LeaveOutReport leave_out;
  std::vector<MicrobatchSeries> series;                    // micro-batch series among the rows
  int failed = 0;
};

/// Statistics over the rows that simulated (failed rows are counted, not averaged).
ErrorStats error_stats(const std::vector<RowOutcome>& rows);
/// The same for the peak-memory error of the rows that have one.
ErrorStats memory_error_stats(const std::vector<RowOutcome>& rows);
/// `leave_out_by`: a group kind ("source"), or "" for no leave-out section.
ValidationReport summarize(std::vector<RowOutcome> rows, const std::string& leave_out_by = "");

/// The text table: one line per row, then the overall and per-group statistics.
std::string format_validation(const ValidationReport& r);
/// {rows: [{id, measured, predicted, error, [outlier], [memory: {measured, predicted,
///  error, convention, verdict}]}], mean_abs_error, max_abs_error, mean_error, worst,
///  failed, groups: {NAME: {count, mean_abs_error, max_abs_error, mean_error}},
///  [memory: {...stats}], memory_verdicts: {fits, tight, does_not_fit,
///  does_not_fit_rows}, [leave_out: {by, held_out: {...stats}, mean_abs_error,
///  max_abs_error, mean_error, source_mean_error, slope_per_doubling, fitted_sources,
///  groups: {LABEL: {...stats, fitted}}}]}. measured/predicted in seconds per step (bytes
///  for memory); errors as fractions.
nlohmann::ordered_json validation_json(const ValidationReport& r);
/// Predicted vs measured step time on log-log axes with the y = x line and a ±10 % band.
std::string validation_svg(const ValidationReport& r, const std::string& title);

}  // namespace ls::tools
