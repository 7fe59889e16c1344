// tests/test_moe_router.cpp — implementation.moe_router_fusion: the router's kernels after
// its GEMM, as Megatron-Core's PyTorch ops and fused, counted and sized against the op
// list by hand; their cost is their launches; the key through the loader and check.
#include <doctest/doctest.h>

#include <string>

#include "fixtures.hpp"
#include "tools/report/summary.hpp"
#include "scenario_fixtures.hpp"
#include "tools/scenario/scenario.hpp"
#include "workloads/layout_report.hpp"
#include "workloads/cost/kernels.hpp"
#include "workloads/cost/layer_kernels.hpp"
#include "workloads/model/model.hpp"

using namespace ls;
using namespace ls::wl;

namespace {

struct Tally {
  int kernels = 0;
  double bytes = 0;
};

/// The kernels of one pass of layer 0 whose names start with `prefix`.
Tally tally(const ModelSpec& m, const KernelOptions& o, LayerPass pass, std::string_view prefix) {
  Tally t;
  for (const auto& k : layer_pass_kernels(m, 0, o, pass))
    if (std::string_view(k.name).substr(0, prefix.size()) == prefix && k.kind == KernelKind::memory) {
      ++t.kernels;
      t.bytes += k.bytes;
    }
  return t;
}

}  // namespace

TEST_CASE("router as PyTorch ops: Megatron-Core's TopKRouter, op by op") {
  KernelOptions o;
  o.microbatch_size = 2;
  o.ep = 4;
  // Tn = 2048 tokens, E = 16: R = 32,768 logits; 4,096 chosen pairs; bf16 logits (a = 2).
  const double R = 2048.0 * 16, K = 2048.0 * 2, a = 2;
  // Dropless. Forward: top-k, softmax, cast; gates zeros, clone, scatter; map zeros, int,
  // clone, scatter, bool; tokens per expert; aux softmax, column sums, product, sum,
  // scale; the tracker's divide and add: 19 kernels.
  const Tally fwd = tally(test::small_moe_model(), o, LayerPass::forward, "router.");
  CHECK(fwd.kernels == 19);
  const double expected_fwd = (R * a + K * (a + 8)) + K * (a + 4) + K * (4 + a) + R * a + 2 * R * a + K * (8 + 2 * a) +
                              R * a + R * (a + 4) + 2 * R * 4 + K * (8 + 4) + R * 5 + R + R * (a + 4) + R * 4 +
                              3 * 16 * 4 + 16 * 4 + 2 * 4 + 2 * 4 + 3 * 4;
  CHECK(fwd.bytes == doctest::Approx(expected_fwd).epsilon(1e-14));
  // Backward: the top-k's zeros and scatter and the logits' two gradients added; the
  // softmax and its cast; the gates' gather; the aux softmax and its cast; the aux
  // scale's and product's: 10 kernels.
  CHECK(tally(test::small_moe_model(), o, LayerPass::backward_input, "router.").kernels == 10);
  // Token dropping adds the top-k over tokens and its masks: 7 forward, 1 backward.
  CHECK(tally(test::small_moe_model(1.0), o, LayerPass::forward, "router.").kernels == 19 + 7);
  CHECK(tally(test::small_moe_model(1.0), o, LayerPass::backward_input, "router.").kernels == 10 + 1);
  // The all-to-all dispatcher's split counts, with expert parallelism only.
  CHECK(tally(test::small_moe_model(), o, LayerPass::forward, "dispatch.").kernels == 6);
  o.ep = 1;
  CHECK(tally(test::small_moe_model(), o, LayerPass::forward, "dispatch.").kernels == 0);
}

TEST_CASE("fused router: three kernels each way, and the difference is launches") {
  KernelOptions o;
  o.microbatch_size = 2;
  o.ep = 4;
  const ModelSpec m = test::small_moe_model();
  o.moe_router_fusion = true;
  CHECK(tally(m, o, LayerPass::forward, "router.").kernels == 3);
  CHECK(tally(m, o, LayerPass::backward_input, "router.").kernels == 3);
  // Timed on H100: every router kernel moves well under a microsecond of HBM traffic
  // (at most 2·R·a + ... ≈ 0.4 MB), so each costs its launch: the unfused router's 29
  // kernels against the fused 6 differ by 23 launches, within the kernels' own bytes.
  const auto profile = *compute_profile_preset("h100-sxm");
  const auto gpu = *gpu_preset("h100-sxm");
  auto router_time = [&](bool fused) {
    o.moe_router_fusion = fused;
    double seconds = 0;
    for (auto pass : {LayerPass::forward, LayerPass::backward_input}) {
      auto ks = layer_pass_kernels(m, 0, o, pass);
      time_kernels(profile, gpu, ks, 2);
      for (const auto& k : ks)
        if (std::string_view(k.name).rfind("router.", 0) == 0 && k.kind == KernelKind::memory) seconds += k.total().seconds();
    }
    return seconds;
  };
  const double launches = 23 * profile.launch_overhead_s;
  const double gap = router_time(false) - router_time(true);
  CHECK(gap >= launches);
  CHECK(gap <= launches + 1e-6);
}

TEST_CASE("the router keeps what its backward reads: indices and softmax outputs, or the fused kernels' state") {
  KernelOptions o;
  o.microbatch_size = 2;
  o.ep = 4;
  const ModelSpec m = test::small_moe_model();
  const double R = 2048.0 * 16, K = 2048.0 * 2;
  const double unfused = layer_activation_bytes(m, 0, o);
  o.moe_router_fusion = true;
  const double fused = layer_activation_bytes(m, 0, o);
  // Unfused: the top-k's int64 indices and its fp32 softmax (K·12), the aux loss's fp32
  // softmax (R·4). Fused: TransformerEngine's probabilities and map (R·5), its aux scores (R·4).
  CHECK(unfused - fused == doctest::Approx(K * 12 + R * 4 - R * 9).epsilon(1e-12));
}

TEST_CASE("moe_router_fusion: false in every preset, shown by check, a located error when malformed") {
  const std::string base = "model: mixtral-8x7b\nlayout: {tp: 1, pp: 1, dp: 8, ep: 8}\n";
  const auto load = [&](const std::string& implementation, const std::string& name) {
    return test::with_implementation(base, implementation, name);
  };
  for (const char* preset : {"megatron-core", "megatron-lm-2021", "deepspeed", "pytorch-fsdp"})
    CHECK_FALSE(load(std::string("preset: ") + preset, "<preset>")->implementation.moe_router_fusion);
  const auto on = load("moe_router_fusion: true", "<on>");
  CHECK(on->implementation.moe_router_fusion);
  const auto check = [](const ResolvedScenario& s) { return tools::format_layout_report(*s, layout_report(s)); };
  CHECK(check(on).find("moe router           fused (top-k with softmax, aux-loss scores, aux loss): 6 kernels") !=
        std::string::npos);
  // Mixtral's E = 8, dropless, ep 8: 19 forward and 10 backward router kernels.
  CHECK(check(load("preset: megatron-core", "<off>")).find("PyTorch ops (top-k, softmax, masks, aux loss): 29 kernels") !=
        std::string::npos);
  const std::string what = test::scenario_error([&] { (void)load("moe_router_fusion: maybe", "bad.yaml"); });
  REQUIRE_MESSAGE(!what.empty(), "a bad moe_router_fusion was accepted");
  CHECK(what.find("bad.yaml:3:") != std::string::npos);
  CHECK(what.find("implementation.moe_router_fusion") != std::string::npos);
}
