// tests/test_grad_accumulation.cpp — implementation.grad_accumulation: the add that sums
// each micro-batch's weight gradients into the step's, against closed forms.
#include <doctest/doctest.h>

#include <string>

#include "tools/scenario/scenario.hpp"
#include "workloads/build/stage_memory.hpp"
#include "workloads/simulate.hpp"

using namespace ls;

namespace {

constexpr int kMicrobatches = 4;
constexpr double kH100Hbm = 3.35e12 * 0.90;  // the part's HBM rate × the profile's hbm_fraction

// `gpus` H100s in one node, data parallel, 4 micro-batches of a small untied GPT, bf16
// weights (w = 2 B) and fp32 gradients (g = 4 B). One GPU: no communication at all.
std::string yaml(const std::string& accumulation, int gpus = 1, int zero = 0) {
  return "cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: " + std::to_string(gpus) +
         "}\n"
         "model: {layers: 4, hidden: 1024, heads: 8, ffn_hidden: 4096, vocab: 32000, seq_len: 1024, activation: gelu}\n"
         "layout: {dp: " +
         std::to_string(gpus) + ", zero: " + std::to_string(zero) + ", microbatch_size: 1, microbatches: " +
         std::to_string(kMicrobatches) +
         "}\n"
         "precision: {weights: bf16, gradients: fp32}\n"
         "implementation: {preset: megatron-core, grad_accumulation: " +
         accumulation + "}\n";
}

/// Trained parameters on the device: every layer, the embedding and the (untied) head.
double device_params(const wl::Scenario& s) {
  const wl::DeviceParams p(s);
  double total = p.trained_embedding() / s.layout.tp + p.trained_head() / s.layout.tp;
  for (int l = 0; l < s.model.layers; ++l) total += p.trained_dense(l) + p.trained_experts(l);
  return total;
}

double step(const std::string& text) {
  wl::SimOptions opt;
  opt.what_if = false;
  return wl::simulate(tools::load_scenario_string(text, "<grad accumulation>"), opt).step_time_s;
}

}  // namespace

TEST_CASE("grad_accumulation: buffer adds (w + 2g) bytes per parameter every micro-batch, autograd 3w from the second") {
  const auto fused = tools::load_scenario_string(yaml("fused"), "<fused>");
  const double P = device_params(fused.scenario());
  REQUIRE(P > 0);
  wl::SimOptions opt;
  opt.what_if = false;
  const wl::Result base = wl::simulate(fused, opt);
  // One GPU is its own slowest: the scale-noise factor is 1 (checked, since the closed
  // forms below assume it).
  REQUIRE(base.scale_noise.factor == doctest::Approx(1.0));
  // Megatron-LM 2021 / FSDP2: read the bf16 gradient, read and write the fp32 sum, m times.
  const double buffer = kMicrobatches * P * (2 + 2 * 4) / kH100Hbm;
  CHECK(step(yaml("buffer")) - base.step_time_s == doctest::Approx(buffer).epsilon(1e-6));
  // Autograd: the first micro-batch's gradient becomes .grad as it is; each later one is
  // added in place in the weights' type (read both, write the sum).
  const double autograd = (kMicrobatches - 1) * P * (3 * 2) / kH100Hbm;
  CHECK(step(yaml("autograd")) - base.step_time_s == doctest::Approx(autograd).epsilon(1e-6));
}

TEST_CASE("grad_accumulation: nothing to add where gradients are reduce-scattered every micro-batch") {
  // ZeRO-2 over 2 GPUs reduces each micro-batch's gradients as they come: the shard sums
  // them, whatever the setting; with accumulate_unsharded they are summed here again.
  CHECK(step(yaml("buffer", 2, 2)) == step(yaml("fused", 2, 2)));
  std::string kept = yaml("buffer", 2, 2), kept_fused = yaml("fused", 2, 2);
  const std::string at = "microbatches: 4";
  kept.replace(kept.find(at), at.size(), at + ", accumulate_unsharded: true");
  kept_fused.replace(kept_fused.find(at), at.size(), at + ", accumulate_unsharded: true");
  CHECK(step(kept) > step(kept_fused));
}

TEST_CASE("grad_accumulation: each preset's, and a bad value is refused with the allowed ones") {
  const auto preset = [](const std::string& name) {
    return tools::load_scenario_string("model: llama3-8b\nimplementation: {preset: " + name + "}\n", "<preset>")->implementation.grad_accumulation;
  };
  CHECK(preset("megatron-core") == wl::GradAccumulation::fused);
  CHECK(preset("megatron-lm-2021") == wl::GradAccumulation::buffer);
  CHECK(preset("deepspeed") == wl::GradAccumulation::autograd);
  CHECK(preset("pytorch-fsdp") == wl::GradAccumulation::buffer);
  try {
    (void)tools::load_scenario_string("model: llama3-8b\nimplementation: {grad_accumulation: sometimes}\n", "<bad>");
    FAIL("a bad grad_accumulation was accepted");
  } catch (const std::exception& e) {
    const std::string what = e.what();
    CHECK(what.find("implementation.grad_accumulation") != std::string::npos);
    CHECK(what.find("autograd") != std::string::npos);
  }
}
