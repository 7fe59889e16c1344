// tests/test_axis_comm.cpp — workloads/analysis/axis_comm.hpp: each axis's bytes per
// device, per FLOP and at its slowest link, as `check` and `run` report them.
//
// Closed forms: Megatron's TP sends 2 ring all-reduces of S = b·s·h·2 bytes per layer
// per pass, 2(t−1)/t·S per member each; the slowest link is the cluster's stated rate,
// so the time at it is bytes / rate exactly. The tolerance 1e-12 is a few ulps of sums
// of a few hundred doubles. Compute seconds are the program's nominal durations, which
// a run reproduces when nothing slows compute (no collective CTAs, no scale noise).
#include <doctest/doctest.h>

#include "fixtures.hpp"
#include "workloads/layout_report.hpp"
#include "workloads/simulate.hpp"
#include "workloads/spec/vocabulary.hpp"

using namespace ls;
using namespace ls::wl;

namespace {

const AxisComm& axis(const LayoutReport& r, Axis a) { return r.comm[static_cast<int>(a)]; }
const AxisComm& axis(const Result& r, Axis a) { return r.comm[static_cast<int>(a)]; }

/// Nothing slows compute in the run: collectives take no SMs, every GPU at one speed.
Scenario nominal(Scenario s) {
  s.gpu.compute = *compute_profile_preset(s.gpu.name);
  s.gpu.compute.collective_ctas = 0;
  s.implementation.compute_variability = 0;
  return s;
}

}  // namespace

TEST_CASE("TP on one node: 4 ring all-reduces of b·s·h·2 bytes per layer, at the NVSwitch rate, per FLOP of the device") {
  for (int t : {2, 4, 8}) {
    CAPTURE(t);
    Scenario s = nominal(test::cluster_scenario(1, 8 / t, t, 1, 4));
    s.layout.embedding_free = true;
    const ResolvedScenario rs = resolve(s);
    const LayoutReport rep = layout_report(rs);
    const AxisComm& tp = axis(rep, Axis::tp);
    const double S = 1.0 * 1024 * 1024 * 2;  // b=1, s=1024, h=1024, bf16
    const double bytes = 16.0 * 4 * 4 * 2.0 * (t - 1) / t * S;  // 16 layers, 4 micro-batches
    REQUIRE(tp.present);
    CHECK(tp.bytes_per_device == doctest::Approx(bytes).epsilon(1e-12));
    CHECK(tp.slowest_link_Bps == 300e9);  // a100_era_cluster's NVSwitch rate per GPU
    CHECK(tp.time_at_slowest_link_s == doctest::Approx(bytes / 300e9).epsilon(1e-12));
    const double flops_per_device = rep.hardware_flops_per_step / rep.devices;
    CHECK(tp.hardware_flops_per_device == doctest::Approx(flops_per_device).epsilon(1e-12));
    CHECK(tp.bytes_per_flop == doctest::Approx(bytes / flops_per_device).epsilon(1e-12));
    CHECK(tp.comm_to_compute == doctest::Approx(tp.time_at_slowest_link_s / tp.compute_s).epsilon(1e-12));
    // No pipeline, one node: nothing else crosses a link but dp's gradients.
    CHECK_FALSE(axis(rep, Axis::pp).present);

    // The run reports the same figures; its bytes are the engine's own count and its
    // compute the simulated stage's, both equal to the program's here.
    const Result run = simulate(rs);
    const AxisComm& rtp = axis(run, Axis::tp);
    CHECK(rtp.bytes_per_device == doctest::Approx(tp.bytes_per_device).epsilon(1e-12));
    CHECK(rtp.bytes_per_flop == tp.bytes_per_flop);
    CHECK(rtp.comm_to_compute == tp.comm_to_compute);
    CHECK(run.per_stage[0].compute_s == doctest::Approx(tp.compute_s).epsilon(1e-9));
  }
}

TEST_CASE("DP over two nodes: every gradient byte times at the InfiniBand rail, the run counting the same bytes") {
  const ResolvedScenario rs = resolve(nominal(test::cluster_scenario(2, 16, 1, 1, 2)));
  const LayoutReport rep = layout_report(rs);
  const AxisComm& dp = axis(rep, Axis::dp);
  REQUIRE(dp.present);
  CHECK(dp.slowest_link_kind == "infiniband");
  CHECK(dp.slowest_link_Bps == 25e9);  // a100_era_cluster's rail
  CHECK(dp.time_at_slowest_link_s == doctest::Approx(dp.bytes_per_device / 25e9).epsilon(1e-12));
  const Result run = simulate(rs);
  CHECK(axis(run, Axis::dp).bytes_per_device == doctest::Approx(dp.bytes_per_device).epsilon(1e-12));
  // A data-parallel step's gradients are a few bytes per thousand FLOPs at this batch:
  // 2(d−1)/d · 4 B per parameter against 6 · tokens FLOPs per parameter (at least).
  const double tokens_per_device = 2.0 * 1024;
  CHECK(dp.bytes_per_flop < 2.0 * 4 / (6 * tokens_per_device) * 1.01);
}

TEST_CASE("an axis whose traffic crosses no link (free communication) has no slowest link and no time at it") {
  const LayoutReport rep = layout_report(resolve(test::uniform_pipeline(4, 8)));
  const AxisComm& pp = axis(rep, Axis::pp);
  REQUIRE(pp.present);
  CHECK(pp.bytes_per_device > 0);
  CHECK(pp.slowest_link_Bps == 0);
  CHECK(pp.time_at_slowest_link_s == 0);
  CHECK(pp.comm_to_compute == 0);
}
