// tests/test_interference.cpp — workloads/analysis/interference.hpp: compute beside a collective.
#include <doctest/doctest.h>

#include "fixtures.hpp"
#include "workloads/cost/hardware.hpp"
#include "workloads/analysis/interference.hpp"
#include "workloads/resolve.hpp"
#include "workloads/simulate.hpp"

using namespace ls::wl;

namespace {
Scenario zero3_data_parallel(double rho) {
  Scenario s;
  s.name = "interference";
  ls::test::a100_era_cluster(s, 2, 8);
  s.model = ls::test::small_model(4);
  s.layout.dp = 16;
  s.layout.zero = 3;
  s.layout.microbatches = 2;
  s.gpu = *gpu_preset("a100-80gb");
  s.gpu.compute = *compute_profile_preset("a100-80gb");
  s.gpu.compute.overlap_slowdown = rho;
  return s;
}
}  // namespace

TEST_CASE("interference: overlapped compute slows by at most rho, never speeds up") {
  const Result off = simulate(resolve(zero3_data_parallel(1)));
  const double rho = 1.5;
  const Result on = simulate(resolve(zero3_data_parallel(rho)));
  REQUIRE(off.per_stage.size() == on.per_stage.size());
  // ZeRO-3 prefetches and reduce-scatters beside compute: some of it is slowed...
  CHECK(on.per_stage[0].compute_s > off.per_stage[0].compute_s);
  // ...by at most rho (all of it overlapped). 1e-9: integer-picosecond rounding per op.
  CHECK(on.per_stage[0].compute_s <= off.per_stage[0].compute_s * rho * (1 + 1e-9));
  CHECK(on.step_time_s >= off.step_time_s);
}
