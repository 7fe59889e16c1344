// tests/test_moe_permute.cpp — implementation.moe_permute_fusion: the bytes the MoE token
// permutations move, fused and as PyTorch ops, against hand arithmetic; the key through
// the loader, the presets and its located error.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "fixtures.hpp"
#include "scenario_fixtures.hpp"
#include "tools/scenario/scenario.hpp"
#include "workloads/cost/layer_kernels.hpp"
#include "workloads/model/model.hpp"

using namespace ls;
using namespace ls::wl;

namespace {

/// Bytes of the kernels named moe.* in one pass of layer 0, and how many there are.
double moe_bytes(const ModelSpec& m, const KernelOptions& o, LayerPass pass, int* count = nullptr) {
  double bytes = 0;
  int n = 0;
  for (const auto& k : layer_pass_kernels(m, 0, o, pass))
    if (k.name.rfind("moe.", 0) == 0) bytes += k.bytes, ++n;
  if (count) *count = n;
  return bytes;
}

}  // namespace

TEST_CASE("fused permutations: a gather and a weighted combine, P + X each way beside the gather's 2P") {
  const ModelSpec m = test::small_moe_model();
  KernelOptions o;
  o.microbatch_size = 2;
  o.ep = 4;
  o.moe_permute_fusion = true;
  // T = 2·1024 tokens, P = T·k·h·2 bytes (the pairs), X = T·h·2 (the tokens).
  const double T = 2 * 1024, P = T * 2 * 1024 * 2, X = T * 1024 * 2;
  // Forward: gather (read P, write P), combine (read P, write X).
  CHECK(moe_bytes(m, o, LayerPass::forward) == doctest::Approx(2 * P + P + X).epsilon(1e-14));
  // Backward: the gather's gradient (P + X), the combine's (X + 2P).
  CHECK(moe_bytes(m, o, LayerPass::backward_input) == doctest::Approx(P + X + X + 2 * P).epsilon(1e-14));
}

TEST_CASE("PyTorch-op permutations: 8P + 3X more, and 8P more again when a rank holds several experts") {
  const ModelSpec m = test::small_moe_model();
  KernelOptions o;
  o.microbatch_size = 2;
  o.ep = 4;  // 16 / 4 = 4 local experts: the received tokens are regrouped by expert
  const double T = 2 * 1024, P = T * 2 * 1024 * 2, X = T * 1024 * 2;
  o.moe_permute_fusion = true;
  const double fused = moe_bytes(m, o, LayerPass::forward) + moe_bytes(m, o, LayerPass::backward_input);
  o.moe_permute_fusion = false;
  int fwd_kernels = 0, bwd_kernels = 0;
  const double fwd = moe_bytes(m, o, LayerPass::forward, &fwd_kernels);
  const double bwd = moe_bytes(m, o, LayerPass::backward_input, &bwd_kernels);
  // Forward: index_select 2P; regroup and back 2P + 2P; P·probs 2P, zeros X, scatter_add
  // P + 2X. Backward: index_select's gradient zeros X and index-adds P (P + 3X); the two
  // regroupings' cats 2P + 2P; scatter_add's gather 2P; the product's gradients 2P, 3P, P.
  CHECK(fwd == doctest::Approx(2 * P + 4 * P + 2 * P + X + P + 2 * X).epsilon(1e-14));
  CHECK(bwd == doctest::Approx(P + 3 * X + 4 * P + 2 * P + 2 * P + 3 * P + P).epsilon(1e-14));
  CHECK(fwd + bwd - fused == doctest::Approx(16 * P + 3 * X).epsilon(1e-14));
  CHECK(fwd_kernels == 6);
  CHECK(bwd_kernels == 7);
  // One expert per rank: nothing to regroup.
  o.ep = 16;
  CHECK(moe_bytes(m, o, LayerPass::forward) + moe_bytes(m, o, LayerPass::backward_input) - fused ==
        doctest::Approx(8 * P + 3 * X).epsilon(1e-14));
}

TEST_CASE("the permutations keep what they kept: the expert outputs for the probabilities' gradient") {
  const ModelSpec m = test::small_moe_model();
  KernelOptions o;
  o.ep = 4;
  o.moe_permute_fusion = true;
  const double fused = layer_activation_bytes(m, 0, o);
  o.moe_permute_fusion = false;
  CHECK(layer_activation_bytes(m, 0, o) == doctest::Approx(fused).epsilon(1e-14));
}

TEST_CASE("moe_permute_fusion: false in every preset, true when a scenario says so, a located error otherwise") {
  const std::string base = "model: mixtral-8x7b\nlayout: {tp: 1, pp: 1, dp: 8, ep: 8}\n";
  const auto load = [&](const std::string& implementation, const std::string& name) {
    return test::with_implementation(base, implementation, name);
  };
  for (const char* preset : {"megatron-core", "megatron-lm-2021", "deepspeed", "pytorch-fsdp"})
    CHECK_FALSE(load(std::string("preset: ") + preset, "<preset>")->implementation.moe_permute_fusion);
  CHECK(load("moe_permute_fusion: true", "<on>")->implementation.moe_permute_fusion);
  const std::string what = test::scenario_error([&] { (void)load("moe_permute_fusion: sometimes", "bad.yaml"); });
  REQUIRE_MESSAGE(!what.empty(), "a bad moe_permute_fusion was accepted");
  CHECK(what.find("bad.yaml:3:") != std::string::npos);
  CHECK(what.find("implementation.moe_permute_fusion") != std::string::npos);
}
