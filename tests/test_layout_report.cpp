// tests/test_layout_report.cpp — workloads/layout_report.hpp: `check` totals are the sums of the ops
// `run` replays, so the two agree; program_builder.hpp: no empty collectives.
#include <doctest/doctest.h>

#include <cmath>

#include "fixtures.hpp"
#include "workloads/model/model.hpp"
#include "workloads/build/program_builder.hpp"
#include "workloads/simulate.hpp"

using namespace ls::wl;
using ls::test::small_model;

namespace {

Scenario dense(int nodes, int dp, int tp, int pp, int m) {
  Scenario s = ls::test::cluster_scenario(nodes, dp, tp, pp, m);
  s.cluster.ideal_network = true;  // totals do not depend on the network
  return s;
}

/// A preset MoE model on one node of 8 H100s, dp 8 with ep 8, trimmed to `layers`
/// layers so that it simulates in milliseconds.
Scenario moe_preset(const char* preset, int layers) { return ls::test::preset_slice(preset, layers); }

/// `check` and `run` report the same FLOPs and memory: both are sums over the ops.
void check_agrees_with_run(const Scenario& s) {
  const ResolvedScenario resolved = resolve(s);
  const LayoutReport p = layout_report(resolved);
  SimOptions o;
  o.what_if = false;
  const Result r = simulate(resolved, o);
  // Same terms, added in a different order (per stage, then per rank): 1e-12 covers the rounding.
  CHECK(p.model_flops_per_step == doctest::Approx(r.model_flops_per_step).epsilon(1e-12));
  CHECK(p.hardware_flops_per_step == doctest::Approx(r.hardware_flops_per_step).epsilon(1e-12));
  CHECK(p.model_flops_per_step > 0);
  REQUIRE(p.memory_per_stage.size() == r.memory_per_stage.size());
  for (std::size_t st = 0; st < p.memory_per_stage.size(); ++st) {
    CAPTURE(st);
    // Integer byte deltas summed in the same order: exact.
    CHECK(p.memory_per_stage[st].activations == r.memory_per_stage[st].activations);
    CHECK(p.memory_per_stage[st].peak == r.memory_per_stage[st].peak);
  }
}

}  // namespace

TEST_CASE("check and run agree: dense, 1f1b with tp, pp and dp") {
  check_agrees_with_run(dense(2, 2, 4, 2, 4));
}

TEST_CASE("check and run agree: interleaved 1f1b with full recompute") {
  Scenario s = dense(1, 1, 2, 4, 8);
  s.layout.schedule = Schedule::interleaved_1f1b;
  s.layout.virtual_stages = 2;
  s.layout.recompute = Recompute::full;
  check_agrees_with_run(s);
}

TEST_CASE("check and run agree: ZeRO-3 and zb-h1") {
  Scenario s = dense(1, 4, 1, 2, 4);
  s.layout.zero = 3;
  check_agrees_with_run(s);
  s.layout.schedule = Schedule::zb_h1;
  check_agrees_with_run(s);
}

TEST_CASE("check and run agree: Mixtral and DeepSeek-V3 presets, balanced and skewed routing") {
  for (const char* preset : {"mixtral-8x7b", "deepseek-v3"}) {
    CAPTURE(preset);
    Scenario s = moe_preset(preset, 4);
    check_agrees_with_run(s);
    s.model.moe.routing = RoutingKind::zipf;
    check_agrees_with_run(s);
  }
}

TEST_CASE("MoE model FLOPs per step: 3 x forward x global batch, experts at top_k") {
  // model_step_flops (model.hpp) prices every layer as what it is (dense or MoE with
  // top_k routed experts): the ops must add up to it. The old analytic total priced
  // MoE layers as dense ones (Mixtral: 25.75 instead of 43.48 PFLOP per step).
  for (const char* preset : {"mixtral-8x7b", "deepseek-v3"}) {
    CAPTURE(preset);
    const Scenario s = moe_preset(preset, 4);
    const double global_batch = 1.0 * s.layout.microbatches * s.layout.microbatch_size * s.layout.dp;
    CHECK(layout_report(resolve(s)).model_flops_per_step == doctest::Approx(model_step_flops(s.model, global_batch)).epsilon(1e-9));
  }
}

TEST_CASE("no 0-byte gradient all-reduce when the bucket size divides the gradients") {
  // Bucket = exactly one layer's gradients: every layer fills a bucket, so the
  // end-of-backward flush has nothing left and must not issue a collective.
  Scenario s = dense(1, 8, 1, 1, 2);
  s.layout.embedding_free = true;
  s.layout.dp_bucket_bytes = layer_params(s.model) * s.precision.gradients;
  const BuiltProgram bp = build_program(resolve(s));
  int syncs = 0;
  for (const auto& op : bp.program.stages[0].streams[static_cast<std::size_t>(ls::wl::stream::dp)]) {
    CHECK(op.bytes > 0);
    syncs += ls::wl::work_of(op) == ls::wl::Work::grad_sync ? 1 : 0;
  }
  CHECK(syncs == s.model.layers);
}
