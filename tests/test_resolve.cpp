// tests/test_resolve.cpp — workloads/resolve.hpp: a hand-built Scenario resolves to
// exactly what the YAML loader gives for the same file; every user error is
// collected into one InvalidScenario. Numbers are preset values and exact integer
// divisions, compared exactly.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "tools/scenario/scenario.hpp"
#include "workloads/cost/hardware.hpp"
#include "workloads/resolve.hpp"
#include "workloads/simulate.hpp"

using namespace ls;
using namespace ls::wl;

namespace {

/// A 4-layer GPT on two 8-GPU nodes, tp 8; the GPU and everything derivable unset.
Scenario hand_built() {
  Scenario s;
  s.cluster.nodes = 2;
  s.cluster.gpus_per_node = 8;
  s.model.name = "small";
  s.model.layers = 4;
  s.model.hidden = 1024;
  s.model.heads = 16;
  s.model.vocab = 32000;
  s.model.seq_len = 1024;
  s.layout.tp = 8;
  s.layout.microbatches = 4;
  return s;
}

const char* const kSameAsYaml =
    "cluster: {nodes: 2, gpus_per_node: 8}\n"
    "model: {name: small, layers: 4, hidden: 1024, heads: 16, vocab: 32000, seq_len: 1024}\n"
    "layout: {tp: 8, microbatches: 4}\n";

bool has_issue(const InvalidScenario& e, const std::string& key) {
  return std::any_of(e.issues().begin(), e.issues().end(), [&](const ScenarioIssue& i) { return i.key_path == key; });
}

}  // namespace

TEST_CASE("a hand-built H100 scenario resolves to what the YAML loader gives") {
  const ResolvedScenario hand = resolve(hand_built());
  const ResolvedScenario yaml = tools::load_scenario_string(kSameAsYaml, "scenario");
  const GpuSpec h100 = *gpu_preset("h100-sxm");
  // H100 SXM: NVLink 4 at 450 GB/s per direction, one 400 Gb/s (50 GB/s) NIC per GPU.
  CHECK(hand->gpu.name == "h100-sxm");
  CHECK(hand->cluster.intra.bandwidth_Bps == h100.nvlink_bandwidth_Bps);
  CHECK(hand->cluster.intra.bandwidth_Bps == 450e9);
  CHECK(hand->cluster.inter.bandwidth_Bps == 50e9);
  CHECK(hand->layout.dp == 2);  // 16 GPUs / (tp 8 · pp 1)
  CHECK(hand->model.kv_heads == 16);
  CHECK(hand->model.ffn_hidden == 4 * 1024);
  CHECK(hand->name == "scenario");

  CHECK(yaml->gpu.name == hand->gpu.name);
  CHECK(yaml->cluster.intra.bandwidth_Bps == hand->cluster.intra.bandwidth_Bps);
  CHECK(yaml->cluster.inter.bandwidth_Bps == hand->cluster.inter.bandwidth_Bps);
  CHECK(yaml->cluster.intra.latency == hand->cluster.intra.latency);
  CHECK(yaml->cluster.inter.latency == hand->cluster.inter.latency);
  CHECK(yaml->layout.dp == hand->layout.dp);
  CHECK(yaml->model.kv_heads == hand->model.kv_heads);
  CHECK(yaml->model.ffn_hidden == hand->model.ffn_hidden);
  CHECK(yaml->precision.master == hand->precision.master);
  CHECK(yaml->name == hand->name);

  // And so the same simulation, to the picosecond.
  SimOptions o;
  o.what_if = false;
  CHECK(simulate(hand, o).step_time_s == simulate(yaml, o).step_time_s);
}

TEST_CASE("dp: auto and a global batch resolve like the loader's") {
  Scenario s = hand_built();
  s.layout.global_batch = 64;  // / (microbatch_size 1 · dp 2) = 32 micro-batches
  const ResolvedScenario r = resolve(s);
  CHECK(r->layout.dp == 2);
  CHECK(r->layout.microbatches == 32);
  const ResolvedScenario y = tools::load_scenario_string(
      std::string(kSameAsYaml) + "", "g.yaml", {"layout.dp=auto", "layout.global_batch=64"});
  CHECK(y->layout.dp == 2);
  CHECK(y->layout.microbatches == 32);
}

TEST_CASE("InvalidScenario carries every error, each with its key path") {
  Scenario s = hand_built();
  s.layout.tp = 3;     // divides neither heads (16) nor ffn_hidden (4096), nor 16 GPUs
  s.layout.zero = 5;   // 0..3
  s.layout.dp = 1;
  try {
    (void)resolve(s);
    FAIL("resolve accepted an invalid scenario");
  } catch (const InvalidScenario& e) {
    CHECK(e.issues().size() >= 3);
    CHECK(has_issue(e, "layout"));     // dp·tp·pp != devices
    CHECK(has_issue(e, "layout.tp"));  // heads
    CHECK(has_issue(e, "layout.zero"));
    const std::string what = e.what();
    CHECK(static_cast<std::size_t>(std::count(what.begin(), what.end(), '\n')) + 1 == e.issues().size());
    CHECK(what.find("layout.tp: tp (3) must divide heads (16)") != std::string::npos);
  }
}

TEST_CASE("derived values that cannot be derived are user errors") {
  Scenario s = hand_built();
  s.gpu = *gpu_preset("h100-sxm");
  s.gpu.nvlink_bandwidth_Bps = 0;
  s.gpu.nic_bandwidth_Bps = 0;
  try {
    (void)resolve(s);
    FAIL("resolve derived a bandwidth from nothing");
  } catch (const InvalidScenario& e) {
    REQUIRE(e.issues().size() == 2);
    CHECK(e.issues()[0].key_path == "cluster.intra_node.bandwidth");
    CHECK(e.issues()[1].key_path == "cluster.inter_node.bandwidth");
  }
  Scenario g = hand_built();
  g.layout.global_batch = 63;  // not a multiple of 1 · dp 2
  try {
    (void)resolve(g);
    FAIL("resolve accepted a global batch that does not divide");
  } catch (const InvalidScenario& e) {
    REQUIRE(e.issues().size() == 1);
    CHECK(e.issues()[0].key_path == "layout.global_batch");
    CHECK(e.issues()[0].hint == "try 62 or 64");
  }
}

TEST_CASE("perturbed link names are checked against the built topology") {
  Scenario s = hand_built();
  s.perturbations.links.push_back({"node0.gpu0->node0.nvswitchh", 0.5});
  try {
    (void)resolve(s);
    FAIL("resolve accepted an unknown link");
  } catch (const InvalidScenario& e) {
    REQUIRE(e.issues().size() == 1);
    CHECK(e.issues()[0].key_path == "perturbations.links[0].link");
    CHECK(e.issues()[0].hint == "did you mean 'node0.gpu0->node0.nvswitch'?");
  }
}

TEST_CASE("fp32 weights are their own master copy, by hand as from YAML") {
  Scenario s = hand_built();
  s.precision.weights = 4;
  CHECK(resolve(s)->precision.master == 0);
  CHECK(resolve(hand_built())->precision.master == 4);
  const ResolvedScenario y = tools::load_scenario_string(kSameAsYaml, "p.yaml", {"precision.weights=fp32"});
  CHECK(y->precision.master == 0);
}

TEST_CASE("resolve_variant: another layout on a resolved base resolves as resolve() does, and checks the layout's rules") {
  Scenario s = hand_built();
  s.layout.global_batch = 8;
  const ResolvedScenario base = resolve(s);
  // tp 4 · dp 4 with a global batch of 8: 2 micro-batches, as resolve() derives them.
  LayoutSpec layout = base->layout;
  layout.tp = 4;
  layout.dp = 0;
  ImplementationSpec implementation = base->implementation;
  implementation.dp_overlap = false;
  const ResolvedScenario variant = resolve_variant(base, layout, implementation);
  Scenario whole = base.scenario();
  whole.layout = layout;
  whole.implementation = implementation;
  const ResolvedScenario resolved = resolve(whole);
  CHECK(variant->layout == resolved->layout);
  CHECK(variant->layout.dp == 4);
  CHECK(variant->layout.microbatches == 2);
  CHECK(variant->implementation.dp_overlap == false);
  CHECK(simulate(variant).step_time_s == simulate(resolved).step_time_s);
  // The layout's rules, with their key paths.
  layout.tp = 3;
  try {
    (void)resolve_variant(base, layout, implementation);
    FAIL("resolve_variant accepted tp 3");
  } catch (const InvalidScenario& e) {
    CHECK(has_issue(e, "layout.tp"));
  }
}

TEST_CASE("resolve_variant leaves a step past the time range to the simulation's checked arithmetic") {
  // A GPU 10^7 times slower in compute and memory: one micro-batch takes some 10^4 to
  // 10^5 s, 4,096 of them (a 10^3-fold margin either way) are past sim::Time's 9.2e6 s.
  Scenario s = hand_built();
  s.gpu = *gpu_preset("h100-sxm");
  s.gpu.peak_flops /= 1e7;
  s.gpu.hbm_bandwidth_Bps /= 1e7;
  s.layout.microbatches = 1;
  const ResolvedScenario base = resolve(s);
  CHECK(simulate(base).step_time_s < 1e6);
  LayoutSpec layout = base->layout;
  layout.microbatches = 4096;
  Scenario whole = base.scenario();
  whole.layout = layout;
  // resolve() locates it before any simulation; resolve_variant() does not build the
  // step to bound it, and the simulation throws the range error instead.
  CHECK_THROWS_AS((void)resolve(whole), InvalidScenario);
  const ResolvedScenario variant = resolve_variant(base, layout, base->implementation);
  CHECK_THROWS_AS((void)simulate(variant), sim::TimeRangeError);
}
