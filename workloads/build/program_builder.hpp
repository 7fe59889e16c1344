// workloads/build/program_builder.hpp — model × layout × schedule → the engine's Program.
//
// Puts together the pieces: which layers each stage holds (stage_layers.hpp), the
// ranks and communication groups (rank_groups.hpp), one op template per pipeline
// stage in schedule order (stage_emitter.hpp, priced by pass_costs.hpp) and the
// stage's static memory (stage_memory.hpp). Ranks of a stage share its template.
//
// Cost: O(pp · v · m · layers_per_chunk) ops; O(devices) rank and group tables.
#pragma once

#include <optional>
#include <vector>

#include "sim/program.hpp"
#include "workloads/model/layout.hpp"
#include "workloads/cost/kernels.hpp"
#include "workloads/cost/pass_costs.hpp"
#include "workloads/build/stage_memory.hpp"
#include "workloads/model/moe.hpp"
#include "workloads/build/result.hpp"
#include "workloads/spec/scenario_spec.hpp"
#include "workloads/build/stage_layers.hpp"

namespace ls::wl {

struct BuiltProgram {
  sim::Program program;
  std::vector<int> stage_layers;                        // per stage, all chunks together
  std::vector<MemoryTerms> static_memory;               // per stage: state terms + buffers (activations 0)
  std::vector<double> activation_bytes_per_microbatch;  // per stage, all its layers, one micro-batch
  /// Per stage: seconds per step of its compute ops by kernel category (gemm, attention,
  /// elementwise, logits, optimizer, launch); total() is the sum of the stage template's
  /// compute op durations exactly (before perturbations and MoE expert-load scaling).
  std::vector<ComputeBreakdown> compute_breakdown;
  double tokens_per_step = 0;
  double matmul_rows = 0;                               // b·s: rows of the layer matmuls
  Routing routing;                                      // MoE models: expert loads and drops
};

/// What a program is priced and split with: the pass costs, the bytes each pass moves,
/// the parameters per device and the layers per stage. None depends on the micro-batch
/// count. Made once where one scenario is bounded and built (the search's analytic
/// stage), with pass costs of its own or shared ones priced for the same
/// PassCostsLayout; it refers to `s` and to shared costs, which must outlive it.
class ProgramInputs {
  std::optional<KernelPassCosts> own_costs_;  // declared first: `costs` may refer to it

 public:
  explicit ProgramInputs(const Scenario& s);
  ProgramInputs(const Scenario& s, const KernelPassCosts& shared_costs);
  ProgramInputs(const ProgramInputs&) = delete;
  ProgramInputs& operator=(const ProgramInputs&) = delete;

  const KernelPassCosts& costs;
  PassBytes bytes;
  DeviceParams params;
  StageLayers layers;
};

/// Whether build_program fills the program's ranks, groups and pipeline peers
/// (assign_ranks_and_groups), or leaves them empty for a caller that keeps a layout's
/// rank table apart (the search's estimate: one table for all the candidates of a
/// layout, where each program is only tallied).
enum class RankTable { assign, omit };

/// Precondition: `s` is resolved (resolve() validated it); nothing here re-validates.
BuiltProgram build_program(const Scenario& s);
/// The same from inputs made for `s` or for a scenario that differs from it only in
/// its micro-batch count.
BuiltProgram build_program(const Scenario& s, const ProgramInputs& inputs, RankTable ranks = RankTable::assign);

}  // namespace ls::wl
