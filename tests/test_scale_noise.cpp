// tests/test_scale_noise.cpp — workloads/analysis/scale_noise.hpp: the slowest of N GPUs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>

#include "fixtures.hpp"
#include "workloads/analysis/scale_noise.hpp"
#include "workloads/cost/hardware.hpp"
#include "workloads/resolve.hpp"
#include "workloads/simulate.hpp"

using namespace ls::wl;

TEST_CASE("the expected maximum of N standard normals: closed forms and a seeded sample") {
  CHECK(expected_max_standard_normal(1) == 0.0);
  // E[max of 2] = 1/√π, E[max of 3] = 3/(2√π) (order statistics of the normal).
  CHECK(expected_max_standard_normal(2) == doctest::Approx(1 / std::sqrt(std::numbers::pi)).epsilon(1e-9));
  CHECK(expected_max_standard_normal(3) == doctest::Approx(1.5 / std::sqrt(std::numbers::pi)).epsilon(1e-9));
  // Tabulated: 1.5387 (5), 3.0775 (1000).
  CHECK(expected_max_standard_normal(5) == doctest::Approx(1.16296).epsilon(1e-4));
  CHECK(expected_max_standard_normal(1000) == doctest::Approx(3.24144).epsilon(1e-4));
  // Grows without bound but slowly, as √(2 ln N) does.
  double last = 0;
  for (long n : {2L, 8L, 64L, 512L, 4096L, 16384L, 1L << 20}) {
    const double e = expected_max_standard_normal(n);
    CHECK(e > last);
    CHECK(e < std::sqrt(2 * std::log(static_cast<double>(n))));
    last = e;
  }
  // A seeded sample: the mean of 2,000 maxima of 256 normals within 4 standard errors.
  std::mt19937_64 rng(7);
  std::normal_distribution<double> z;
  const int trials = 2000, n = 256;
  double sum = 0, sum2 = 0;
  for (int t = 0; t < trials; ++t) {
    double m = -1e9;
    for (int i = 0; i < n; ++i) m = std::max(m, z(rng));
    sum += m;
    sum2 += m * m;
  }
  const double mean = sum / trials, sd = std::sqrt(sum2 / trials - mean * mean);
  CHECK(std::abs(mean - expected_max_standard_normal(n)) < 4 * sd / std::sqrt(static_cast<double>(trials)));
}

TEST_CASE("scale noise slows every rank's compute by 1 + cv·E[max of N]") {
  CHECK(scale_noise_factor(0, 4096) == 1.0);
  CHECK(scale_noise_factor(0.02, 1) == 1.0);
  CHECK(scale_noise_factor(0.02, 2) == doctest::Approx(1 + 0.02 / std::sqrt(std::numbers::pi)).epsilon(1e-12));
  // A data-parallel step with no collective overlapping compute (interference off): its
  // compute grows by exactly the factor, and the reported cost is what it added.
  auto scenario = [](double cv) {
    Scenario s = ls::test::a100_data_parallel(0, 0);
    s.implementation.compute_variability = cv;
    return s;
  };
  const Result off = simulate(resolve(scenario(0)));
  const Result on = simulate(resolve(scenario(0.02)));
  const double factor = 1 + 0.02 * expected_max_standard_normal(16);
  CHECK(off.scale_noise.factor == 1.0);
  CHECK(off.scale_noise.cost_s == 0.0);
  CHECK(on.scale_noise.factor == doctest::Approx(factor).epsilon(1e-12));
  // Integer-picosecond rounding per op: 1e-6 relative.
  CHECK(on.per_stage[0].compute_s == doctest::Approx(off.per_stage[0].compute_s * factor).epsilon(1e-6));
  // The reported cost is the critical path's compute beyond its nominal time, and it is
  // what the step grew by: the path's compute grew by the factor, its communication not.
  CHECK(on.scale_noise.cost_s == doctest::Approx(on.critical_path.compute_s * (1 - 1 / factor)).epsilon(1e-12));
  CHECK(on.scale_noise.cost_s == doctest::Approx(on.step_time_s - off.step_time_s).epsilon(1e-3));
  // Unset, the preset's spread applies.
  Scenario preset = scenario(0);
  preset.implementation.compute_variability = -1;
  CHECK(resolve(preset).scenario().implementation.compute_variability > 0);
}
