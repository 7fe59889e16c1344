// tests/test_gather_granularity.cpp — implementation.gather_granularity: how many
// all-gathers ZeRO-3 issues per layer, and what each costs, against closed forms.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tools/scenario/scenario.hpp"
#include "workloads/model/model.hpp"
#include "workloads/build/program_builder.hpp"
#include "workloads/build/stage_memory.hpp"
#include "workloads/layout_report.hpp"
#include "workloads/simulate.hpp"
#include "workloads/spec/vocabulary.hpp"

using namespace ls;

namespace {

// 8 H100s on one NVSwitch node, ZeRO-3 over all of them, gathers not prefetched (on the
// compute stream, so each one's cost is exposed) and gradients reduced after the
// backward (so nothing shares the links with a gather). Untied GPT-style model. No
// list-form copies unless `copies` says so; every tensor sharded and gradients reduced in
// buckets unless `extra` sets persistence_threshold or reduce_granularity.
std::string zero3_yaml(const std::string& granularity, bool copies = false,
                       const std::string& extra = "persistence_threshold: 0, reduce_granularity: bucket") {
  return R"(cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 8}
model: {layers: 4, hidden: 1024, heads: 8, ffn_hidden: 4096, vocab: 32000, seq_len: 1024, activation: gelu}
layout: {dp: 8, zero: 3, microbatch_size: 1, microbatches: 2}
implementation: {preset: deepspeed, param_gather_overlap: false, dp_overlap: false, gather_list_copies: )" +
         std::string(copies ? "true" : "false") + ", gather_granularity: " + granularity + ", " + extra + "}\n";
}

struct Gathers {
  int calls = 0;       // all-gathers run, Op::repeat counted
  double bytes = 0;    // bytes gathered (per-rank buffer), summed over calls
};

Gathers rank0_gathers(const wl::ResolvedScenario& sc, int layer) {
  const auto bp = wl::build_program(sc.scenario());
  Gathers g;
  const auto& stage = bp.program.stages.front();
  for (const auto& stream : stage.streams)
    for (const auto& op : stream)
      if (op.kind == sim::OpKind::collective && op.tag == static_cast<std::uint8_t>(wl::Work::param_gather) &&
          op.labels[wl::label::layer_begin] == layer) {
        g.calls += op.repeat;
        g.bytes += op.bytes * op.repeat;
      }
  return g;
}

/// Rank 0's gradient reduce-scatters over the data-parallel group, Op::repeat counted.
Gathers rank0_reduces(const wl::ResolvedScenario& sc) {
  const auto bp = wl::build_program(sc.scenario());
  Gathers g;
  for (const auto& stream : bp.program.stages.front().streams)
    for (const auto& op : stream)
      if (op.kind == sim::OpKind::collective && op.tag == static_cast<std::uint8_t>(wl::Work::grad_sync)) {
        g.calls += op.repeat;
        g.bytes += op.bytes * op.repeat;
      }
  return g;
}

}  // namespace

TEST_CASE("parameter tensors and modules of a layer") {
  wl::ModelSpec gpt = *wl::model_preset("gpt3-175b");
  CHECK(wl::layer_parameter_tensors(gpt, 0) == 12);  // QKV, proj, fc1, fc2 + biases; 2 LayerNorms (weight, bias)
  CHECK(wl::layer_parameter_modules(gpt, 0) == 6);
  wl::ModelSpec llama = *wl::model_preset("llama3-8b");
  CHECK(wl::layer_parameter_tensors(llama, 0) == 7);  // QKV, proj, gate, up, down; 2 RMSNorm weights
  CHECK(wl::layer_parameter_modules(llama, 0) == 7);
  // Of them, vectors: GPT's four biases and two LayerNorms' weight and bias; Llama's two norms.
  CHECK(wl::layer_vector_tensors(gpt, 0) == 8);
  CHECK(wl::layer_norm_modules(gpt, 0) == 2);
  CHECK(wl::layer_vector_tensors(llama, 0) == 2);
  // The widest: GPT-3's MLP bias, 4 · 12288 elements; over tp 8, its norms' 12288.
  CHECK(wl::widest_layer_vector(gpt, 1) == 49152);
  CHECK(wl::widest_layer_vector(gpt, 8) == 12288);
}

TEST_CASE("ZeRO-3 persistence: vectors under the threshold are never gathered") {
  // hidden 1024, ffn 4096: the widest vector has 4096 elements. DeepSpeed's 100,000
  // (stage3_param_persistence_threshold) keeps every bias and norm whole: the middle
  // layer gathers its 4 matrices per pass, its 4 linear modules; layer 0 adds the
  // embedding and position tables; the last layer the head (its final norm persists).
  const auto at = [](const std::string& granularity, const std::string& threshold) {
    return tools::load_scenario_string(
        zero3_yaml(granularity, false, "persistence_threshold: " + threshold + ", reduce_granularity: bucket"), "<persist>");
  };
  const int passes = 2 * 2;  // forward and backward, two micro-batches
  CHECK(rank0_gathers(at("parameter", "100000"), 1).calls == passes * 4);
  CHECK(rank0_gathers(at("module", "100000"), 1).calls == passes * 4);
  CHECK(rank0_gathers(at("parameter", "100000"), 0).calls == passes * (4 + 2));
  CHECK(rank0_gathers(at("parameter", "100000"), 3).calls == passes * (4 + 1));
  // A threshold at the widest vector keeps it sharded (fewer elements than the threshold persist).
  CHECK(rank0_gathers(at("parameter", "4096"), 1).calls == passes * 12);
  CHECK(rank0_gathers(at("parameter", "4097"), 1).calls == passes * 4);
  // The deepspeed preset's threshold is DeepSpeed's default.
  const auto preset = tools::load_scenario_string(zero3_yaml("parameter", false, "gather_bucket: 50 MB"), "<preset>");
  CHECK(preset->implementation.persistence_threshold == 100000);
  CHECK(preset->implementation.reduce_granularity == wl::ReduceGranularity::parameter);
}

TEST_CASE("ZeRO-3 gradients per parameter: one reduce-scatter per tensor, the same bytes, each paying its latency") {
  const auto bucket = tools::load_scenario_string(zero3_yaml("layer"), "<bucket>");
  const auto param =
      tools::load_scenario_string(zero3_yaml("layer", false, "persistence_threshold: 0, reduce_granularity: parameter"), "<param>");
  const Gathers b = rank0_reduces(bucket), p = rank0_reduces(param);
  // Every micro-batch's backward (ZeRO-3 keeps only its gradient shard): 12 tensors per
  // layer, the final norm's two with the last, and the embedding, position table and
  // untied head.
  CHECK(p.calls == 2 * (4 * 12 + 2 + 3));
  CHECK(p.bytes == doctest::Approx(b.bytes).epsilon(1e-12));
  // After the backward, back to back on the dp stream: each extra call adds NCCL's fixed
  // cost and 7 ring steps of 3.4 us over NVSwitch (topology/collective_costs.cpp).
  wl::SimOptions opt;
  opt.what_if = false;
  const double extra = (p.calls - b.calls) * (10e-6 + 7 * 3.4e-6);
  CHECK(wl::simulate(param, opt).step_time_s - wl::simulate(bucket, opt).step_time_s == doctest::Approx(extra).epsilon(1e-6));
  // With list-form copies, each reduce-scatter's inputs are copied in rank by rank first:
  // per call 8 × 10 us, the host's per-rank view and copy issue (over the 3 us launch; the
  // bytes through HBM are the same in total).
  const auto bucket_copies = tools::load_scenario_string(zero3_yaml("layer", true), "<bucket copies>");
  const auto param_copies = tools::load_scenario_string(
      zero3_yaml("layer", true, "persistence_threshold: 0, reduce_granularity: parameter"), "<param copies>");
  const wl::Result bc = wl::simulate(bucket_copies, opt), pc = wl::simulate(param_copies, opt);
  CHECK(pc.step_time_s - bc.step_time_s ==
        doctest::Approx(extra + (p.calls - b.calls) * 8 * 10e-6 * pc.scale_noise.factor).epsilon(1e-6));
}

TEST_CASE("reduce_granularity is ZeRO-3's, as its doc says: ZeRO-2 keeps its buckets") {
  std::string yaml = zero3_yaml("layer", false, "persistence_threshold: 0, reduce_granularity: parameter");
  yaml.replace(yaml.find("zero: 3"), 7, "zero: 2");
  std::string yaml_bucket = zero3_yaml("layer");
  yaml_bucket.replace(yaml_bucket.find("zero: 3"), 7, "zero: 2");
  const Gathers a = rank0_reduces(tools::load_scenario_string(yaml, "<zero2 parameter>")),
                b = rank0_reduces(tools::load_scenario_string(yaml_bucket, "<zero2 bucket>"));
  CHECK(a.calls == b.calls);
}

TEST_CASE("ZeRO-3 gathers: calls per layer by granularity, the same bytes") {
  const auto layer = tools::load_scenario_string(zero3_yaml("layer"), "<layer>");
  const auto param = tools::load_scenario_string(zero3_yaml("parameter"), "<parameter>");
  const auto module = tools::load_scenario_string(zero3_yaml("module"), "<module>");
  // A middle layer (1): no embedding or head rides with it. Two gathers per micro-batch
  // (forward, backward), two micro-batches.
  const Gathers l = rank0_gathers(layer, 1), p = rank0_gathers(param, 1), m = rank0_gathers(module, 1);
  CHECK(l.calls == 2 * 2);
  CHECK(p.calls == 2 * 2 * 12);
  CHECK(m.calls == 2 * 2 * 6);
  CHECK(p.bytes == doctest::Approx(l.bytes).epsilon(1e-12));
  CHECK(m.bytes == doctest::Approx(l.bytes).epsilon(1e-12));
  // The first layer carries the embedding and the position table (two more of each).
  CHECK(rank0_gathers(param, 0).calls == 2 * 2 * (12 + 2));
  // bucket: ceil(layer bytes / bucket) calls.
  const auto bucket =
      tools::load_scenario_string(zero3_yaml("bucket, gather_bucket: 1 MB"), "<bucket>");
  const double per_gather = l.bytes / l.calls;
  CHECK(rank0_gathers(bucket, 1).calls == 2 * 2 * static_cast<int>(std::ceil(per_gather / 1e6)));
}

TEST_CASE("ZeRO-3 gathers per parameter cost calls x (fixed + (n-1) step latency) more: the bandwidth term is unchanged") {
  const auto layer = tools::load_scenario_string(zero3_yaml("layer"), "<layer>");
  const auto param = tools::load_scenario_string(zero3_yaml("parameter"), "<parameter>");
  wl::SimOptions opt;
  opt.what_if = false;
  const double t_layer = wl::simulate(layer, opt).step_time_s;
  const double t_param = wl::simulate(param, opt).step_time_s;
  // Every extra call pays NCCL's fixed cost (10 us) and a flat ring of 8 ranks over
  // NVSwitch, 7 steps of 3.4 us (topology/collective_costs.cpp); its bytes/bandwidth
  // share is the same in total. Extra calls: per micro-batch and pass, 11 per middle
  // layer, 13 on layer 0 (embedding and positions), 14 on the last (final norm weight and
  // bias, head).
  const int extra = 2 * 2 * (13 + 11 + 11 + 14);
  const double per_call = 10e-6 + 7 * 3.4e-6;
  CHECK(t_param - t_layer == doctest::Approx(extra * per_call).epsilon(1e-6));
}

TEST_CASE("list-form gathers and reduce-scatters add, per call, one copy per rank (host-issued) and the call's bytes read and written once") {
  const auto plain = tools::load_scenario_string(zero3_yaml("parameter"), "<plain>");
  const auto copies = tools::load_scenario_string(zero3_yaml("parameter", true), "<copies>");
  wl::SimOptions opt;
  opt.what_if = false;
  const wl::Result a = wl::simulate(plain, opt), b = wl::simulate(copies, opt);
  // Per call: 8 ranks × max(the H100's 3 us launch, the host's 10 us per rank: a view and a
  // copy issued) + 2 · (bytes / call) / (3.35 TB/s × 0.90), on the compute stream, stretched
  // like all compute by the slowest of the 8 GPUs (scale_noise.hpp); summed over every
  // gather of the step.
  REQUIRE(copies->implementation.profile.list_rank_overhead_s == doctest::Approx(10e-6));
  double expect = 0;
  for (int l = 0; l < copies->model.layers; ++l) {
    const Gathers g = rank0_gathers(copies, l);
    expect += g.calls * 8 * 10e-6 + 2 * g.bytes / (3.35e12 * 0.90);
  }
  // The gradient reduce-scatters are list-form too: their inputs copied in the same way.
  const Gathers r = rank0_reduces(copies);
  expect += r.calls * 8 * 10e-6 + 2 * r.bytes / (3.35e12 * 0.90);
  expect *= b.scale_noise.factor;
  CHECK(b.step_time_s - a.step_time_s == doctest::Approx(expect).epsilon(1e-6));
  // A host quicker than the GPU's launch gap: each rank's copy costs the 3 us launch.
  wl::Scenario quick = copies.scenario();
  quick.implementation.profile.list_rank_overhead_s = 1e-6;
  const wl::Result q = wl::simulate(wl::resolve(quick), opt);
  double expect_quick = 0;
  for (int l = 0; l < copies->model.layers; ++l) {
    const Gathers g = rank0_gathers(copies, l);
    expect_quick += g.calls * 8 * 3e-6 + 2 * g.bytes / (3.35e12 * 0.90);
  }
  expect_quick += r.calls * 8 * 3e-6 + 2 * r.bytes / (3.35e12 * 0.90);
  CHECK(q.step_time_s - a.step_time_s == doctest::Approx(expect_quick * q.scale_noise.factor).epsilon(1e-6));
  // The gathers themselves are the same.
  CHECK(rank0_gathers(copies, 1).calls == rank0_gathers(plain, 1).calls);
  // Prefetched gathers: the copies wait for their layer's gathers on the compute stream,
  // so the step still grows, by no more than the copies' time.
  std::string yaml = zero3_yaml("parameter", true);
  yaml.replace(yaml.find("param_gather_overlap: false"), 27, "param_gather_overlap: true");
  std::string yaml_plain = zero3_yaml("parameter");
  yaml_plain.replace(yaml_plain.find("param_gather_overlap: false"), 27, "param_gather_overlap: true");
  const double with = wl::simulate(tools::load_scenario_string(yaml, "<prefetched copies>"), opt).step_time_s;
  const double without = wl::simulate(tools::load_scenario_string(yaml_plain, "<prefetched>"), opt).step_time_s;
  CHECK(with > without);
  CHECK(with - without <= expect * (1 + 1e-6));
}

TEST_CASE("implementation.reshard: gathers per layer are 2 per micro-batch, 1 per micro-batch, or 1 per step") {
  // Two micro-batches, no recompute: after-forward gathers each layer for its forward
  // and again for its backward; after-backward once per micro-batch; after-step once.
  const auto sc = [](const std::string& reshard) {
    return tools::load_scenario_string(zero3_yaml("layer, reshard: " + reshard), "<" + reshard + ">");
  };
  const Gathers fwd = rank0_gathers(sc("after-forward"), 1), bwd = rank0_gathers(sc("after-backward"), 1),
                step = rank0_gathers(sc("after-step"), 1);
  const int m = 2;
  CHECK(fwd.calls == 2 * m);
  CHECK(bwd.calls == m);
  CHECK(step.calls == 1);
  // The same bytes per call: traffic divides by 2 and by 2·m exactly.
  CHECK(bwd.bytes == doctest::Approx(fwd.bytes / 2).epsilon(1e-12));
  CHECK(step.bytes == doctest::Approx(fwd.bytes / (2 * m)).epsilon(1e-12));
}

TEST_CASE("implementation.reshard: weights kept past the forward hold the stage's layers unsharded") {
  const auto report = [](const std::string& reshard) {
    return wl::layout_report(tools::load_scenario_string(zero3_yaml("layer, reshard: " + reshard), "<" + reshard + ">"));
  };
  const wl::LayoutReport fwd = report("after-forward"), step = report("after-step"), bwd = report("after-backward");
  const auto sc = tools::load_scenario_string(zero3_yaml("layer"), "<layer>");
  const wl::DeviceParams params(sc.scenario());
  double all = 0, widest = 0;
  for (int l = 0; l < sc->model.layers; ++l) {
    all += params.layer_weight_bytes(l);
    widest = std::max(widest, params.layer_weight_bytes(l));
  }
  // Buffers: two gathered layers (prefetch window) vs every layer, beside the gradient bucket.
  CHECK(step.memory_per_stage[0].buffers - fwd.memory_per_stage[0].buffers == doctest::Approx(all - 2 * widest));
  CHECK(bwd.memory_per_stage[0].buffers == doctest::Approx(step.memory_per_stage[0].buffers));
  CHECK(step.memory_per_stage[0].weights == doctest::Approx(fwd.memory_per_stage[0].weights));  // the shards
}

TEST_CASE("ZeRO-3 gathered per module (DeepSpeed) holds two modules at once, not two layers") {
  // The same model and group; each sub-module fetched and released by itself: the widest
  // matrix (the MLP's 1024 × 4096, a third of the layer's 12.6 M matrix elements) sets the
  // two gathered units.
  const auto by_layer = tools::load_scenario_string(zero3_yaml("layer"), "<layer>");
  const auto by_module = tools::load_scenario_string(zero3_yaml("module"), "<module>");
  const wl::DeviceParams params(by_layer.scenario());
  const std::vector<double> numels = wl::layer_matrix_numels(by_layer->model, 1);
  REQUIRE(numels.size() == 4);
  const double layer = params.layer_weight_bytes(1);
  const double module = layer * 1024.0 * 4096 / (3 * 1024.0 * 1024 + 1024.0 * 1024 + 2 * 1024.0 * 4096);
  const double fwd_layer = wl::layout_report(by_layer).memory_per_stage[0].buffers;
  const double fwd_module = wl::layout_report(by_module).memory_per_stage[0].buffers;
  CHECK(fwd_layer - fwd_module == doctest::Approx(2 * (layer - module)));
}

TEST_CASE("ZeRO-3 reuse distance: under full recompute, modules with more than the limit behind them are gathered again") {
  // hidden 1024, ffn 4096: QKV 3·2^20 elements, projection 2^20, fc1 and fc2 4·2^20 each.
  // After its recompute a module waits for the later modules twice (recomputed, then
  // their backward): QKV 2·9·2^20 = 18.9 M, projection 16.8 M, fc1 8.4 M, fc2 0.
  const auto at = [](const std::string& limit) {
    std::string yaml = zero3_yaml("parameter", false,
                                  "persistence_threshold: 100000, reduce_granularity: bucket, max_reuse_distance: " + limit);
    yaml.replace(yaml.find("microbatches: 2}"), 16, "microbatches: 2, recompute: full}");
    return tools::load_scenario_string(yaml, "<reuse " + limit + ">");
  };
  const Gathers kept = rank0_gathers(at("0"), 1), ten = rank0_gathers(at("1e7"), 1), one = rank0_gathers(at("1"), 1),
                big = rank0_gathers(at("1e8"), 1);
  const int m = 2;  // micro-batches
  // Kept: the forward's 4 matrices and the backward's 4 (shared by the recompute).
  CHECK(kept.calls == m * (4 + 4));
  CHECK(big.calls == kept.calls);
  // 10 M: QKV and the projection again, a third of the layer's matrix elements (4 of 12 · 2^20).
  CHECK(ten.calls == m * (4 + 4 + 2));
  CHECK(ten.bytes == doctest::Approx(kept.bytes * (2 + 1.0 / 3) / 2).epsilon(1e-12));
  // Any distance at all: every module but the last, three quarters of the elements.
  CHECK(one.calls == m * (4 + 4 + 3));
  CHECK(one.bytes == doctest::Approx(kept.bytes * (2 + 8.0 / 12) / 2).epsilon(1e-12));
  // The deepspeed preset's limit is DeepSpeed's default, 1e9: nothing at this size.
  const auto preset = tools::load_scenario_string(zero3_yaml("parameter", false, "gather_bucket: 50 MB"), "<preset>");
  CHECK(preset->implementation.max_reuse_distance == 1e9);
}

TEST_CASE("the matrices of a dense layer in forward order, and equal shares elsewhere") {
  wl::ModelSpec gpt = *wl::model_preset("gpt3-175b");
  const double h = 12288;
  const std::vector<double> n = wl::layer_matrix_numels(gpt, 0);
  REQUIRE(n.size() == 4);
  CHECK(n[0] == 3 * h * h);
  CHECK(n[1] == h * h);
  CHECK(n[2] == 4 * h * h);
  CHECK(n[3] == 4 * h * h);
  wl::ModelSpec llama = *wl::model_preset("llama3-8b");  // GQA: 32 query heads, 8 K/V heads of 128
  const std::vector<double> l = wl::layer_matrix_numels(llama, 0);
  REQUIRE(l.size() == 5);
  CHECK(l[0] == 4096.0 * (4096 + 2 * 1024));
  CHECK(l[4] == 4096.0 * 14336);
}

TEST_CASE("check's sharded-collective counts are the program's: per step on stage 0") {
  const auto sc = tools::load_scenario_string(
      zero3_yaml("parameter", true, "persistence_threshold: 100000, reduce_granularity: parameter"), "<report>");
  const wl::LayoutReport rep = wl::layout_report(sc);
  int gathers = 0;
  double gather_bytes = 0;
  for (int l = 0; l < sc->model.layers; ++l) {
    const Gathers g = rank0_gathers(sc, l);
    gathers += g.calls;
    gather_bytes += g.bytes;
  }
  // Per micro-batch (2): 4 matrices per layer and pass (2), the embedding and positions
  // twice on layer 0, the head twice on the last.
  CHECK(gathers == 2 * (2 * 4 * 4 + 2 * 2 + 2 * 1));
  CHECK(rep.weight_gathers_per_step == gathers);
  CHECK(rep.weight_gather_bytes_per_step == doctest::Approx(gather_bytes).epsilon(1e-12));
  const Gathers r = rank0_reduces(sc);
  CHECK(rep.gradient_reductions_per_step == r.calls);
  CHECK(rep.gradient_reduction_bytes_per_step == doctest::Approx(r.bytes).epsilon(1e-12));
}
