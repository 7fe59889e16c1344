// tools/study/calibrate.hpp — `layoutsim calibrate`: fit a GPU's efficiency constants to
// measured step times.
//
// The fit minimises Σ_i log(predicted_i / measured_i)² over a list of named, bounded
// constants (tools/scenario/gpu_profile_file.hpp) with Levenberg–Marquardt (levenberg_marquardt.hpp): the
// Jacobian by finite differences (one full evaluation of the runs per constant), each
// step projected back inside the bounds. Log residuals make a 10 % miss on a 0.5 s
// step weigh the same as on a 60 s step.
//
// Leave-one-out is linearised for speed: for each run i, one Gauss–Newton step from
// the full fit using the full fit's Jacobian without row i (no new simulations), and
// run i predicted from that step. It equals a true re-fit when the predictions are
// linear in log space near the fit; it costs no simulation, a full re-fit per run
// would cost a whole calibration each.
//
// Cost: (constants + 1..k) evaluations of every run per iteration; each evaluation
// runs the simulations in parallel (evaluate_runs).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tools/scenario/gpu_profile_file.hpp"
#include "tools/study/validate.hpp"

namespace ls::tools {

struct CalibrateOptions {
  int jobs = 0;               // threads for the simulations (≤ 0: hardware threads)
  int max_iterations = 30;
  double tolerance = 1e-5;    // stop when an iteration lowers the cost by less than this fraction
  /// Leave-one-group-out: "model" (rows grouped by model_key) or a runs-file group kind
  /// such as "source"; for each label, a true re-fit on the other labels' rows (from the
  /// full fit) and that label's rows predicted. "" = none.
  std::string leave_out;
  /// Called after every simulation of a run (from worker threads, serialised): progress.
  std::function<void()> on_simulation;
};

/// The model a run trains, for leave-one-model-out: the scenario's model name, or its
/// shape ("L32-h4096-a32-f16384-v50368") when unnamed.
std::string model_key(const wl::Scenario& s);

struct Calibration {
  std::string gpu;
  std::vector<std::pair<std::string, double>> start;   // constant values before the fit (SI)
  std::vector<std::pair<std::string, double>> fitted;  // after (SI)
  ErrorStats before, fit;                              // fractions of step time
  double loo_mean_abs_error = 0, loo_max_abs_error = 0;
  std::vector<RowOutcome> rows;                        // predictions with the fitted constants
  int iterations = 0, evaluations = 0;
  /// Leave-one-group-out (CalibrateOptions::leave_out): per held-out label, its rows'
  /// errors when fitted on the other labels only; `held_out_all` over every held-out row.
  std::string leave_out;  // the group kind, "" = none
  struct HeldOut {
    std::string model;    // the held-out label (a model, a source, ...)
    ErrorStats stats;
    std::vector<std::pair<std::string, double>> fitted;  // the constants fitted without it
  };
  std::vector<HeldOut> held_out;
  ErrorStats held_out_all;
};

/// Fits `constants` (a subset of gpu_constants(), in order) to `rows`, which must all
/// use the same GPU (by name). Starts from the first row's GPU values. Throws
/// std::invalid_argument for no rows, mixed GPUs, or a run that fails to simulate.
Calibration calibrate(const std::vector<RunRow>& rows, const std::vector<TunableConstant>& constants, const CalibrateOptions& opt);

/// The text report: constants before → after, fit and leave-one-out errors.
std::string format_calibration(const Calibration& c, const std::vector<TunableConstant>& constants);
/// {gpu, constants: {NAME: value (SI)}, start: {...}, fit: {count, mean_abs_error,
///  max_abs_error, mean_error}, before: {...}, leave_one_out: {mean_abs_error, max_abs_error},
///  iterations, evaluations}; with leave-one-model-out also leave_one_model_out:
///  {all: {...stats}, models: {MODEL: {...stats}}}.
nlohmann::ordered_json calibration_json(const Calibration& c);
/// The fitted profile as a GpuProfile.
GpuProfile calibration_profile(const Calibration& c);

}  // namespace ls::tools
