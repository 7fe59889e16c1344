// tests/test_finetune.cpp — frozen parameters and LoRA (workloads/cost/training_method.hpp),
// checkpoint cost and Young/Daly goodput (workloads/build/checkpoint.hpp), and `reshard`
// (tools/study/reshard.hpp), against closed forms.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "tools/study/reshard.hpp"
#include "tools/scenario/scenario.hpp"
#include "workloads/build/checkpoint.hpp"
#include "workloads/model/model.hpp"
#include "workloads/cost/pass_costs.hpp"
#include "workloads/layout_report.hpp"
#include "workloads/simulate.hpp"
#include "workloads/cost/training_method.hpp"

using namespace ls;

namespace {

/// Llama-3-8B on one node of `gpus` H100s with the given layout and extra YAML.
std::string yaml(const std::string& layout, const std::string& extra = "", int gpus = 8) {
  return "model: llama3-8b\ncluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: " + std::to_string(gpus) + "}\nlayout: " + layout +
         "\n" + extra;
}

wl::ResolvedScenario load(const std::string& text) { return tools::load_scenario_string(text, "t.yaml"); }

}  // namespace

TEST_CASE("checkpoint bytes = trained parameters × (weights + master + optimizer) bytes") {
  // Llama-3-8B, 18 B/param precision: gradients are not saved, so 2 + 4 + 8 = 14 B/param.
  const auto s = load(yaml("{tp: 2, pp: 2, dp: 2, zero: 1}", "checkpoint: {every: 500 steps, storage_bandwidth: 20 GB/s}\n"));
  const double N = wl::total_params(s->model);
  const wl::CheckpointReport c = wl::checkpoint_report(s, 2.0);
  CHECK(c.bytes_total == doctest::Approx(14 * N).epsilon(1e-12));
  CHECK(c.bytes_weights == doctest::Approx(2 * N).epsilon(1e-12));
  CHECK(c.shards == 8);
  // The shards add up to the checkpoint: Σ over stages of one rank's shard × tp × dp.
  double sum = 0;
  for (double b : c.shard_bytes_per_stage) sum += b * 2 * 2;
  CHECK(sum == doctest::Approx(c.bytes_total).epsilon(1e-9));
  // Interval: 500 steps of 2 s; synchronous stall = save = max(total / A, node bytes / P),
  // P = A / nodes = A here, node bytes = 8 × the largest shard ≥ the total.
  CHECK(c.interval_s == doctest::Approx(1000));
  CHECK(c.save_s == doctest::Approx(8 * c.bytes_per_rank_max / 20e9).epsilon(1e-12));
  CHECK(c.stall_s == c.save_s);
  CHECK(c.overhead_fraction == doctest::Approx(c.save_s / (1000 + c.save_s)));
}

TEST_CASE("a save longer than its interval: the stall's share of wall-clock time stays a fraction") {
  // Every step checkpointed; at 0.1 GB/s a save takes far longer than one 2 s step.
  const auto s = load(yaml("{tp: 8}", "checkpoint: {every: 1 steps, storage_bandwidth: 0.1 GB/s}\n"));
  const wl::CheckpointReport c = wl::checkpoint_report(s, 2.0);
  REQUIRE(c.stall_s > c.interval_s);
  CHECK(c.overhead_fraction == doctest::Approx(c.stall_s / (2.0 + c.stall_s)));
  CHECK(c.overhead_fraction < 1);
}

TEST_CASE("async checkpoints stall for the GPU->host copy only") {
  const auto s = load(yaml("{tp: 8}", "checkpoint: {every: 30 min, storage_bandwidth: 20 GB/s, async: true}\n"));
  const wl::CheckpointReport c = wl::checkpoint_report(s, 2.0);
  CHECK(c.interval_s == 1800);
  CHECK(c.interval_steps == doctest::Approx(900));
  // One rank's eighth over PCIe Gen5 x16 (64 GB/s).
  CHECK(c.copy_s == doctest::Approx(c.bytes_total / 8 / 64e9).epsilon(1e-9));
  CHECK(c.stall_s == doctest::Approx(c.copy_s));  // the write (≈ 6 s) ends well inside the interval
  CHECK(c.host_bytes_per_node == doctest::Approx(c.bytes_total).epsilon(1e-9));
}

TEST_CASE("Young/Daly: optimal interval sqrt(2·C·M) and first-order goodput") {
  // C = 100 s, M = 1e6 s: τ* = √(2e8) = 14142.1 s; at τ*, C/τ* = τ*/(2M) = 0.0070711.
  const double tau = wl::young_daly_interval(100, 1e6);
  CHECK(tau == doctest::Approx(std::sqrt(2e8)).epsilon(1e-12));
  CHECK(wl::expected_goodput(tau, 100, 0, 1e6) == doctest::Approx(1 - 2 * 0.00707107).epsilon(1e-6));
  CHECK(wl::expected_goodput(tau, 100, 500, 1e6) == doctest::Approx(1 - 2 * 0.00707107 - 5e-4).epsilon(1e-6));
  // τ* maximises the goodput.
  CHECK(wl::expected_goodput(tau / 2, 100, 0, 1e6) < wl::expected_goodput(tau, 100, 0, 1e6));
  CHECK(wl::expected_goodput(tau * 2, 100, 0, 1e6) < wl::expected_goodput(tau, 100, 0, 1e6));
  // In a scenario: cluster MTBF = per-GPU MTBF / GPUs.
  const auto s = load(yaml("{tp: 8}", "checkpoint: {every: 500 steps, storage_bandwidth: 20 GB/s}\nfailures: {mtbf_per_gpu: 50000 h}\n"));
  const wl::CheckpointReport c = wl::checkpoint_report(s, 2.0);
  CHECK(c.mtbf_cluster_s == doctest::Approx(50000.0 * 3600 / 8));
  CHECK(c.optimal_interval_s == doctest::Approx(std::sqrt(2 * c.stall_s * c.mtbf_cluster_s)));
}

TEST_CASE("LoRA adapter parameters: r·(in + out) per target linear") {
  // Llama-3-8B: h 4096, kv 2·4096·8/32 = 2048, f 14336 (SwiGLU: fc1 is gate + up).
  // qkv r(4096 + 6144), proj r(4096 + 4096), fc1 r(4096 + 28672), fc2 r(14336 + 4096).
  const auto s = load(yaml("{tp: 8}", "training: {method: lora, lora: {rank: 16}}\n"));
  const double per_layer = 16.0 * ((4096 + 6144) + (4096 + 4096) + (4096 + 28672) + (14336 + 4096));
  const wl::ParameterSplit p = wl::parameter_split(s);
  CHECK(p.adapters == doctest::Approx(32 * per_layer).epsilon(1e-12));
  CHECK(p.trained == p.adapters);
  CHECK(p.frozen == doctest::Approx(wl::total_params(s->model)).epsilon(1e-12));
  // On a device of the t8 group: column-parallel A whole, B split; row-parallel A split, B whole.
  const double device = 16.0 * ((4096 + 6144 / 8.0) + (4096 / 8.0 + 4096) + (4096 + 28672 / 8.0) + (14336 / 8.0 + 4096));
  CHECK(wl::lora_params_on_device(s, 0) == doctest::Approx(device).epsilon(1e-12));
}

TEST_CASE("frozen parameters: weights only, no weight-gradient kernels") {
  const auto base = load(yaml("{tp: 8}"));
  const auto frozen = load(yaml("{tp: 8}", "training: {method: full-finetune, frozen: [embedding]}\n"));
  const double emb = wl::embedding_params(base->model) / 8;  // per device of the t8 group
  const wl::LayoutReport a = wl::layout_report(base), b = wl::layout_report(frozen);
  // Stage 0 holds the embedding: same weights, gradients 4 B, master 4 B, Adam 8 B fewer per parameter.
  CHECK(b.memory_per_stage[0].weights == doctest::Approx(a.memory_per_stage[0].weights));
  CHECK(a.memory_per_stage[0].gradients - b.memory_per_stage[0].gradients == doctest::Approx(4 * emb).epsilon(1e-9));
  CHECK(a.memory_per_stage[0].optimizer - b.memory_per_stage[0].optimizer == doctest::Approx(8 * emb).epsilon(1e-9));
  CHECK(wl::parameter_split(frozen).frozen == doctest::Approx(wl::embedding_params(base->model)));
  // Every linear frozen: the weight-gradient pass is empty and the backward is its
  // input-gradient half, FLOPs and model FLOPs alike.
  const auto layers = load(yaml("{tp: 8}", "training: {method: full-finetune, frozen: [layers]}\n"));
  const wl::KernelPassCosts costs(layers);
  CHECK(costs.layer(wl::LayerKind::dense, wl::Pass::backward_weight).hardware_flops == doctest::Approx(0));
  CHECK(costs.layer(wl::LayerKind::dense, wl::Pass::backward_weight).time == sim::Time::zero());
  CHECK(costs.layer(wl::LayerKind::dense, wl::Pass::backward).hardware_flops ==
        doctest::Approx(costs.layer(wl::LayerKind::dense, wl::Pass::backward_input).hardware_flops).epsilon(1e-9));
  // Model FLOPs follow (no recompute here, so they equal the hardware FLOPs).
  CHECK(costs.layer(wl::LayerKind::dense, wl::Pass::backward).model_flops ==
        doctest::Approx(costs.layer(wl::LayerKind::dense, wl::Pass::backward).hardware_flops).epsilon(1e-9));
  // The embedding frozen: its backward (all weight gradient) costs nothing.
  const wl::KernelPassCosts fc(frozen);
  CHECK(fc.embedding(wl::Pass::backward).time == sim::Time::zero());
}

TEST_CASE("LoRA: no data-parallel gradient traffic for the frozen base") {
  // dp 2 without ZeRO: the gradient all-reduce carries trained parameters only, so its
  // bytes scale with adapters / parameters on the device.
  const std::string layout = "{tp: 4, dp: 2, microbatches: 1}";
  const auto pre = load(yaml(layout));
  const auto lora = load(yaml(layout, "training: {method: lora, lora: {rank: 16}}\n"));
  const wl::Result a = wl::simulate(pre), b = wl::simulate(lora);
  const double dp_a = a.comm[static_cast<int>(wl::Axis::dp)].bytes_per_device;
  const double dp_b = b.comm[static_cast<int>(wl::Axis::dp)].bytes_per_device;
  // Trained parameters per device: adapters (lora_params_on_device × 32 layers) against
  // the whole t4 share; the ZeRO-1/2 weight gather is absent in both (zero 0).
  const double adapters = 32 * wl::lora_params_on_device(lora, 0);
  double device_params = 0;
  for (int l = 0; l < 32; ++l) device_params += wl::layer_params(pre->model, l) / 4;
  device_params += (wl::embedding_params(pre->model) + wl::lm_head_params(pre->model)) / 4;
  CHECK(dp_b / dp_a == doctest::Approx(adapters / device_params).epsilon(0.01));
  // A LoRA step does less model work than a pretraining step (no weight gradients of
  // the base), and the memory holds no base gradients.
  CHECK(b.model_flops_per_step < a.model_flops_per_step);
  CHECK(b.memory_per_stage[0].gradients < 0.05 * a.memory_per_stage[0].gradients);
  CHECK(b.trained_parameters == doctest::Approx(wl::parameter_split(lora).adapters));
}

TEST_CASE("reshard tp 2 -> 4: every target rank reads its own shard, half of one source shard") {
  const std::string from_text = yaml("{tp: 2}", "", 2), to_text = yaml("{tp: 4}", "", 4);
  const auto from = load(from_text), to = load(to_text);
  const tools::ReshardPlan p = tools::plan_reshard(from, to, to_text, "to.yaml");
  const double ckpt = 14 * wl::total_params(from->model);  // the checkpoint's closed form
  CHECK(p.kind == "re-slicing");
  CHECK(p.checkpoint_bytes == doctest::Approx(ckpt).epsilon(1e-9));
  CHECK(p.bytes_moved == doctest::Approx(p.checkpoint_bytes).epsilon(1e-9));
  REQUIRE(p.ranks.size() == 4);
  for (const auto& r : p.ranks) {
    CHECK(r.bytes == doctest::Approx(p.checkpoint_bytes / 4).epsilon(1e-9));  // the TO shard size
    REQUIRE(r.reads.size() == 1);
    CHECK(r.reads[0].source == "s0.t" + std::to_string(r.tp / 2) + ".d0");
  }
  CHECK(p.max_rank_read_bytes == doctest::Approx(p.checkpoint_bytes / 4).epsilon(1e-9));
}

TEST_CASE("reshard: a pipeline change moves layers; another model is a located error") {
  const std::string from_text = yaml("{tp: 2}", "", 2), to_text = yaml("{tp: 2, pp: 2}", "", 4);
  const tools::ReshardPlan p = tools::plan_reshard(load(from_text), load(to_text), to_text, "to.yaml");
  CHECK(p.kind == "moves layers between stages");
  CHECK(p.layers_moved == 16);  // layers 16..31 go to stage 1
  CHECK(p.bytes_moved == doctest::Approx(p.checkpoint_bytes).epsilon(1e-9));
  const std::string other = "cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 2}\nmodel: llama3-70b\nlayout: {tp: 2}\n";
  try {
    tools::plan_reshard(load(from_text), load(other), other, "other.yaml");
    FAIL("expected a ScenarioError");
  } catch (const tools::ScenarioError& e) {
    const std::string what = e.what();
    CHECK(what.find("other.yaml:2:1: error: model: a different model") == 0);
    CHECK(what.find("layers: 32 there, 80 here") != std::string::npos);
  }
}

TEST_CASE("checkpoint and failure keys: located errors") {
  auto error_of = [](const std::string& text) {
    try {
      load(text);
    } catch (const tools::ScenarioError& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  CHECK(error_of(yaml("{tp: 8}", "failures: {mtbf_per_gpu: 50000 h}\n")).find("t.yaml:4:1: error: failures:") == 0);
  CHECK(error_of(yaml("{tp: 8}", "checkpoint: {every: 5 parsecs, storage_bandwidth: 1 GB/s}\n")).find("checkpoint.every: unknown unit") !=
        std::string::npos);
  CHECK(error_of(yaml("{tp: 8}", "checkpoint: {every: 10 steps}\n")).find("checkpoint.storage_bandwidth: missing") != std::string::npos);
  CHECK(error_of(yaml("{tp: 8}", "training: {frozen: [embedding, head, layers]}\n")).find("training.frozen: every part is frozen") !=
        std::string::npos);
  CHECK(error_of(yaml("{tp: 8}", "training: {lora: {targets: [qkv, ffn]}}\n")).find("training.lora.targets[1]") != std::string::npos);
}
