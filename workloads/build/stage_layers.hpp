// workloads/build/stage_layers.hpp — which layers each pipeline stage and model chunk holds.
//
// Model chunk mc = chunk·pp + stage (Megatron's interleaving): chunk c of stage s
// holds the mc-th contiguous run of layers. Cost: O(pp · v) per call, O(layers · pp)
// for the balanced split.
#pragma once

#include <vector>

#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

class PassCosts;

struct ChunkLayers {
  int begin = 0, end = 0;  // global layer indices [begin, end)
};

struct StageLayers {
  std::vector<int> per_stage;                     // layers per stage, all chunks together
  std::vector<std::vector<ChunkLayers>> chunks;   // [stage][chunk]
};

/// Layers per stage chosen by `stage_layers: balanced`: contiguous split that
/// minimises the slowest stage's compute, embedding and LM head counted, as `costs`
/// (the scenario's KernelPassCosts when null) prices them.
std::vector<int> balanced_stage_layers(const Scenario& s, const PassCosts* costs = nullptr);

/// Resolves stage_layers (auto/balanced/explicit) to per-stage counts; `costs` as for
/// balanced_stage_layers.
std::vector<int> resolve_stage_layers(const Scenario& s, const PassCosts* costs = nullptr);

/// The resolved counts split into model chunks. An explicit list may give one entry
/// per stage (split evenly over its v chunks, the first ones taking the remainder)
/// or one per model chunk. `costs`: the scenario's pass costs when the caller has them
/// (a balanced split prices its stages; building them again is most of its cost).
StageLayers stage_layers(const Scenario& s, const PassCosts* costs = nullptr);

}  // namespace ls::wl
