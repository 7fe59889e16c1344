// tools/study/validate_series.hpp — micro-batch series: where a prediction's error sits.
//
// A runs file often holds one layout at several data-parallel widths (a fixed global
// batch on more GPUs) or several global batches: rows that differ only in how many
// micro-batches each replica runs. Their step times then lie on a line,
//   step = per_microbatch · m + fixed,
// whose slope is what one more micro-batch costs (for a pipeline, the steady state's
// slot: every stage's forward and backward of one micro-batch) and whose intercept is
// what a step costs whatever its micro-batches (the pipeline's fill and drain, the
// gradient reduction, the optimizer, the weight gathers). Fitting that line to the
// measured and to the predicted times of a series says which of the two the prediction
// gets wrong, which one row's error cannot: a prediction that is 10 % fast could carry
// a micro-batch 10 % too cheap, or a fixed part seconds too short.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ls::tools {

struct RowOutcome;

/// Least-squares line y = slope·x + intercept through the points (x distinct in at
/// least two), with the largest |residual|: 0 through two points.
struct LineFit {
  double slope = 0;
  double intercept = 0;
  double max_residual = 0;
};
/// Throws std::invalid_argument when the sizes differ or fewer than two distinct x.
LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y);

/// Rows of one series (equal RowOutcome::series_key, at least two distinct micro-batch
/// counts, every row simulated) with the line through their measured and predicted
/// steps against micro-batches per replica.
struct MicrobatchSeries {
  std::string label;                // RowOutcome::series_label of its first row
  std::vector<std::string> rows;    // row names, by micro-batches then input order
  std::vector<int> microbatches;    // per replica, same order
  LineFit measured, predicted;      // seconds per micro-batch (slope) and per step (intercept)
};

/// The series among `rows`, in the order of their first row. Outliers stay in (a
/// series shows what its rows say).
std::vector<MicrobatchSeries> microbatch_series(const std::vector<RowOutcome>& rows);

/// The text section (empty when there is no series).
std::string format_series(const std::vector<MicrobatchSeries>& series);
/// [{label, rows, microbatches, measured: {per_microbatch_s, fixed_s, max_residual_s},
///   predicted: {...}}].
nlohmann::ordered_json series_json(const std::vector<MicrobatchSeries>& series);

}  // namespace ls::tools
