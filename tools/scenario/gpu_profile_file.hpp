// tools/scenario/gpu_profile_file.hpp — the fittable efficiency constants of a GPU and the profile file
// that carries fitted values (`layoutsim calibrate --out PROFILE.yaml`).
//
// A constant is {name, lower, upper, get, set} over wl::GpuSpec, in SI units
// (launch_overhead in seconds): the kernel model's ComputeProfile constants
// (workloads/spec/compute_profile.hpp profile_constants(), bounds from there). The
// calibrator only sees this list.
//
// Profile file (YAML):
//   # origin comment (what it was fitted to, when, the fit error)
//   gpu: NAME                          the GpuSpec name it belongs to (e.g. h100-sxm)
//   constants:
//     gemm_sustained_fraction: 0.78    a plain number
//     attention_block: 128             an integer constant (rounded when set)
//     launch_overhead: 4.2 us          a time with its unit
// Unknown keys and constants are errors; values outside [lower, upper] are errors.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sim/error.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::tools {

struct TunableConstant {
  std::string name;
  double lower = 0, upper = 0;     // inclusive bounds, SI units
  bool is_time = false;            // written with a time unit in profile files
  bool integer = false;            // discrete (SM count, tile, block): set() rounds; not fitted by default
  /// A constant of the scenario's implementation (framework) profile rather than of its
  /// GPU: fitted like the others (set on every run, so fit runs of one implementation
  /// preset), but not written to GPU profile files.
  bool implementation = false;
  std::function<double(const wl::Scenario&)> get;
  std::function<void(wl::Scenario&, double)> set;
};

/// The constants of wl::GpuSpec that calibration may fit, in a fixed order.
const std::vector<TunableConstant>& gpu_constants();
/// The implementation profile's constants (workloads/spec/implementation_profile.hpp), over
/// the scenario's implementation.profile (its preset's when unset).
const std::vector<TunableConstant>& implementation_tunables();
/// gpu_constants() then implementation_tunables(): what `calibrate --fit` may name.
const std::vector<TunableConstant>& all_constants();

/// What `calibrate` fits when no --fit list is given: the continuous GPU constants.
std::vector<TunableConstant> default_fit_constants();

/// Looks a constant up by name; nullptr when unknown.
const TunableConstant* find_constant(const std::vector<TunableConstant>& table, const std::string& name);

/// A malformed or inconsistent profile file; what() starts with the file name.
struct ProfileError : UserError {
  using UserError::UserError;
  std::string message() const override { return what(); }  // already located, one error per line
};

struct GpuProfile {
  std::string gpu;                                       // GpuSpec name it applies to
  std::vector<std::pair<std::string, double>> constants; // name -> SI value, file order
};

/// Reads a profile file. Throws ProfileError (unknown key, unknown constant, value out of bounds).
GpuProfile read_profile_file(const std::string& path);
/// Parses profile text; `source` names it in messages.
GpuProfile parse_profile(const std::string& text, const std::string& source);

/// Sets every constant of `profile` on `gpu`. Throws ProfileError when gpu.name differs
/// from profile.gpu (a profile fitted on one GPU says nothing about another).
void apply_profile(wl::GpuSpec& gpu, const GpuProfile& profile);
/// read_profile_file(path), then apply_profile.
void apply_profile(wl::GpuSpec& gpu, const std::string& path);

/// The profile file text; `origin` becomes the leading comment (one "# " line per line).
std::string profile_yaml(const GpuProfile& profile, const std::string& origin);

/// A constant's value as written in profile files and reports ("4.2 us", "0.68").
std::string format_constant(const TunableConstant& c, double value);

}  // namespace ls::tools
