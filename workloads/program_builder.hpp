// workloads/program_builder.hpp — model × layout × schedule → the engine's Program.
//
// For every pipeline stage it lays out, in schedule order, the compute stream
// (embedding, per-layer forward/backward/recompute with the layer's TP collectives,
// LM head, pipeline recvs, optimizer), the pp_send stream (boundary activations and
// gradients), the dp stream (bucketed gradient all-reduce / reduce-scatter, ZeRO
// parameter all-gather) and the prefetch stream (ZeRO-3 per-layer weight gathers
// with one-layer prefetch). Ranks of a stage share the stage's template.
//
// Cost: O(pp · v · m · layers_per_chunk) ops; O(devices) rank and group tables.
#pragma once

#include <vector>

#include "sim/program.hpp"
#include "workloads/layout.hpp"
#include "workloads/moe.hpp"
#include "workloads/result.hpp"
#include "workloads/spec.hpp"

namespace ls::wl {

struct ChunkLayers {
  int begin = 0, end = 0;  // global layer indices [begin, end)
};

struct BuiltProgram {
  sim::Program program;
  std::vector<int> stage_layers;                        // per stage, all chunks together
  std::vector<std::vector<ChunkLayers>> chunk_layers;   // [stage][chunk]
  std::vector<MemoryTerms> static_memory;               // per stage: state terms + buffers (activations 0)
  std::vector<double> activation_bytes_per_microbatch;  // per stage, all its layers, one micro-batch
  std::vector<double> stage_compute_s;                  // per stage: F+B(+recompute) compute of one micro-batch (all chunks)
  double params_total = 0;
  double model_flops_step = 0;                          // analytic, whole cluster
  double hardware_flops_step = 0;
  double tokens_per_step = 0;
  double matmul_rows = 0;                               // b·s: rows of the layer matmuls
  double matmul_efficiency = 0;                         // achieved efficiency at those rows
  Routing routing;                                      // MoE models: expert loads and drops
};

/// Layers per stage chosen by `stage_layers: balanced`: contiguous split that
/// minimises the slowest stage's compute, embedding and LM head counted.
std::vector<int> balanced_stage_layers(const Scenario& s);

/// Resolves stage_layers (auto/balanced/explicit) to per-stage counts.
std::vector<int> resolve_stage_layers(const Scenario& s);

/// Precondition: validate(s) is empty. Throws std::invalid_argument otherwise.
BuiltProgram build_program(const Scenario& s);

}  // namespace ls::wl
