// workloads/model/layout.hpp — layout rules, the rank <-> mesh-coordinate map, and the
// stage/chunk -> layer maps.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

/// A broken rule. key_path is the scenario key to blame ("layout.tp"), so the loader
/// can point at its file:line:column; message names the rule and the numbers.
struct LayoutError {
  std::string key_path;
  std::string message;
  std::string hint;
};

/// Every rule the scenario breaks (empty: valid). Checks, among others:
/// dp·tp·cp·pp == devices; tp divides heads, kv_heads, ffn_hidden; pp·v divides layers
/// (auto) or stage_layers sums to layers; ep divides dp and experts; microbatches
/// ≥ 1; interleaved needs v > 1 and m a multiple of pp; zero in 0..3.
/// sequence_parallel with tp == 1 is accepted and means nothing (no error).
/// O(layers + devices of an explicit graph). Reads the derived fields (dp, kv_heads,
/// link rates, ...) as set: wl::resolve calls it once, after deriving them, and
/// nothing downstream of a ResolvedScenario needs to call it again.
std::vector<LayoutError> validate(const Scenario& s);

/// What layer `layer` (0-based, model order) recomputes: layout.recompute where
/// layout.recompute.layers selects the layer, else none. O(1) for `every`, O(list) else.
Recompute recompute_of_layer(const LayoutSpec& L, int layer);
/// The share of the model's `layers` that layout.recompute.layers selects, in [0, 1].
double recomputed_layer_share(const LayoutSpec& L, int layers);
/// layout.recompute.layers as written: `all`, `every-K` or the list `[0, 3, 5]`.
std::string recompute_layers_text(const RecomputeLayers& r);

/// Number of GPUs the cluster spec describes (nodes·gpus_per_node, or the graph's
/// vertices of kind "gpu").
int device_count(const topo::ClusterSpec& c);
/// layout.dp when set, else what tp·cp·pp leave of the cluster (1 when that does not
/// divide it; validate() then names the mismatch) — resolve()'s derivation.
int derived_dp(const LayoutSpec& l, const topo::ClusterSpec& c);

struct Coord { int dp = 0, tp = 0, pp = 0, cp = 0; };

/// True when `placement` is a permutation of {tp, dp, pp} or of {tp, cp, dp, pp}.
bool valid_placement(const std::vector<std::string>& placement);
/// `placement` with "cp" inserted right after "tp" when it is not listed.
std::vector<std::string> placement_with_cp(const std::vector<std::string>& placement);

/// Maps ranks to mesh coordinates following `placement` (fastest-varying axis first):
/// placement [tp, cp, dp, pp] -> rank = tp + T·(cp + C·(dp + D·pp)).
class Mesh {
public:
  /// Throws std::invalid_argument unless every degree is >= 1 and valid_placement
  /// (a placement without cp puts it right after tp).
  Mesh(int dp, int tp, int pp, const std::vector<std::string>& placement, int cp = 1);
  int size() const { return dp_ * tp_ * pp_ * cp_; }
  /// Precondition 0 <= rank < size() (throws std::out_of_range otherwise). O(1).
  Coord coord(int rank) const;
  /// Precondition: each coordinate within its degree (throws std::out_of_range). O(1).
  int rank(Coord c) const;
  /// Moves `c` to the coordinate of rank(c) + 1 (to rank 0's after the last rank): the
  /// placement's fastest axis steps, carrying into the next. A walk over every rank
  /// without coord()'s divisions (the search assigns 16,384 ranks per candidate). O(1)
  /// amortised.
  void next(Coord& c) const;
  int dp() const { return dp_; }
  int tp() const { return tp_; }
  int pp() const { return pp_; }
  int cp() const { return cp_; }
private:
  int dp_, tp_, pp_, cp_;
  int stride_dp_, stride_tp_, stride_pp_, stride_cp_ = 1;
  std::array<int Coord::*, 4> order_{};  // the axes, fastest first
  std::array<int, 4> degree_{};          // their degrees, in that order
};

/// MoE parallel folding (Megatron-Core; Liu et al. 2025, arXiv 2504.14960): a pipeline
/// stage's tp·cp·dp ranks, numbered as Megatron numbers them (tp fastest, then cp, then
/// dp), are split again for the expert layers into expert_tp (fastest), ep, then
/// expert-dp. With expert_tp = tp and cp = 1 this is ep carved out of dp.
int expert_tp_of(const LayoutSpec& L);
/// tp·cp·dp / (expert_tp·ep): the ranks that hold the same experts.
int expert_dp_of(const LayoutSpec& L);
struct ExpertCoord { int etp = 0, ep = 0, edp = 0; };
/// A rank's place in the expert mesh, from its attention-mesh coordinate. O(1).
ExpertCoord expert_coord(const LayoutSpec& L, const Coord& c);
/// Consecutive dp indices one expert-parallel group spans (1 when an ep group lies
/// inside one dp index), or 0 when the groups straddle dp indices unevenly. O(1).
int expert_dp_block(const LayoutSpec& L);


/// Bytes per parameter through HBM of the add that sums micro-batch `microbatch`'s weight
/// gradients into the step's (implementation.grad_accumulation): w + 2g for `buffer`, 3w
/// for `autograd` from the second micro-batch on (w, g: weight and gradient bytes); 0 when
/// `fused`, and where the gradients are reduce-scattered every micro-batch (ZeRO-2/3
/// without accumulate_unsharded: the reduction sums them). O(1).
double grad_accumulation_bytes_per_param(const Scenario& s, int microbatch);

/// Bytes per element a data-parallel gradient reduction moves: precision.grad_reduce,
/// else precision.gradients. O(1).
int grad_reduce_bytes(const Scenario& s);

/// Whether a pipeline send holds the compute stream until its transfer is done
/// (implementation.p2p_overlap for the layout's schedule; DualPipe's own code overlaps).
bool pipeline_sends_block(const Scenario& s);

/// `layers` split over `parts` pieces as evenly as possible; when it does not divide,
/// the first layers % parts pieces get one more (the last stage carries the LM head,
/// the heaviest extra). Throws std::invalid_argument when parts < 1 or layers < parts.
std::vector<int> even_stage_layers(int layers, int parts);

/// Minimises the most expensive stage: stage i costs layers_i + extra_i (extras in
/// layer-equivalents, e.g. the LM head on the last stage), each stage ≥ 1 layer, the
/// sum is `layers`. Ties broken towards earlier stages. O(pp · log(layers)).
std::vector<int> balanced_stage_layers(int layers, int pp, const std::vector<double>& extra_per_stage);

/// Layers per *model chunk* k = c·pp + s (chunk c of stage s; Megatron-LM interleaving:
/// model chunk k holds the k-th contiguous block of layers). pp·v entries; v = 1 gives
/// one entry per stage. auto/balanced: even split (balanced is refined by the program
/// builder, which knows compute times); explicit: stage_layers as given (pp entries,
/// or pp·v in model-chunk order for interleaved). Throws std::invalid_argument on a
/// list that does not fit (validate() reports it first).
std::vector<int> model_chunk_layers(const LayoutSpec& layout, int layers);

/// [begin, end) global layer indices.
struct LayerRange {
  int begin = 0, end = 0;
  int size() const { return end - begin; }
};

/// Layer range of chunk `chunk` (0..v−1) on stage `stage` given model_chunk_layers'
/// output: model chunk k = chunk·pp + stage. O(pp·v).
LayerRange chunk_layer_range(const std::vector<int>& chunk_layers, int pp, int stage, int chunk);

/// Layers held by each stage (sum over its chunks). pp entries.
std::vector<int> stage_layer_counts(const std::vector<int>& chunk_layers, int pp);

}  // namespace ls::wl
