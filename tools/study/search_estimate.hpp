// tools/study/search_estimate.hpp — the search's analytic stage: the layout rules, the
// memory peak and the estimated step time of one candidate (search.hpp, stage 2).
//
// The estimate reads a built program's op templates, tallied per stage (compute
// seconds, each distinct collective with its call count). Every micro-batch runs the
// same passes and collectives; what happens once per step (the first forward's gathers,
// the last backward's gradient buckets, the optimizer) does not grow with M. So a
// candidate with many micro-batches is priced from a program built at a few (a first, a
// middle and a last): its tally, plus the middle micro-batch's ops (the ops labelled
// with it) for each micro-batch it lacks. Its memory peak is the schedule's walk at M,
// or past the warm-up (where 1F1B and its kin hold a fixed number of micro-batches and
// the peak stays where it is), over the small program's per-item memory
// (workloads/build/schedule_peak.hpp). The same estimate and peak, to rounding (a test
// holds every schedule and the switches that add work per micro-batch or per step to
// it), for a fraction of the building. Internal to ls_study; the tests include it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/comm_plan.hpp"
#include "tools/study/search.hpp"
#include "topology/cluster.hpp"
#include "topology/collective_costs.hpp"
#include "workloads/build/program_builder.hpp"
#include "workloads/build/program_totals.hpp"
#include "workloads/build/rank_groups.hpp"
#include "workloads/cost/pass_costs.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::tools {

/// The search ranks only layouts that fit with the allocator's fragmentation margin
/// (headroom.hpp's "fits", not "tight"): a tight layout runs only with the allocator
/// setting its warning names, so the search does not recommend one. `run` and `check`
/// still call a tight layout fitting.
bool fits_with_margin(const wl::Scenario& sc, double peak_bytes);

/// The analytic stage's verdict on one candidate.
struct Estimate {
  std::string rejected;  // "" kept
  double step_s = 0, peak_bytes = 0, bubble = 0, model_flops = 0, tokens = 0;
};

/// The two slowdowns the simulation applies to compute, as every candidate of one search
/// shares them: the SM-sharing factor under collectives, and the slowest of the search's
/// GPUs (dp·tp·cp·pp is the GPU count by construction). The latter is a 4,800-interval
/// integral, some 20,000 transcendental calls: computed once, not per candidate.
struct ComputeSlowdowns {
  double rho = 1;
  double noise = 1;
};

/// Idle-network collective times by (collective, bytes, member devices), kept by one
/// worker across the candidates it estimates: they meet the same groups again and again
/// (a placement, a degree, a bucket size), and a plan over hundreds of members costs far
/// more to build than to look up. Pure values: the cache changes no estimate.
class CollectiveTimes {
 public:
  /// `costs`: the collective cost model the simulation prices them with (the GPU's,
  /// wl::collective_costs_of), so that estimate and simulation agree on them.
  CollectiveTimes(const topo::Cluster& cluster, bool ideal_network, topo::CollectiveCostModel costs)
      : cluster_(cluster), ideal_(ideal_network), costs_(std::move(costs)) {}
  double seconds(std::vector<std::int32_t> devices, sim::CollOp coll, double bytes);

 private:
  struct Key {
    int coll;
    double bytes;
    std::vector<std::int32_t> devices;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const;
  };
  const topo::Cluster& cluster_;
  bool ideal_;
  topo::CollectiveCostModel costs_;
  std::unordered_map<Key, double, KeyHash> times_;
};

/// Pass costs by the layout fields they read (wl::PassCostsLayout), kept by one worker
/// across the candidates of one search: they share all but their layouts, and many
/// layouts share a micro-batch size, tp, cp, sequence parallelism and recompute, whose
/// kernels cost more to price than to look up. Pure values: the memo changes no estimate.
class PassCostsMemo {
 public:
  /// The candidate's pass costs; `candidate` differs from every other scenario asked
  /// of this memo at most in its layout.
  const wl::KernelPassCosts& of(const wl::Scenario& candidate);

 private:
  std::map<wl::PassCostsLayout, std::unique_ptr<const wl::KernelPassCosts>> kept_;
};

/// What the estimate reads of a layout's rank table (wl::assign_ranks_and_groups): each
/// rank's stage and expert load, in rank order (for the FLOPs), and per stage its first
/// rank's groups (whose members price the stage's collectives) and its most loaded
/// rank's expert load (which sets the stage's pace).
struct PlacedRanks {
  struct Stage {
    bool present = false;
    std::array<std::int32_t, sim::kGroupSlots> group{};        // the first rank's group ids (-1: none)
    std::array<std::vector<std::int32_t>, sim::kGroupSlots> devices;  // and their members' devices
    double max_work_scale = 0;
  };
  std::vector<wl::RankWork> ranks;
  std::vector<Stage> stages;
};
/// The table a program's ranks and groups make (`prog.ranks`, `prog.groups`), read as above.
PlacedRanks placed_ranks(const sim::Program& prog);

/// Rank tables by the fields assign_ranks_and_groups reads (wl::RankTableKey), kept by
/// one worker across the candidates of one search: the candidates of one layout differ in
/// micro-batch size, schedule, recompute and switches, none of which moves a rank (a
/// schedule that puts both ends of the model on one stage drops a tied table's pairs: a
/// key of its own). Held by shared pointer so that an estimate
/// keeps the one it priced with; the memo lets go of all of them past kMaxRanks ranks
/// (a 16,384-GPU table is about 0.3 MB). Pure values: the memo changes no estimate.
class PlacementMemo {
 public:
  static constexpr std::size_t kMaxRanks = std::size_t{1} << 20;
  /// The candidate's; `candidate` differs from every other scenario asked of this memo
  /// at most in its layout.
  std::shared_ptr<const PlacedRanks> of(const wl::Scenario& candidate);

 private:
  std::map<wl::RankTableKey, std::shared_ptr<const PlacedRanks>> kept_;
  std::size_t ranks_ = 0;
};

/// What one worker of the analytic stage keeps across the candidates it estimates.
struct EstimateCaches {
  EstimateCaches(const topo::Cluster& cluster, bool ideal_network, topo::CollectiveCostModel costs)
      : times(cluster, ideal_network, std::move(costs)) {}
  CollectiveTimes times;
  PassCostsMemo costs;
  PlacementMemo placements;
};

/// One stage's ops boiled down to what the estimate prices: compute seconds, and each
/// distinct collective (where it runs, group slot, collective, bytes) with its call
/// count. It does not depend on the placement, so a run of candidates equal but for
/// their placement tallies each program once and prices the tally per placement.
struct StageTally {
  enum class Where : std::uint8_t { blocking, side_interfering, side_quiet };
  struct Use {
    Where where = Where::blocking;
    sim::GroupSlot slot = sim::kNoGroup;
    sim::CollOp coll = sim::CollOp::all_reduce;
    double bytes = 0;
    double calls = 0;  // Σ repeat over the ops
  };
  double compute = 0;         // compute ops every rank runs alike
  double scaled_compute = 0;  // expert ops, times the stage's most loaded rank's work_scale
  double side_compute = 0;    // timed ops on the side streams (activation offload's copies)
  std::vector<Use> uses;
  std::optional<Use> last_dp;  // the dp stream's last collective (its `calls`: that op's repeat)
};

/// The program an estimate reads: the candidate's, or one at fewer micro-batches
/// (built_at) whose tally grows by one micro-batch's for each micro-batch it lacks; its
/// ops tallied per stage (what the estimate prices, placement aside). `peak_built_at`:
/// whether the peak needed another program (one at the plan's peak_at), the items of
/// the small one not telling it (ItemMemory::read).
struct EstimatePrograms {
  wl::BuiltProgram built;  // its ranks and groups left empty (wl::RankTable::omit): `placed` holds them
  std::shared_ptr<const PlacedRanks> placed;
  int built_at = 0;
  std::vector<StageTally> all;             // every op of each stage
  std::vector<StageTally> one_microbatch;  // built_at < M: the ops of one micro-batch of the steady state
  bool peak_built_at = false;
};

/// How analyze() may build: `extrapolate` lets it price a candidate with many
/// micro-batches from a program at fewer (the file comment); `full` always builds the
/// candidate's own program (the tests compare the two).
enum class EstimateBuild { extrapolate, full };

/// Where analyze() builds instead of M: `built_at` micro-batches (the fewest the schedule
/// takes with a first, a middle and a last), the micro-batch of that program whose ops
/// stand for each micro-batch more (neither the first nor the last), and the micro-batch
/// count whose walk gives the peak: M, or fewer past the schedule's warm-up. peak_at ==
/// built_at: the built program's own peak (activation offload, whose reloads hold memory
/// across items).
struct ExtrapolationPlan {
  int built_at = 0;
  int microbatch = 0;
  int peak_at = 0;
  bool operator==(const ExtrapolationPlan&) const = default;
};

/// The plan for a candidate; std::nullopt when building M itself is no dearer, when the
/// schedule's peak grows with M (GPipe) or a micro-batch's ops on a stage differ by
/// direction (DualPipe), or when per-micro-batch data-parallel traffic carries no
/// micro-batch label (ZeRO-2/3 reductions and ZeRO-3 gathers).
std::optional<ExtrapolationPlan> extrapolation_plan(const wl::Scenario& candidate);

/// memory_lower_bound (search.hpp) from inputs made for the candidate.
double memory_lower_bound(const wl::Scenario& candidate, const wl::ProgramInputs& inputs);

/// The layout rules' verdict: "" when the candidate is valid, else "invalid-<key>".
std::string invalid_layout(const wl::Scenario& sc);

/// Stage 2 for one candidate: the resolver's rules, the memory peak of the built
/// program (the numbers `layoutsim check` prints), and the estimate.
///
/// `candidate` is the resolved base with a complete layout (candidate_scenario), so
/// of wl::resolve's three stages only the layout rules (wl::validate) can fail: the
/// derived fields it sets (dp, micro-batches) are set, and the cluster and its
/// perturbations are the base's, already checked. Skipping resolve's topology build
/// is what keeps this stage O(layers + ops) rather than O(links) per candidate. The
/// simulation stage resolves its candidates in full. `programs` receives the program
/// built and its tallies (kept, or rejected for its built memory peak), for the
/// candidates that differ from it only in placement.
Estimate analyze(const wl::Scenario& candidate, EstimateCaches& caches, const ComputeSlowdowns& slow,
                 std::optional<EstimatePrograms>& programs, EstimateBuild how = EstimateBuild::extrapolate);

/// Whether two candidates build the same stage programs: equal but for the placement,
/// which moves ranks onto devices (the rank table and the groups) and nothing else.
bool same_but_placement(const SearchLayout& a, const SearchLayout& b);

/// Stage 2 for a run of candidates equal but for their placement (the enumeration's
/// innermost axis): the first is analysed in full; the others share its verdict on
/// memory, its peak, bubble and FLOPs, and its stage programs with their own ranks and
/// groups, on which their step is estimated. The same estimates, to the bit, as one
/// analyze() each (test_search), for one program build per run instead of per candidate.
void analyze_run(const std::vector<wl::Scenario>& run, EstimateCaches& caches, const ComputeSlowdowns& slow, Estimate* out);

}  // namespace ls::tools
