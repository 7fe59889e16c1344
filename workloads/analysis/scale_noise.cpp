// workloads/analysis/scale_noise.cpp — the expected maximum of N standard normals.
#include "workloads/analysis/scale_noise.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace ls::wl {

double expected_max_standard_normal(long n) {
  if (n <= 1) return 0.0;
  // The density of the maximum is n φ(x) Φ(x)^(n−1); Φ(x)^(n−1) is taken as
  // exp((n−1) log Φ(x)) so that it neither underflows early nor loses the tail.
  constexpr double lo = -12.0, hi = 12.0;
  constexpr int intervals = 4800;  // even, for Simpson's rule
  const double h = (hi - lo) / intervals;
  const double nn = static_cast<double>(n);
  auto integrand = [nn](double x) {
    const double phi = std::exp(-0.5 * x * x) / std::sqrt(2 * std::numbers::pi);
    const double cdf = 0.5 * std::erfc(-x / std::numbers::sqrt2);
    if (cdf <= 0) return 0.0;
    return x * nn * phi * std::exp((nn - 1) * std::log(cdf));
  };
  double sum = integrand(lo) + integrand(hi);
  for (int i = 1; i < intervals; ++i) sum += (i % 2 ? 4.0 : 2.0) * integrand(lo + i * h);
  return sum * h / 3;
}

double scale_noise_factor(double cv, long devices) {
  if (!(cv > 0)) return 1.0;
  return 1.0 + cv * expected_max_standard_normal(devices);
}

void fold_scale_noise(Result& res, double variability, double factor, bool have_critical_path) {
  res.scale_noise.variability = std::max(0.0, variability);
  res.scale_noise.factor = factor;
  double compute_on_path = 0;
  if (have_critical_path) compute_on_path = res.critical_path.compute_s;
  else
    for (const auto& st : res.per_stage) compute_on_path = std::max(compute_on_path, st.compute_s);
  res.scale_noise.cost_s = compute_on_path * (1 - 1 / factor);
}

}  // namespace ls::wl
