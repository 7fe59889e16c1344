// tools/study/sweep.hpp — `layoutsim sweep`: expand `--set KEY=V1,V2,...` lists into their
// cartesian product, run the points in parallel on std::threads, and write the
// results as CSV / JSON in input order (never completion order).
//
// Ownership: the runner owns its threads and joins them before returning. The point
// function is called concurrently from several threads and must not share mutable
// state (simulate() builds everything per call).
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "workloads/build/result.hpp"

namespace ls::tools {

/// One swept key and its values (YAML text, as given on the command line).
struct SweepAxis {
  std::string key;
  std::vector<std::string> values;
};

/// One point of the product: (key, value) per axis, in axis order.
using SweepPoint = std::vector<std::pair<std::string, std::string>>;

/// Splits "KEY=V1,V2,..." at the first '=' and at the commas that are not inside
/// [] or {} (so "layout.stage_layers=[4,4],[2,6]" has two values). Throws
/// std::invalid_argument on a missing '=', an empty key or an empty value.
SweepAxis parse_sweep_set(const std::string& text);

/// Cartesian product, the first axis varying slowest (nested loops in input order).
/// Axes with the same key are kept (the later override wins when applied).
/// An empty axis list gives one empty point. Size: product of the value counts.
std::vector<SweepPoint> expand_sweep(const std::vector<SweepAxis>& axes);

/// Pairs the values instead (`sweep --zip`): point i takes value i of every axis; an
/// axis with one value applies to every point. Throws std::invalid_argument when two
/// axes with more than one value differ in length.
std::vector<SweepPoint> zip_sweep(const std::vector<SweepAxis>& axes);

/// "KEY=VALUE" strings of a point, ready for load_scenario_file(path, sets).
std::vector<std::string> point_sets(const SweepPoint& p);

struct SweepOutcome {
  SweepPoint point;
  std::size_t index = 0;             // position in the whole sweep (shards and MPI ranks run a part)
  std::optional<wl::Result> result;  // empty when the point threw
  std::exception_ptr error;          // what it threw (classified by the caller)
  std::string error_message;         // error's what(), "" when it succeeded
  /// The JSON summary when the point ran in another process (MPI rank, shard file):
  /// then `result` holds only what the table, CSV, sorting and plot read
  /// (sweep_shard.hpp), and sweep_json writes this instead of to_json(*result).
  nlohmann::ordered_json summary;
};

/// Runs fn on every point with `jobs` threads (jobs ≤ 0: hardware_concurrency).
/// Results keep the order of `points`. `progress(index, done, total)` is called after
/// each point (`index`: the finished point's, failed points too), serialised under a
/// lock. Exceptions thrown by fn are captured per point.
using PointProgress = std::function<void(std::size_t index, std::size_t done, std::size_t total)>;
std::vector<SweepOutcome> run_sweep(const std::vector<SweepPoint>& points,
                                    const std::function<wl::Result(const SweepPoint&)>& fn, int jobs,
                                    const PointProgress& progress = {});

/// The training columns a sweep's CSV (and Python's rows) carry: time_to_train_s and
/// gpu_hours when some point has a token budget, cost when one has a price too.
struct SweepTrainingColumns {
  bool tokens = false, cost = false;
};
SweepTrainingColumns sweep_training_columns(const std::vector<SweepOutcome>& outcomes);

/// CSV: one column per swept key, then global_batch, step_time_s, tokens_per_s, mfu,
/// bubble_fraction, bubble_fraction_analytic, max_peak_bytes, fits, then the training
/// columns (sweep_training_columns), then error;
/// one row per point; failed points keep their key cells, leave the metrics empty,
/// say "error" under fits and give the reason under error.
/// `keys` are the column names (the swept keys, de-duplicated, in order).
std::string sweep_csv(const std::vector<std::string>& keys, const std::vector<SweepOutcome>& outcomes);

/// JSON: array of {"set": {KEY: VALUE...}, "summary": <to_json(result)>} (or
/// "error": message instead of "summary"). Values that read as integers, numbers or
/// booleans are written as such, the rest as strings. `shard_fields` (a --shard run's
/// file, which --merge reads back) puts "point": index first and "internal": true on
/// a point that failed on an internal error.
nlohmann::ordered_json sweep_json(const std::vector<SweepOutcome>& outcomes, bool shard_fields = false);

/// The {"set": ...} object of one point, typed as sweep_json types it.
nlohmann::ordered_json point_json(const SweepPoint& p);

/// True when the point failed on an internal error (a bug), not on an invalid
/// scenario, a bad --set or a time out of range (which are answers).
bool internal_error(const SweepOutcome& o);

/// The distinct keys of the axes, in first-appearance order.
std::vector<std::string> sweep_keys(const std::vector<SweepAxis>& axes);

}  // namespace ls::tools
