// sim/program.hpp — what the engine executes: per-stage op templates and the rank map.
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
//  * A send op moves `bytes` to the rank `peer` (same tp/dp coordinates, stage
//    `peer_stage`) and marks the receiver's op `peer_op` (a recv) as arrived.
//    A recv op completes as soon as it has started and its data has arrived.
//  * mem_delta_bytes is applied to the rank's memory counter when the op completes.
//
// Units: bytes, FLOP, sim::Time.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/comm_plan.hpp"
#include "sim/network.hpp"
#include "sim/time.hpp"

namespace ls::sim {

enum class OpKind : std::uint8_t { compute, collective, send, recv };
/// edp: the expert-data-parallel group (ranks holding the same experts), whose
/// traffic is reported under dp.
enum class Axis : std::uint8_t { none, tp, pp, dp, ep, edp };
inline constexpr int kAxisCount = 6;
/// What an op is for: naming, accounting (bubble, critical path) and the trace.
enum class Work : std::uint8_t { forward, backward, backward_input, backward_weight, recompute, optimizer, grad_sync, param_gather, other };

/// Streams of one rank. TP and EP collectives sit on `compute` because they block
/// it (Megatron); the trace still draws them on their own track.
enum class Stream : std::uint8_t { compute = 0, pp_send = 1, dp = 2, prefetch = 3 };
inline constexpr int kStreamCount = 4;

struct OpRef {
  std::uint8_t stream = 0;
  std::uint32_t index = 0;
};

struct Op {
  OpKind kind = OpKind::compute;
  Axis axis = Axis::none;             // collectives, send/recv
  CollOp coll = CollOp::all_reduce;   // collectives
  Work work = Work::other;
  bool microbatch_work = false;       // counts as busy for the bubble definition
  std::int32_t microbatch = -1;       // -1: not tied to a micro-batch
  std::int32_t chunk = 0;             // model chunk (virtual stage) on this rank
  std::int32_t layer_begin = -1;      // [begin, end) global layer indices, naming only
  std::int32_t layer_end = -1;
  Time duration;                      // compute: nominal time, before perturbations
  double hw_flops = 0;                // compute: hardware FLOPs (recompute included)
  double model_flops = 0;             // compute: model FLOPs (MFU)
  double bytes = 0;                   // collective: per-rank buffer size S; send: message size
  std::uint8_t repeat = 1;
  std::uint8_t variant = 0;           // ep all-to-all: 0 dispatch (to expert owners), 1 combine (back)
  bool expert_work = false;           // compute: scaled by the rank's expert load (RankInfo::expert_scale)            // collective: run the plan this many times back to back
                                      // (the 2 TP all-reduces of one layer pass: one op, half the events)
  std::int32_t peer_stage = -1;       // send: destination stage
  std::uint32_t peer_op = 0;          // send: index of the matching recv on the compute stream there
  std::int64_t mem_delta_bytes = 0;   // applied at completion
  std::uint32_t dep_begin = 0;        // into StageProgram::deps
  std::uint32_t dep_count = 0;
};

struct StageProgram {
  std::array<std::vector<Op>, kStreamCount> streams;
  std::vector<OpRef> deps;
  std::int64_t static_memory_bytes = 0;  // weights, grads, optimizer state, buffers
};

/// Where a rank sits. Group ids index Program::groups; -1 when the axis has degree 1.
struct RankInfo {
  std::int32_t device = 0;     // GPU index in the cluster (rank == device index here)
  std::int32_t stage = 0;
  std::int32_t dp = 0, tp = 0, ep = 0;  // coordinates
  std::array<std::int32_t, kAxisCount> group{-1, -1, -1, -1, -1, -1};  // by Axis
  double expert_scale = 1.0;   // MoE: tokens this rank's experts process / the balanced share
};

struct Group {
  Axis axis = Axis::none;
  std::vector<std::int32_t> ranks;  // in ring order
};

struct Program {
  std::vector<StageProgram> stages;
  std::vector<RankInfo> ranks;   // index = rank
  std::vector<Group> groups;
  /// rank of the stage-`s` peer with the same (dp, tp) coordinates: peer[rank*stages + s]
  std::vector<std::int32_t> pp_peer;
  /// MoE: share of the routed tokens processed by the expert owner of each ep index
  /// (empty: uniform all-to-all). Dispatch sends S·share[j] from i to j, combine S·share[i].
  std::vector<double> ep_share;
};

}  // namespace ls::sim
