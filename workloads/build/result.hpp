// workloads/build/result.hpp — what one simulated scenario produced: the numbers behind the
// summary table, the JSON summary (README.md, "JSON reference") and the Chrome trace.
// Units: SI (seconds, bytes, bytes/s, FLOP); sim::Time for trace timestamps.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "sim/program.hpp"
#include "workloads/build/checkpoint.hpp"
#include "workloads/cost/kernels.hpp"
#include "workloads/model/training_cost.hpp"
#include "workloads/spec/vocabulary.hpp"
#include "sim/time.hpp"

namespace ls::wl {

struct StageResult {
  int stage = 0;
  int layers = 0;
  double compute_s = 0;          // busy compute time, mean over the stage's ranks
  double bubble_fraction = 0;    // measured (docs/ARCHITECTURE.md definition), mean over the stage's ranks
  double bubble_fraction_analytic = 0;
  double idle_fraction = 0;      // 1 - compute busy / step time
  double compute_min_s = 0, compute_max_s = 0;  // over the stage's ranks
  std::int32_t slowest_device = -1;  // the rank with compute_max_s (first on ties)
};

struct AxisComm {
  double bytes_per_device = 0;   // bytes sent per device per step, mean over devices of the axis
  double exposed_s = 0;          // time the compute stream waited on this axis, mean over devices (run only)
  // The axis against compute, from the built program (workloads/analysis/axis_comm.hpp):
  // the same figures in `check` and `run`.
  bool present = false;               // some device takes part in the axis
  double hardware_flops_per_device = 0;  // per step, mean over the axis's devices
  double compute_s = 0;               // nominal compute seconds per device per step, likewise
  double bytes_per_flop = 0;          // bytes_per_device / hardware_flops_per_device
  double slowest_link_Bps = 0;        // the smallest link rate the axis's flows cross (0: none)
  std::string slowest_link_kind;      // that link's kind: "nvlink", "infiniband", ...
  double time_at_slowest_link_s = 0;  // each op's bytes at its own plan's slowest link, summed
  double comm_to_compute = 0;         // time_at_slowest_link_s / compute_s
};

struct LinkKindStats {
  std::string kind;
  int count = 0;
  double bytes = 0;                // on the wire (payload ÷ the algorithms' efficiency)
  double mean_utilization = 0;
  double max_utilization = 0;
  double payload_bytes = 0;        // the payload share of `bytes`
};

struct LinkStat {
  std::string name;
  std::string kind;
  double bytes = 0;
  double utilization = 0;        // bytes / (bandwidth × run time)
  double busy_fraction = 0;      // share of the run with at least one flow on the link
  double busy_utilization = 0;   // bytes / (bandwidth × busy time): utilisation while busy
  double bottleneck_s = 0;       // time saturated, i.e. the bottleneck of some flow (sim/network.hpp)
  double payload_bytes = 0;      // the payload share of `bytes` (on the wire)
};

/// Links that behaved identically (same kind, same name shape, same statistics):
/// "node*.gpu*->node*.nvswitch" × 1024. The statistics are those of each member.
struct LinkGroup {
  std::string pattern;           // the members' names, digits that differ as '*'
  std::string link_class;        // kind and name shape, every number as '*': "nvlink node*.gpu*->node*.nvswitch"
  std::string kind;
  std::string example;           // one member's name
  int count = 0;
  double bytes = 0;              // per member, on the wire
  double payload_bytes = 0;      // per member, its payload share
  double utilization = 0, busy_fraction = 0, busy_utilization = 0;
  double bottleneck_s = 0;
  double bottleneck_fraction = 0;  // bottleneck_s / run time
  bool busiest_of_class = false;   // the busiest group of its class (always listed)
};

/// The link class that was a flow's bottleneck longest in the step (link_groups.hpp).
struct LinkBottleneck {
  bool present = false;             // some link was saturated
  std::string link_class, kind, pattern;  // the class, and its busiest group's pattern
  double bottleneck_s = 0;          // time that group's links were saturated
  double fraction = 0;              // bottleneck_s / the step
  std::vector<LinkGroup> tied;      // the busiest group of each other class within 1 point
};

struct MemoryTerms {
  int stage = 0;
  double weights = 0, gradients = 0, master = 0, optimizer = 0;
  double activations = 0;        // peak in-flight activations
  double buffers = 0;            // communication buffers, ZeRO-3 gathered window
  double peak = 0;               // peak over the timeline
};

/// A device's share of the critical path (time the path ran on it / step time).
struct DeviceShare {
  std::int32_t device = -1;
  double share = 0;
};

struct CriticalPath {
  int device = 0;
  double share_compute = 0, share_comm = 0, share_wait = 0;
  double comm_tp_s = 0, comm_pp_s = 0, comm_dp_s = 0, comm_ep_s = 0, compute_s = 0, wait_s = 0;
  std::vector<DeviceShare> devices;  // the five devices holding most of the path, most first
};

/// A perturbed device (perturbations.devices) and what it did in the first step.
struct PerturbedDevice {
  std::int32_t device = -1;
  int stage = 0;
  double compute_slowdown = 1;   // product of its entries
  double compute_s = 0;          // its compute busy time
  double stage_mean_compute_s = 0;
  double idle_fraction = 0;
  double critical_share = 0;     // of the critical path
  double cost_s = std::numeric_limits<double>::quiet_NaN();  // step time it costs (what-if); NaN: not priced
};

struct Warning {
  std::string code;
  std::string message;
};

/// The trace's rows per device (Span::track). The recorder assigns them, the trace
/// writer names them; tids are device · kCount + track, so kCount leaves room.
namespace track {
inline constexpr std::uint8_t compute = 0;   // compute ops and the collectives that block them (tp)
inline constexpr std::uint8_t tp = 1;
inline constexpr std::uint8_t pp_send = 2;
inline constexpr std::uint8_t dp = 3;
inline constexpr std::uint8_t ep = 4;
inline constexpr std::uint8_t prefetch = 5;  // ZeRO-3 parameter gathers (over dp)
inline constexpr std::uint8_t pp_recv = 6;   // pipeline receives (waits) drawn beside compute
inline constexpr std::uint8_t cp = 7;        // context-parallel K/V exchange (ring or all-gather)
inline constexpr int kCount = 8;             // tracks per device in the tid space
}  // namespace track

/// One span of the timeline of a traced rank (the trace does not hold every rank).
struct Span {
  std::int32_t device = 0;
  std::uint8_t track = track::compute;  // one of wl::track
  Work work = Work::other;
  sim::OpKind kind = sim::OpKind::compute;
  sim::CollOp coll = sim::CollOp::all_reduce;  // collectives: which one (trace names "AR tp", "RS dp", ...)
  std::int32_t microbatch = -1;
  std::int32_t chunk = 0;
  std::int32_t layer_begin = -1, layer_end = -1;
  sim::Time start, end;
  std::uint64_t flow_id = 0;     // pipeline send/recv pairing (0: none)
  bool flow_out = false;         // this span is the sending end of flow_id
  bool critical = false;         // on the critical path
};

/// One piece of the critical path: [start, end) of `device`'s time spent on one kind
/// of work. Consecutive segments tile the step exactly (the trace draws them on a
/// "critical path" track).
struct CriticalSegment {
  enum class Kind : std::uint8_t { compute, comm, wait };
  Kind kind = Kind::wait;
  Axis axis = Axis::none;   // comm: which axis
  std::int32_t device = -1;           // -1: step start, before any op
  Work work = Work::other;
  std::int32_t microbatch = -1;
  std::int32_t layer_begin = -1, layer_end = -1;
  sim::Time start, end;
};

struct CounterSample {
  sim::Time t;
  double value = 0;
};

struct CounterTrack {
  std::string name;              // "mem node0.gpu3" / "util node0.gpu3->nvswitch0"
  std::int32_t device = -1;      // owning device, -1 for links
  std::int32_t node = 0;         // process to draw it under
  std::vector<CounterSample> samples;
};

struct StepStats {
  double mean_s = 0, p50_s = 0, p99_s = 0, max_s = 0;
  std::vector<double> step_s;
};

/// Mixture-of-experts routing as simulated (present only for MoE models).
struct MoeStats {
  bool present = false;
  int experts = 0, top_k = 0, ep = 1;
  std::vector<double> expert_load;     // share of routed tokens offered to each expert
  std::vector<double> device_factor;   // per ep index: expert work / balanced share
  double dropped_fraction = 0;         // of routed tokens, by the capacity factor
  double dropped_tokens_per_step = 0;  // token-expert assignments dropped per step
};

struct Result {
  std::string scenario;
  /// What was simulated, resolved (presets expanded, dp and the micro-batch count derived),
  /// so that a summary read on its own says which run it is.
  struct Setup {
    std::string model, gpu, implementation, schedule, recompute, compute_precision;
    std::string recompute_layers = "all";  // layout.recompute.layers: all, every-K or [i, j, ...]
    int expert_tp = 1;                     // layout.expert_tp as resolved (tp when unset)
    int tp = 1, pp = 1, dp = 1, cp = 1, ep = 1, zero = 0, virtual_stages = 1;
    bool sequence_parallel = false;
    std::int64_t seq_len = 0;
    int microbatch_size = 1, microbatches = 1;
    std::int64_t global_batch = 0;  // sequences per step: microbatch_size · microbatches · dp
  } setup;
  int devices = 0;
  int steps = 1;
  int gpus_per_node = 8;
  double step_time_s = 0;
  /// Where the measured step time of runs like this one fell around their predictions:
  /// from held-out published runs (error_band.hpp). rows == 0: no similar held-out run.
  struct StepTimeBand {
    int rows = 0;
    double lo_s = 0, hi_s = 0;
    double coverage = 0;  // the share of those runs the band holds
    std::string group;
  } step_time_band;
  /// The slowest of N GPUs (workloads/analysis/scale_noise.hpp): the per-GPU speed spread
  /// stated, the compute multiplier it gives on this many GPUs, and what it adds to the step
  /// (the critical path's compute × (1 − 1/factor); scale_noise.hpp fold_scale_noise).
  struct ScaleNoise {
    double variability = 0;
    double factor = 1;
    double cost_s = 0;
  } scale_noise;
  /// The step as m micro-batches × per_microbatch_s + fixed_s, from a second simulation at
  /// probe_microbatches (workloads/analysis/step_split.hpp; SimOptions::step_split).
  /// present false: not asked for. fixed_s is negative only where one more micro-batch
  /// costs more than the step's average share (a step that is not linear in m).
  struct StepSplit {
    bool present = false;
    int microbatches = 0, probe_microbatches = 0;
    double probe_step_s = 0;
    double per_microbatch_s = 0, fixed_s = 0;
  } step_split;
  double tokens_per_s = 0;
  double model_flops_per_step = 0;
  double hardware_flops_per_step = 0;
  double tflops_per_gpu = 0;
  double mfu = 0, hfu = 0;
  StepStats step_stats;

  // pipeline
  int stages = 1, microbatches = 1, virtual_stages = 1;
  std::string schedule;
  double bubble_fraction_analytic = 0;
  double bubble_fraction = 0;
  std::vector<StageResult> per_stage;
  /// Per stage: one step's nominal compute time of one of its ranks, by kind of kernel
  /// (balanced expert load, no perturbation); the parts add up to that compute time.
  std::vector<ComputeBreakdown> compute_breakdown;

  AxisComm comm[kAxisCount];  // indexed by Axis

  std::vector<LinkKindStats> links_by_kind;
  std::vector<LinkStat> busiest_links;  // top 10
  /// Ranked by bottleneck time (then utilisation): the first ten groups plus the
  /// busiest group of every link class (workloads/analysis/link_groups.hpp).
  std::vector<LinkGroup> link_groups;
  LinkBottleneck link_bottleneck;
  int link_group_count = 0;             // groups in all, before the ranking cut

  double memory_capacity_bytes = 0;
  /// capacity − reserved − fragmentation · capacity (headroom.hpp); fits ⇔ max peak ≤ this.
  double memory_usable_bytes = 0;
  bool memory_fits = true;              // memory_verdict is fits or tight
  std::string memory_verdict = "fits";  // fits | tight | does-not-fit (headroom.hpp)
  double max_peak_bytes = 0;
  std::vector<MemoryTerms> memory_per_stage;
  // What is trained (training_method.hpp): whole-model parameter counts.
  std::string training_method = "pretrain";
  double trained_parameters = 0, frozen_parameters = 0, adapter_parameters = 0;
  // Checkpoint cost and goodput (checkpoint.hpp), when the scenario has `checkpoint:`.
  bool has_checkpoint = false;
  CheckpointReport checkpoint;

  MoeStats moe;
  /// Offload (offload.hpp): PCIe bytes per device per step (busiest stage) and the
  /// share of the PCIe link's rate they use over the step. Not network flows.
  struct OffloadStats {
    bool present = false;
    double pcie_bytes_per_device = 0;
    double pcie_utilization = 0;
  } offload;
  /// TP groups whose members sit on different nodes: how many, one example (GPU
  /// names) and the link kinds its traffic uses.
  int tp_groups_crossing_nodes = 0;
  std::vector<std::string> tp_crossing_example;
  std::vector<std::string> tp_crossing_link_kinds;
  CriticalPath critical_path;
  std::vector<PerturbedDevice> perturbed_devices;  // slow devices first (device order)
  std::vector<Warning> warnings;
  TrainingCost training;  // time and cost of the whole run (scenario key training)

  // engine statistics (--profile, benchmarks)
  std::uint64_t events = 0;
  double wall_s = 0;
  /// Per device: the factor its compute ran at in the first reported step (its
  /// perturbation's slowdown × the compute beside communication, interference.hpp).
  std::vector<double> compute_factors;
  std::string symmetry = "off";  // "used", "off" or "broken: <reason>" (workloads/build/symmetry.hpp)
  int ranks_simulated = 0;
  int replica_classes = 0;  // on the fast path: the replica classes, one runner each; else 0
  /// On the fast path: links whose runner's twins stood in for them in tied flows
  /// (workloads/build/symmetry.hpp, SymmetryDecision::link_mirror); else 0.
  int mirrored_links = 0;
  /// "on": each set of an all-to-all phase's alike flows ran as one network flow
  /// (sim/alike_flows.hpp); "off" (simulation.symmetry: off); "unfolded: <reason>" when
  /// the engine refused the fold and the run was repeated without it.
  std::string alike_flows = "off";

  // trace data (filled only when a trace is requested)
  std::vector<Span> spans;
  std::vector<CounterTrack> counters;
  std::vector<CriticalSegment> critical_segments;  // first step, when a trace is requested
  std::vector<std::string> device_names;  // index = device
  std::vector<std::int32_t> device_stage;  // index = device: its pipeline stage
};

/// What `layoutsim check` prints: the resolved layout and the analytic budget.
struct GroupInfo {
  std::string axis;                      // "tp", "dp", "pp", "ep"
  std::vector<std::string> devices;      // GPU names, ring order
  bool crosses_nodes = false;  // spans NVLink domains (nodes, unless cluster.nvlink_domain joins several): uses the network
  std::vector<std::string> link_kinds;   // kinds of link the group's traffic uses
};

struct LayoutReport {
  int devices = 0;
  std::vector<int> stage_layers;         // per stage
  std::vector<GroupInfo> groups;         // one representative group per axis, plus every node-crossing TP group
  double bubble_fraction_analytic = 0;
  std::vector<MemoryTerms> memory_per_stage;  // static terms, activation peak of the ops
  double memory_capacity_bytes = 0;
  double memory_usable_bytes = 0;        // headroom.hpp
  double max_peak_bytes = 0;             // the largest stage's peak
  bool fits = true;                      // memory_fits (headroom.hpp) of max_peak_bytes: the one rule
  std::string verdict = "fits";          // fits | tight | does-not-fit
  double params_total = 0;
  double model_flops_per_step = 0;       // summed over the program's ops: equals run's
  double hardware_flops_per_step = 0;    // likewise (recompute included)
  AxisComm comm[kAxisCount];             // indexed by Axis; the reported axes (analysis/axis_comm.hpp)
  /// Data-parallel collectives as the program issues them, on stage 0's first rank per
  /// step (Op::repeat counted): weight all-gathers (ZeRO / FSDP) and gradient reductions
  /// (over dp, HSDP's replicas and the experts' data-parallel group; all-reduces without
  /// ZeRO), their calls and bytes.
  int weight_gathers_per_step = 0;
  double weight_gather_bytes_per_step = 0;
  int gradient_reductions_per_step = 0;
  double gradient_reduction_bytes_per_step = 0;
  std::vector<Warning> warnings;
};

}  // namespace ls::wl
