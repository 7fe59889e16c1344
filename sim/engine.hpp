// sim/engine.hpp — the executor: replays a Program on the event queue and the flow
// network, rank by rank, stream by stream.
//
// The engine owns its event queue and per-rank state; it borrows the program, the
// comm planner and the network (all must outlive it). Two engines never share
// state, so several simulations can live in one process (sweeps run them on threads).
//
// Event classes (lower runs first at equal time): flow completions free bandwidth
// before anything else looks at it; op completions then start successors; the rate
// re-solve runs last so that every flow started at one instant is solved in one batch.
//
// Cost: O(E log E) for E events; per-rank state is O(streams + pipeline messages in flight to it).
#pragma once

#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/event_queue.hpp"
#include "sim/mailboxes.hpp"
#include "sim/network.hpp"
#include "sim/program.hpp"
#include "sim/time.hpp"

namespace ls::sim {

/// Per-rank statistics accumulated while running (one step).
struct RankStats {
  Time compute_busy;                 // compute ops (incl. optimizer)
  /// Of compute_busy, the time a collective of a measured side stream was in flight
  /// beside it (EngineConfig::overlap_streams; zero when none is measured).
  Time compute_beside_comm;
  // The busy window: main-stream ops with counts_as_busy (workloads: micro-batch
  // work, compute and in-layer collectives); the bubble is the window minus this.
  Time busy_time;
  Time busy_from = Time::max();      // first such op's start
  Time busy_until;                   // last such op's end
  Time end;                          // when the rank's last op of the step finished
  Time exposed[kGroupSlots];         // main stream waiting on each group slot
  double bytes_sent[kGroupSlots] = {};
  double hw_flops = 0, model_flops = 0;
  std::int64_t mem_now = 0, mem_peak = 0;      // dynamic memory (static excluded)
};

/// One executed op, reported to the observer (traced ranks only).
struct OpRecord {
  std::int32_t rank = 0;
  std::uint8_t stream = 0;
  std::uint32_t index = 0;
  const Op* op = nullptr;
  Time start, end;
  std::uint64_t flow_id = 0;  // send/recv pairing id (both ends carry the same id)
};

/// Receives what the recorder needs. Called only for ranks with traced[rank] set.
class ExecutionObserver {
public:
  virtual ~ExecutionObserver() = default;
  virtual void on_op(const OpRecord& rec) = 0;
  virtual void on_memory(std::int32_t rank, Time t, std::int64_t dynamic_bytes) = 0;
};

/// For the critical path: for every executed op, when it ran and which op released it.
/// No default member initialisers on purpose: the engine allocates one per op
/// without zero-filling (every field is written when the op starts).
struct OpTrace {
  Time start, end;
  /// Global op id of the op whose completion let this one start (-1: step start).
  std::int32_t enabler;
  /// Collective: the member that arrived last (the rendezvous completed at its start;
  /// of members arriving at one instant, the lowest rank).
  /// Recv: the matching send (the data arrived at its end). -1 otherwise.
  std::int32_t peer;
};  // 24 bytes: one per executed op, so it is kept small (first-touch page faults dominate)

/// The symmetric fast path (workloads/build/symmetry.hpp): ranks come in R replicas,
/// grouped in classes of alike ones; one replica of each class runs (its runner), and
/// every other rank shares the timeline of its position's rank in its class's runner.
/// A collective over ranks of several replicas starts when its simulated members
/// arrive. "Ghost" plans run beside a simulated plan (same phases, same start) so that
/// links the replicas share carry every replica's traffic; each ghost flow must drain
/// within `tolerance` of its simulated twin, else run_step throws SymmetryBroken (the
/// caller runs again in finer classes or every rank).
struct EngineSymmetry {
  int replicas = 1;                          // 1: off
  std::vector<std::int32_t> replica;         // per rank
  std::vector<std::int32_t> position;        // per rank: its place in a replica
  std::vector<std::int32_t> rank_at;         // [position · replicas + replica] → rank
  /// Per replica: the replica that runs for it (itself when it runs). Empty: replica 0
  /// runs for every replica (one class).
  std::vector<std::int32_t> runner;
  std::int32_t runner_of_replica(std::size_t k) const { return runner.empty() ? 0 : runner[k]; }
  /// Whether `rank` runs its ops: every rank when off, else the runners' ranks (the
  /// others are their mirrors).
  bool runs(std::size_t rank) const {
    return replicas <= 1 || runner_of_replica(static_cast<std::size_t>(replica[rank])) == replica[rank];
  }
  /// The rank whose timeline `rank` shares: itself when it runs.
  std::int32_t runner_rank(std::size_t rank) const {
    if (replicas <= 1) return static_cast<std::int32_t>(rank);
    const auto R = static_cast<std::size_t>(replicas);
    return rank_at[static_cast<std::size_t>(position[rank]) * R +
                   static_cast<std::size_t>(runner_of_replica(static_cast<std::size_t>(replica[rank])))];
  }
  std::unordered_map<const CommPlan*, std::vector<const CommPlan*>> ghosts;
  Time tolerance = Time::from_ps(1000);
  /// Tied plans, the cheaper form of ghosts: a plan runs as `plan`, whose flows cross
  /// the union of the `copies` alike copies' paths (the runner's first, each `path_len /
  /// copies` links) at one rate, a link crossed by several copies carrying it that many
  /// times (the network's multiplicity). That is the untied run exactly when every copy
  /// is max-min bottlenecked on its own path; the engine checks it after every
  /// re-solve (FlowNetwork::each_part_bottlenecked) and throws SymmetryBroken otherwise.
  struct Tied {
    std::shared_ptr<const CommPlan> plan;
    std::uint32_t copies = 1;
  };
  std::unordered_map<const CommPlan*, Tied> tied;
};

class SymmetryBroken : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct EngineConfig {
  std::vector<double> compute_factor;   // per rank (device) slowdown, default 1
  double compute_cv = 0, comm_cv = 0;   // jitter: lognormal-ish multiplicative noise
  std::uint64_t seed = 0;
  std::vector<std::uint8_t> traced;     // per rank; empty = none
  bool record_ops = false;              // fill op traces for the critical path
  /// Bit s set: a collective on stream s counts as communication beside the main
  /// stream's compute (RankStats::compute_beside_comm). Measured as it runs, in O(ranks)
  /// memory, so it holds at any program size. 0: not measured.
  std::uint8_t overlap_streams = 0;
  static_assert(kStreamCount <= 8, "overlap_streams holds one bit per stream");
  /// Bit g set: a main-stream collective of group slot g counts as exposed from its
  /// group's last arrival, the member's wait for the others before it being idle
  /// (workloads: a pipeline stage waiting for a partner stage is in the pipeline's
  /// drain, as a recv's wait before its data moves is). Clear: from the member's own.
  std::uint16_t exposed_from_last_arrival = 0;
  static_assert(kGroupSlots <= 16, "exposed_from_last_arrival holds one bit per group slot");
  /// Names of the group slots, streams and op labels for the deadlock message
  /// (empty: "slot<N>", the generic stream name; an unnamed label is not printed).
  std::array<std::string, kGroupSlots> group_slot_names;
  std::array<std::string, kStreamCount> stream_names;
  std::array<std::string, kOpLabels> label_names;
  EngineSymmetry symmetry;
  /// Run each set of an all-to-all phase's alike flows as one network flow
  /// (sim/alike_flows.hpp); run_step throws AlikeFlowsDiffer when a set's copies would
  /// run at different rates (the caller runs again without).
  bool fold_alike_flows = false;
};

class Engine {
public:
  Engine(const Program& program, CommPlanner& planner, FlowNetwork& network, EngineConfig config);

  /// Runs one training step starting at `start`; returns the time the last op ended.
  /// Throws std::runtime_error naming the waiting ranks if the program deadlocks.
  Time run_step(Time start, int step_index);

  const std::vector<RankStats>& stats() const { return stats_; }
  /// The rank's compute slowdown from the next step on (a drifting device); the
  /// symmetric fast path does not allow it (every replica must stay alike).
  void set_compute_factor(std::int32_t rank, double factor);
  std::uint64_t events_processed() const { return events_; }
  /// False for the ranks the symmetric fast path does not run (their stats are the
  /// representative's copies; their op traces are not written).
  bool simulated(std::int32_t rank) const { return active_.empty() || active_[static_cast<std::size_t>(rank)] != 0; }
  int ranks_simulated() const;
  void set_observer(ExecutionObserver* obs) { observer_ = obs; }

  /// Op traces of the last step (record_ops): global op id = op_base(rank, stream) + index.
  std::span<const OpTrace> op_traces() const { return {op_traces_.get(), op_trace_count_}; }
  std::int64_t op_base(std::int32_t rank, int stream) const;
  /// Decodes a global op id.
  void decode(std::int64_t gid, std::int32_t& rank, int& stream, std::uint32_t& index) const;

private:
  enum Class : std::uint8_t { kFlowDone = 0, kCommPhaseDone = 1, kOpDone = 2, kResolve = 3 };

  struct StreamState {
    std::uint32_t pos = 0;
    bool running = false;
    Time started;
    Time blocked_since = Time::max();
    GroupSlot blocked_slot = kNoGroup;
    std::int64_t blocked_by = -1;   // global op id of the dependency that blocked it
  };
  struct RankState {
    StreamState streams[kStreamCount];
    // Overlap meter (overlap_streams): measured side collectives in flight, since when
    // at least one has been, the in-flight time before that, and that running total
    // when the main stream's compute op started.
    std::uint32_t side_in_flight = 0;
    Time side_since, side_total, compute_mark;
  };
  struct GroupState {
    std::uint32_t arrived = 0;
    Time last_arrival;
    std::int64_t last_arriver = -1;  // global op id (ties: the lowest)
  };
  /// A plan as a comm launches it, made once per group or peer and op (launch_plan):
  /// after tie(), with its tied copies, its ghosts on the symmetric fast path, and
  /// where launching it reads it (the plan, its phases, the first one's flows, its
  /// links). With thousands of ranks each on plans of their own these records are
  /// seldom in the cache and far apart: prefetch() asks for them at once, before the
  /// comm is set up, rather than one after another as start_phase reads them.
  struct LaunchPlan {
    const CommPlan* plan;
    std::uint32_t copies;
    const std::vector<const CommPlan*>* ghosts;
    std::array<const void*, 4> touches;
    void prefetch() const {
      for (const void* p : touches) __builtin_prefetch(p);
    }
  };
  struct Comm {
    const CommPlan* plan = nullptr;
    std::uint32_t phase = 0;
    std::uint32_t repeat_left = 0;
    std::uint32_t outstanding = 0;
    std::uint32_t multiplier = 1;  // op.repeat folded into bytes and latency
    double scale = 1.0;             // jitter on bytes
    std::int32_t group = -1;        // collective: group id; transfer: -1
    std::int32_t rank = -1;         // transfer: sender rank; collective: any member
    std::uint8_t stream = 0;        // collective: the stream it sits on
    std::uint32_t op_index = 0;     // sender's op index (send stream)
    std::int32_t peer = -1;         // transfer: the receiving rank
    std::uint32_t recv_ordinal = 0;  // transfer: its message's ordinal at the peer (mailboxes_)
    Time started;
    bool free = true;
    const std::vector<const CommPlan*>* ghosts = nullptr;  // symmetric fast path
    std::uint32_t tied_copies = 0;                          // symmetric fast path: > 1 when tied
    void use(const LaunchPlan& lp) {
      plan = lp.plan;
      tied_copies = lp.copies;
      ghosts = lp.ghosts;
    }
  };

  void try_advance(std::int32_t rank);
  bool try_start(std::int32_t rank, int stream);
  // try_start's phases (engine.cpp). The enabler: with record_ops, the op whose end
  // let this one start (global op id, -1 none).
  struct Enabler {
    std::int64_t gid = -1;
    Time end;
  };
  /// Whether the op's dependencies on the rank's other streams are done; when one is
  /// not, the stream's wait starts (blocked_since). Records the latest in `enabler`.
  bool deps_done(std::int32_t rank, const RankState& rs, StreamState& ss, const StageProgram& sp, const Op& op, bool rec,
                 Enabler& enabler);
  /// Ends the stream's wait, if any: exposed time of the slot it waited on, busy time
  /// when the op counts as busy.
  void end_wait(std::int32_t rank, int stream, StreamState& ss, const Op& op);
  /// Opens the op's trace (record_ops); the previous op of its stream may be the enabler.
  void trace_start(std::int32_t rank, int stream, const StreamState& ss, Enabler enabler);
  void start_compute(std::int32_t rank, int stream, StreamState& ss, const RankInfo& info, const Op& op);
  /// True when the recv completed at once (its data had arrived).
  bool start_recv(std::int32_t rank, int stream, StreamState& ss, const RankInfo& info);
  void start_send(std::int32_t rank, StreamState& ss, const RankInfo& info, const Op& op);
  /// True when the collective completed at once (a degree-1 group); else it starts when
  /// the last simulated member arrives.
  bool start_collective(std::int32_t rank, int stream, StreamState& ss, const RankInfo& info, const Op& op, bool rec);
  void complete_op(std::int32_t rank, int stream, Time now);
  /// The overlap meter at an op's start and end (overlap_streams).
  void meter_start(RankState& rs, int stream, const Op& op);
  void meter_end(std::int32_t rank, RankState& rs, int stream, const Op& op, Time now);
  /// Starts the comm's plan (its plan, copies and ghosts set: Comm::use).
  void start_comm(std::uint32_t comm_id, Time now);
  void start_phase(std::uint32_t comm_id, Time now);
  void finish_comm(std::uint32_t comm_id, Time now);
  std::uint32_t alloc_comm();
  /// The group's plan for `op` (after tie() and folding), cached per group.
  const LaunchPlan& group_plan(std::int32_t group, const Op& op);
  /// `plan` (after tie(), with `copies`) as comms launch it.
  LaunchPlan launch_plan(const CommPlan* plan, std::uint32_t copies) const;
  /// The symmetric fast path's tied form of `plan` (EngineSymmetry::tied), if any:
  /// replaces `plan` and sets `copies` (else 0). Looked up once per cached plan.
  void tie(const CommPlan*& plan, std::uint32_t& copies) const;
  void schedule_resolve(Time now);
  double jitter(double cv, std::uint64_t a, std::uint64_t b) const;
  std::string describe_deadlock() const;
  std::string slot_name(GroupSlot slot) const;
  std::string stream_name(int stream) const;
  /// " mb3 chunk0": the named labels, each with a leading space ("" when none is named).
  std::string labels_text(const Op& op) const;
  /// The stage whose send delivers stage `stage`'s recv at main-stream index (-1: none).
  std::int32_t sender_stage(std::int32_t stage, std::uint32_t recv_index) const;
  const Op& op_at(std::int32_t rank, int stream, std::uint32_t idx) const {
    return program_.stages[static_cast<std::size_t>(program_.ranks[static_cast<std::size_t>(rank)].stage)]
        .streams[static_cast<std::size_t>(stream)][idx];
  }

  const Program& program_;
  CommPlanner& planner_;
  FlowNetwork& net_;
  EngineConfig cfg_;
  ExecutionObserver* observer_ = nullptr;

  EventQueue queue_;
  Time now_;
  int step_ = 0;
  std::uint64_t events_ = 0;
  bool resolve_pending_ = false;

  std::vector<RankState> ranks_;
  std::vector<RankStats> stats_;
  std::vector<GroupState> groups_;
  /// Pipeline messages sent and not yet received, per receiving rank.
  Mailboxes mailboxes_;
  // per stage: each main-stream recv's ordinal among the stage's recvs (UINT32_MAX when not a recv)
  std::vector<std::vector<std::uint32_t>> recv_ordinal_;
  // plan: after the symmetric fast path's substitution (tie()); copies > 1 when tied.
  struct GroupPlan {
    CollOp coll;
    double bytes;
    std::uint8_t variant;
    LaunchPlan launch;
  };
  std::vector<std::vector<GroupPlan>> group_plans_;
  std::vector<Comm> comms_;
  std::vector<std::uint32_t> free_comms_;
  std::vector<std::uint32_t> flow_comm_;   // flow id -> comm id
  std::vector<FlowId> changed_;
  std::vector<std::int64_t> op_base_;      // per rank*kStreamCount
  // Raw storage (std::malloc; OpTrace is an implicit-lifetime aggregate): Time's
  // member initialiser would otherwise zero-fill every op's trace before its op runs.
  // Only simulated ranks' ops have one (op_base_). Every field is written when its op
  // starts, before anything reads it.
  struct FreeDeleter {
    void operator()(OpTrace* p) const { std::free(p); }
  };
  std::unique_ptr<OpTrace, FreeDeleter> op_traces_;
  std::size_t op_trace_count_ = 0;
  /// A rank's sends to one peer stage with one size: the plan and, so that a send
  /// need not look its peer up again, the peer and its stage's recv ordinals.
  struct TransferPlan {
    std::int32_t peer_stage;
    double bytes;
    LaunchPlan launch;
    std::int32_t peer;
    const std::uint32_t* peer_recv_ordinal;  // recv_ordinal_ of the peer's stage
  };
  std::vector<std::vector<TransferPlan>> transfer_plans_;  // per rank
  std::uint64_t next_flow_tag_ = 1;
  // Symmetric fast path (EngineSymmetry): which ranks run, each group's simulated
  // member count, each flow's place in its phase and, per comm with ghosts, the
  // earliest and latest drain of each place (twins must agree).
  std::vector<std::uint8_t> active_;
  std::vector<std::vector<std::int32_t>> stands_for_;  // per replica: the others it runs for
  std::vector<std::uint32_t> group_active_;
  std::vector<std::uint32_t> flow_place_;
  std::vector<std::vector<std::pair<Time, Time>>> ghost_span_;
  // Per flow id of a tied or folded plan: its first copy's path and the number of
  // copies (0: neither); `folded` when some of the copies are alike flows of its plan.
  struct TiedFlow {
    const LinkId* path = nullptr;
    std::uint32_t len = 0;
    std::uint32_t copies = 0;
    bool folded = false;
  };
  std::vector<TiedFlow> flow_tied_;
  bool any_tied_ = false;  // tied plans (symmetric fast path) or folded ones: check each resolve
  // The folded forms of the group plans (fold_alike_flows), owned here: the cached
  // GroupPlan entries point at them.
  std::vector<std::unique_ptr<CommPlan>> folded_plans_;
  /// Throws SymmetryBroken (AlikeFlowsDiffer for a folded flow) unless every copy of
  /// tied flow `f` is max-min bottlenecked on its own path (after each resolve; at the
  /// start of a lone one).
  void check_tied() const;
  void check_tied_flow(FlowId f, const TiedFlow& t) const;
  void start_ghosts(std::uint32_t comm_id, Time now);
  void check_ghosts(std::uint32_t comm_id) const;
  void copy_to_mirrors();
  void observe(std::int32_t rank, int stream, std::uint32_t index, const Op& op, Time start, Time end, std::uint64_t flow_id,
               std::int64_t mem_now);
};

}  // namespace ls::sim
