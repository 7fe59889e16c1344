// sim/program.hpp — what the engine executes: per-stage op templates and the rank map.
//
// The kernel is workload-agnostic: an op names a group *slot* (an index into its
// rank's group table), carries an opaque tag and labels for the recorder, and may
// be scaled by a per-rank factor. What the slots, tags and labels mean (parallelism
// axes, forward/backward, micro-batches, layers, MoE experts) is workloads/
// vocabulary (workloads/spec/vocabulary.hpp).
//
// Every rank (one per GPU) belongs to one pipeline stage and runs that stage's
// template: an ordered list of ops per stream. Ranks of a stage share the template
// (memory O(stages · ops), not O(ranks · ops)); what differs per rank — its device,
// its groups, perturbations — lives in RankInfo and in the engine.
//
// Semantics the engine guarantees:
//  * Ops of one stream run one at a time, in order.
//  * An op starts when its stream is free, the previous op of the stream is done and
//    every dependency (stream, index) of the same rank is done.
//  * A collective op starts for the whole group when every member has reached it
//    (rendezvous); it finishes for all members together.
//  * A send op moves `bytes` to the rank Program::pp_peer gives for `peer_stage`
//    and marks the receiver's op `peer_op` (a recv) as arrived.
//    A recv op completes as soon as it has started and its data has arrived.
//  * mem_delta_bytes is applied to the rank's memory counter when the op completes;
//    mem_working_bytes is held on top of the counter while the op runs (buffers it
//    allocates and frees itself): it counts in the peak, never in the counter.
//
// Units: bytes, FLOP, sim::Time.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/comm_plan.hpp"
#include "sim/network.hpp"
#include "sim/time.hpp"

namespace ls::sim {

enum class OpKind : std::uint8_t { compute, collective, send, recv };

/// Index into RankInfo::group. Statistics (exposed time, bytes sent) are kept per
/// slot. Slot kNoGroup is reserved for ops that wait on no group (compute).
using GroupSlot = std::uint8_t;
inline constexpr int kGroupSlots = 9;
inline constexpr GroupSlot kNoGroup = 0;
inline constexpr int kOpLabels = 4;   // Op::labels

/// Streams of one rank. `main` is the one whose waits count as exposed time and
/// whose counts_as_busy ops form the busy window; recvs live on it. Sends live on
/// `send`. `side0`, `side1` and `side2` run beside main (what for is the workload's
/// choice: workloads/spec/vocabulary.hpp).
enum class Stream : std::uint8_t { main = 0, send = 1, side0 = 2, side1 = 3, side2 = 4 };
inline constexpr int kStreamCount = 5;

struct OpRef {
  std::uint8_t stream = 0;
  std::uint32_t index = 0;
};

struct Op {
  OpKind kind = OpKind::compute;
  GroupSlot group_slot = kNoGroup;    // collectives: the group; send/recv: statistics slot
  CollOp coll = CollOp::all_reduce;   // collectives
  std::uint8_t tag = 0;               // opaque to the engine: what the op is for (wl::Work)
  bool counts_as_busy = false;        // inside the busy window (RankStats::busy_*): the bubble's complement
  // Opaque labels carried for the recorder and the deadlock message; the engine never
  // reads them otherwise (workloads/spec/vocabulary.hpp names them). -1: unset.
  std::array<std::int32_t, kOpLabels> labels{-1, -1, -1, -1};
  Time duration;                      // compute: nominal time, before perturbations
  double hw_flops = 0;                // compute: hardware FLOPs (recompute included)
  double model_flops = 0;             // compute: model FLOPs (MFU)
  double bytes = 0;                   // collective: per-rank buffer size S; send: message size
  std::uint8_t repeat = 1;            // collective: run the plan this many times back to back
                                      // (the 2 TP all-reduces of one layer pass: one op, half the events)
  std::uint8_t variant = 0;           // weighted all-to-all: 0 member i sends S·w[j] to j, 1 sends S·w[i]
  bool scaled_by_rank = false;        // compute: duration and FLOPs times RankInfo::work_scale
  std::int32_t peer_stage = -1;       // send: destination stage
  std::uint32_t peer_op = 0;          // send: index of the matching recv on the main stream there
  std::int64_t mem_delta_bytes = 0;   // applied at completion
  std::int64_t mem_working_bytes = 0; // held while the op runs, on top of the counter before its delta
  std::uint32_t dep_begin = 0;        // into StageProgram::deps
  std::uint32_t dep_count = 0;
};

struct StageProgram {
  std::array<std::vector<Op>, kStreamCount> streams;
  std::vector<OpRef> deps;
  std::int64_t static_memory_bytes = 0;  // weights, grads, optimizer state, buffers
};

/// Where a rank sits. Group ids index Program::groups; -1 when the slot is unused
/// (a degree-1 group: its collectives complete at once).
struct RankInfo {
  std::int32_t device = 0;     // GPU index in the cluster (rank == device index here)
  std::int32_t stage = 0;
  std::int32_t dp = 0, tp = 0, ep = 0;  // coordinates (the builder's; the engine never reads them)
  std::array<std::int32_t, kGroupSlots> group{-1, -1, -1, -1, -1, -1, -1, -1, -1};  // by GroupSlot
  double work_scale = 1.0;     // multiplies ops with scaled_by_rank (workloads: expert load)
};

struct Group {
  GroupSlot slot = kNoGroup;
  std::vector<std::int32_t> ranks;  // in ring order
};

struct Program {
  std::vector<StageProgram> stages;
  std::vector<RankInfo> ranks;   // index = rank
  std::vector<Group> groups;
  /// rank of the stage-`s` peer with the same (dp, tp) coordinates: peer[rank*stages + s]
  std::vector<std::int32_t> pp_peer;
  /// Weighted all-to-all: weight of each member index of a group of this size (empty:
  /// uniform). With variant 0 member i sends S·w[j] to j, with variant 1 S·w[i].
  std::vector<double> all_to_all_weight;
  /// MoE dispatch limited to a few nodes per token (then all_to_all_weight is uniform).
  NodeLimitedDispatch node_dispatch;

  /// The ops `rank` runs in a step, over all its streams.
  std::size_t rank_op_count(std::size_t rank) const {
    std::size_t n = 0;
    for (const auto& s : stages[static_cast<std::size_t>(ranks[rank].stage)].streams) n += s.size();
    return n;
  }
};

}  // namespace ls::sim
