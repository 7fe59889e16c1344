// tests/test_grouped_gemm.cpp — implementation.grouped_gemm: a layer's local experts' GEMMs
// as one kernel per expert or one grouped kernel; the difference is launches, exactly.
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

/// Seconds of layer 0's expert GEMMs (up, down: forward, dgrad, wgrad) on H100, and
/// their launches alone.
std::pair<double, double> expert_gemms(const KernelOptions& o) {
  const auto profile = *compute_profile_preset("h100-sxm");
  const auto gpu = *gpu_preset("h100-sxm");
  double total = 0, launch = 0;
  for (auto pass : {LayerPass::forward, LayerPass::backward_input, LayerPass::backward_weight}) {
    auto ks = layer_pass_kernels(test::small_moe_model(), 0, o, pass);
    time_kernels(profile, gpu, ks, 2);
    for (const auto& k : ks)
      if (std::string_view(k.name).rfind("expert.", 0) == 0 && k.kind == KernelKind::gemm) {
        total += k.total().seconds();
        launch += k.launch.seconds();
      }
  }
  return {total, launch};
}

}  // namespace

TEST_CASE("per-expert GEMMs: each of the six expert GEMMs pays a launch per local expert, the work unchanged") {
  KernelOptions o;
  o.microbatch_size = 2;
  o.ep = 4;  // 16 / 4 = 4 local experts
  o.grouped_gemm_per_expert = false;
  const auto [grouped, grouped_launch] = expert_gemms(o);
  o.grouped_gemm_per_expert = true;
  const auto [per_expert, per_expert_launch] = expert_gemms(o);
  const double launch = compute_profile_preset("h100-sxm")->launch_overhead_s;
  CHECK(grouped_launch == doctest::Approx(6 * launch).epsilon(1e-9));
  CHECK(per_expert_launch == doctest::Approx(6 * 4 * launch).epsilon(1e-9));
  CHECK(per_expert - grouped == doctest::Approx(6 * 3 * launch).epsilon(1e-9));
  // One expert per rank: one GEMM either way.
  o.ep = 16;
  const double one = expert_gemms(o).first;
  o.grouped_gemm_per_expert = false;
  CHECK(expert_gemms(o).first == doctest::Approx(one).epsilon(1e-12));
}

TEST_CASE("grouped_gemm: per-expert in Megatron-Core, DeepSpeed, Megatron-LM; single-kernel in pytorch-fsdp; a located error") {
  const std::string base = "model: mixtral-8x7b\nlayout: {tp: 1, pp: 1, dp: 8, ep: 8}\n";
  const auto load = [&](const std::string& implementation, const std::string& name) {
    return test::with_implementation(base, implementation, name);
  };
  for (const char* preset : {"megatron-core", "megatron-lm-2021", "deepspeed"})
    CHECK(load(std::string("preset: ") + preset, "<preset>")->implementation.grouped_gemm == GroupedGemm::per_expert);
  CHECK(load("preset: pytorch-fsdp", "<fsdp>")->implementation.grouped_gemm == GroupedGemm::single_kernel);
  const auto single = load("grouped_gemm: single-kernel", "<set>");
  CHECK(single->implementation.grouped_gemm == GroupedGemm::single_kernel);
  // check says which, with the local expert count (8 experts over ep 8: one each).
  CHECK(tools::format_layout_report(*single, layout_report(single)).find("one grouped kernel for all local experts (1 local expert)") !=
        std::string::npos);
  const std::string what = test::scenario_error([&] { (void)load("grouped_gemm: batched", "bad.yaml"); });
  REQUIRE_MESSAGE(!what.empty(), "a bad grouped_gemm was accepted");
  CHECK(what.find("bad.yaml:3:") != std::string::npos);
  CHECK(what.find("implementation.grouped_gemm") != std::string::npos);
  CHECK(what.find("per-expert") != std::string::npos);
}
