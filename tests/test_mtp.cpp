// tests/test_mtp.cpp — multi-token prediction (model.mtp_depth, DeepSeek-V3 §2.2):
// parameters, FLOPs and placement of the MTP modules against hand arithmetic.
//
// Module d (block index layers + d) = entry (RMSNorm of the hidden state and of the
// shifted tokens' embedding, concatenation, projection 2h → h) + one transformer block
// + the shared output head with its own loss. Per module and sequence, forward model
// FLOPs = block + 2·s·2h·h (projection) + 2·s·h·V (logits); parameters = block +
// 2h² + 2·norm (embedding and head shared with the main model).
#include <doctest/doctest.h>

#include <string>

#include "fixtures.hpp"
#include "workloads/build/program_builder.hpp"
#include "workloads/cost/hardware.hpp"
#include "workloads/build/stage_layers.hpp"
#include "workloads/build/stage_memory.hpp"
#include "workloads/cost/pass_costs.hpp"
#include "workloads/layout_report.hpp"
#include "workloads/model/layout.hpp"
#include "workloads/model/model.hpp"
#include "workloads/resolve.hpp"
#include "workloads/spec/vocabulary.hpp"

using namespace ls::wl;

namespace {

/// test::preset_slice at 4 micro-batches, with `depth` MTP modules.
Scenario sliced(const char* preset, int layers, int pp, int depth) {
  Scenario s = ls::test::preset_slice(preset, layers, pp, 4);
  s.model.mtp_depth = depth;
  return s;
}

}  // namespace

TEST_CASE("MTP parameters: each module adds its block, a 2h x h projection and two norms") {
  const ModelSpec base = *model_preset("deepseek-v3");
  ModelSpec m = base;
  m.mtp_depth = 1;
  const double h = static_cast<double>(m.hidden);
  const double module = layer_params(m, m.layers) + 2 * h * h + 2 * h;  // RMSNorm: h weights each
  CHECK(total_params(m) - total_params(base) == doctest::Approx(module).epsilon(1e-12));
  // DeepSeek-V3's module (an MoE block): about 11.6 B of its own, the report's "14B" MTP
  // weights less the embedding and head copies its checkpoint stores (2 × 0.93 B).
  CHECK(module == doctest::Approx(11.61e9).epsilon(0.005));
  CHECK(block_count(m) == 62);
  CHECK(is_mtp_block(m, 61));
  CHECK_FALSE(is_mtp_block(m, 60));
}

TEST_CASE("MTP FLOPs: the ops add up to model_step_flops, which adds block, projection and logits per module") {
  for (const char* preset : {"llama3-8b", "deepseek-v3"}) {
    CAPTURE(preset);
    for (int pp : {1, 2}) {
      CAPTURE(pp);
      const Scenario s0 = sliced(preset, 4, pp, 0), s2 = sliced(preset, 4, pp, 2);
      const double B = 1.0 * s2.layout.microbatches * s2.layout.dp;  // micro-batch size 1
      const double got = layout_report(resolve(s2)).model_flops_per_step;
      CHECK(got == doctest::Approx(model_step_flops(s2.model, B)).epsilon(1e-9));
      const ModelSpec& m = s2.model;
      const double s = static_cast<double>(m.seq_len), h = static_cast<double>(m.hidden), V = static_cast<double>(m.vocab);
      double module_fwd = 0;
      for (int d = 0; d < 2; ++d)
        module_fwd += layer_costs(m, m.layers + d, 1, 1, 1, false, Recompute::none, 2).model_flops_fwd + 2 * s * 2 * h * h + 2 * s * h * V;
      CHECK(got - layout_report(resolve(s0)).model_flops_per_step == doctest::Approx(3 * B * module_fwd).epsilon(1e-9));
    }
  }
}

TEST_CASE("MTP modules run on the last stage: its layers, parameters and activations grow by the modules'") {
  const Scenario s0 = sliced("llama3-8b", 4, 2, 0), s1 = sliced("llama3-8b", 4, 2, 1);
  const StageLayers l0 = stage_layers(s0), l1 = stage_layers(s1);
  CHECK(l1.per_stage == std::vector<int>{2, 3});
  CHECK(l1.chunks[1][0].begin == 2);
  CHECK(l1.chunks[1][0].end == 5);
  CHECK(l1.chunks[0][0].end == l0.chunks[0][0].end);

  const DeviceParams p0(s0), p1(s1);
  const StageParams first0 = stage_params(s0, p0, l0.chunks[0], 0), first1 = stage_params(s1, p1, l1.chunks[0], 0);
  const StageParams last0 = stage_params(s0, p0, l0.chunks[1], 1), last1 = stage_params(s1, p1, l1.chunks[1], 1);
  const double h = static_cast<double>(s1.model.hidden);
  CHECK(first1.dense == first0.dense);
  CHECK(last1.dense - last0.dense == doctest::Approx(layer_params(s1.model) + 2 * h * h + 2 * h).epsilon(1e-12));

  // One micro-batch's activations on the last stage: the module's block keeps a
  // layer's, its entry's and its own head's logits.
  const PassBytes b1 = pass_bytes(s1);
  REQUIRE(b1.mtp_entry > 0);
  const double a0 = activation_bytes_per_microbatch(s0, pass_bytes(s0), l0.chunks[1], 1);
  const double a1 = activation_bytes_per_microbatch(s1, b1, l1.chunks[1], 1);
  CHECK(a1 - a0 == doctest::Approx(layer_activation(s0, pass_bytes(s0), 3) + b1.mtp_entry + b1.logits).epsilon(1e-12));
}

TEST_CASE("MTP refuses what it cannot model, by key") {
  Scenario s = sliced("llama3-8b", 4, 1, 1);
  s.layout.embedding_free = true;
  bool named = false;
  for (const auto& e : validate(s)) named |= e.key_path == "model.mtp_depth";
  CHECK(named);
  s = sliced("llama3-8b", 4, 1, 1);
  s.training.method = TrainingMethod::lora;
  named = false;
  for (const auto& e : validate(s)) named |= e.key_path == "model.mtp_depth";
  CHECK(named);
}
