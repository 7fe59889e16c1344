// workloads/analysis/error_band.hpp — an error band on every prediction, from the runs that
// were never fitted: the held-out residuals of validation/corpus/ (the leave-one-source-out
// rows of `layoutsim validate --leave-out source`), embedded at build time from
// validation/error_bands.csv (tools/dev/error_bands.py writes it from validate's JSON).
//
// A run is described by four features: its implementation preset, its GPU family, its
// parallelism kind and its scale band. The band comes from the most specific group of
// held-out rows that share the run's features, coarsening from the last feature, that has
// at least kMinBandRows rows. Of their n signed errors e = (predicted − measured) /
// measured, sorted, the k-th smallest and the k-th largest with k = ⌊(n+1)(1−c)/2⌋ (at
// least 1) bound a new run's error with probability (n+1−2k)/(n+1) ≥ c = 80 %, the
// distribution-free prediction interval of order statistics; they give the measured step
// time as [predicted / (1 + e_hi), predicted / (1 + e_lo)]. Where no group is that large,
// there is no band (the outputs say so). Pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

struct BandFeatures {
  std::string preset;      // implementation.preset
  std::string gpu_family;  // a100 | hopper | blackwell | other
  std::string kind;        // pipeline (pp > 1) | tensor (tp > 1) | sharded (ZeRO-3) | data
  std::string scale;       // <=64 | <=512 | <=2048 | >2048 GPUs
};

BandFeatures band_features(const Scenario& s);

struct BandResidual {
  std::string id;
  double error = 0;  // signed, (predicted − measured) / measured
  BandFeatures features;
};

/// Fewest held-out rows a band may come from: with 9, even the widest interval (the
/// smallest and largest error) covers (n−1)/(n+1) = 80 %.
inline constexpr int kMinBandRows = 9;
/// The probability a band holds the measured step time of a run like its group's.
inline constexpr double kBandCoverage = 0.8;

struct ErrorBand {
  int rows = 0;             // 0: no similar held-out run
  double lo_s = 0, hi_s = 0;  // the measured step time's band
  std::string group;        // "megatron-lm-2021 · a100 · pipeline", or "all held-out runs"
};

/// The band of a prediction of `predicted_s` for a run with features `f`.
ErrorBand error_band(double predicted_s, const BandFeatures& f, const std::vector<BandResidual>& residuals);

/// Lines "id,error,preset,gpu_family,kind,scale" after a header line of those names;
/// throws std::invalid_argument on another shape.
std::vector<BandResidual> parse_residuals(std::string_view csv);
/// The shipped table (validation/error_bands.csv at build time).
const std::vector<BandResidual>& shipped_residuals();

}  // namespace ls::wl
