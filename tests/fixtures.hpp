// tests/fixtures.hpp — small scenarios shared by the workload tests.
#pragma once

#include "workloads/cost/hardware.hpp"
#include "workloads/model/model.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::test {

/// A GPT-style model small enough to simulate in milliseconds: h 1024, 16 heads,
/// f 4h, s 1024, V 32000.
inline wl::ModelSpec small_model(int layers) {
  wl::ModelSpec m;
  m.name = "small";
  m.layers = layers;
  m.hidden = 1024;
  m.heads = 16;
  m.kv_heads = 16;
  m.ffn_hidden = 4096;
  m.vocab = 32000;
  m.seq_len = 1024;
  return m;
}

/// small_model(2) with SwiGLU MoE layers: 16 experts of FFN width 512, top 2.
inline wl::ModelSpec small_moe_model(double capacity_factor = 0) {
  wl::ModelSpec m = small_model(2);
  m.activation = wl::Activation::swiglu;
  m.moe.experts = 16;
  m.moe.top_k = 2;
  m.moe.expert_ffn_hidden = 512;
  m.moe.capacity_factor = capacity_factor;
  return m;
}

/// p equal stages of 2 layers per model chunk on one node of H100s, free
/// communication, embedding and LM head made free, every GPU at one speed (no scale
/// noise): the textbook pipeline.
inline wl::Scenario uniform_pipeline(int p, int m, wl::Schedule sch = wl::Schedule::one_f_one_b, int v = 1) {
  wl::Scenario s;
  s.name = "uniform";
  s.cluster.nodes = 1;
  s.cluster.gpus_per_node = p;
  s.cluster.ideal_network = true;
  s.gpu = *wl::gpu_preset("h100-sxm");
  s.model = small_model(2 * p * v);
  s.layout.pp = p;
  s.layout.microbatches = m;
  s.layout.schedule = sch;
  s.layout.virtual_stages = v;
  s.layout.embedding_free = true;
  s.layout.stage_layers_mode = wl::StageLayersMode::explicit_list;
  s.layout.stage_layers.assign(static_cast<std::size_t>(p * v), 2);  // one entry per model chunk
  s.implementation.compute_variability = 0;
  return s;
}

/// `nodes` × `gpus_per_node` GPUs: NVSwitch at 300 GB/s and 1 us per GPU, one
/// 200 Gb/s (25 GB/s) InfiniBand rail per GPU at 3 us — the A100-era numbers the
/// closed forms in the tests use.
inline void a100_era_cluster(wl::Scenario& s, int nodes, int gpus_per_node) {
  s.cluster.nodes = nodes;
  s.cluster.gpus_per_node = gpus_per_node;
  s.cluster.intra = {"nvswitch", 300e9, sim::us(1)};
  s.cluster.inter.kind = "infiniband";
  s.cluster.inter.bandwidth_Bps = 25e9;
  s.cluster.inter.latency = sim::us(3);
}

/// Data parallelism over 2 nodes × 8 A100 80 GB (a100_era_cluster), a 4-layer model,
/// 2 micro-batches, ZeRO `zero`; `ctas` of the 108 SMs held by each collective
/// (interference.hpp: 108 / (108 − ctas)) and every GPU at one speed unless the caller
/// states a spread (scale_noise.hpp).
inline wl::Scenario a100_data_parallel(int zero, int ctas) {
  wl::Scenario s;
  s.name = "data-parallel";
  a100_era_cluster(s, 2, 8);
  s.model = small_model(4);
  s.layout.dp = 16;
  s.layout.zero = zero;
  s.layout.microbatches = 2;
  s.gpu = *wl::gpu_preset("a100-80gb");
  s.gpu.compute = *wl::compute_profile_preset("a100-80gb");
  s.gpu.compute.collective_ctas = ctas;
  s.implementation.compute_variability = 0;
  return s;
}

/// A GPT-style model of 16 layers on `nodes` A100-era 8-GPU nodes (a100_era_cluster),
/// the layout dp × tp × pp with `m` micro-batches.
inline wl::Scenario cluster_scenario(int nodes, int dp, int tp, int pp, int m) {
  wl::Scenario s;
  s.name = "dense";
  a100_era_cluster(s, nodes, 8);
  s.gpu = *wl::gpu_preset("a100-80gb");
  s.model = small_model(16);
  s.layout.dp = dp;
  s.layout.tp = tp;
  s.layout.pp = pp;
  s.layout.microbatches = m;
  return s;
}

/// A `layers`-layer slice of model preset `preset` on one ideal-network node of 8 H100s,
/// pp `pp`, dp the rest (an MoE model's ep over all of dp), ZeRO-1, selective recompute,
/// `microbatches` micro-batches of one sequence.
inline wl::Scenario preset_slice(const char* preset, int layers, int pp = 1, int microbatches = 2) {
  wl::Scenario s;
  s.name = preset;
  s.cluster.nodes = 1;
  s.cluster.gpus_per_node = 8;
  s.cluster.ideal_network = true;
  s.gpu = *wl::gpu_preset("h100-sxm");
  s.model = *wl::model_preset(preset);
  s.model.layers = layers;
  s.layout.pp = pp;
  s.layout.dp = 8 / pp;
  if (s.model.moe.experts > 0) s.layout.ep = 8 / pp;
  s.layout.zero = 1;
  s.layout.recompute = wl::Recompute::selective;
  s.layout.microbatches = microbatches;
  return s;
}

}  // namespace ls::test
