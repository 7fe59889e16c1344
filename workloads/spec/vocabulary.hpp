// workloads/spec/vocabulary.hpp — the LLM-training vocabulary on top of the generic kernel.
//
// sim/ knows group slots, opaque op tags and labels. Here they get their meaning:
// a parallelism axis is a group slot, a kind of work is a tag. The names are one
// table each; the summary, the JSON report, the trace and the engine's deadlock
// message (through EngineConfig::group_slot_names) all print them from here.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sim/program.hpp"

namespace ls::wl {

/// Parallelism axes; each is the group slot of the same value. edp: the
/// expert-data-parallel group (ranks holding the same experts), reported under dp.
/// cp: the context-parallel group (ranks holding chunks of the same sequences).
/// dpr: HSDP's replica group (ranks holding the same ZeRO shard, one per shard group),
/// reported under dp; with HSDP the dp slot is the shard group.
/// etp: the expert layers' tensor-parallel group when layout.expert_tp differs from tp
/// (MoE parallel folding); its traffic is reported under tp.
enum class Axis : sim::GroupSlot { none = sim::kNoGroup, tp, pp, dp, ep, edp, cp, dpr, etp };
inline constexpr int kAxisCount = 9;
static_assert(kAxisCount <= sim::kGroupSlots, "every axis needs a group slot");

constexpr sim::GroupSlot slot(Axis a) { return static_cast<sim::GroupSlot>(a); }
constexpr Axis axis_of(const sim::Op& op) { return static_cast<Axis>(op.group_slot); }
constexpr Axis axis_of(const sim::Group& g) { return static_cast<Axis>(g.slot); }
/// The axis a report files traffic under: expert-dp counts as dp.
constexpr Axis reported_axis(Axis a) { return a == Axis::edp || a == Axis::dpr ? Axis::dp : a == Axis::etp ? Axis::tp : a; }

/// What an op is for (sim::Op::tag): naming, accounting (bubble, critical path) and
/// the trace. `other` is 0, the tag of an op nobody labelled.
/// offload: a GPU ↔ host copy of stored activations (offload.hpp).
enum class Work : std::uint8_t { other, forward, backward, backward_input, backward_weight, recompute, optimizer, grad_sync, param_gather, offload };

constexpr std::uint8_t tag(Work w) { return static_cast<std::uint8_t>(w); }
constexpr Work work_of(const sim::Op& op) { return static_cast<Work>(op.tag); }

/// What each stream of a rank carries. TP and EP collectives sit on compute because
/// they block it (Megatron); the trace still draws them on their own track.
namespace stream {
inline constexpr sim::Stream compute = sim::Stream::main;
inline constexpr sim::Stream pp_send = sim::Stream::send;
inline constexpr sim::Stream dp = sim::Stream::side0;        // gradient reduction
inline constexpr sim::Stream prefetch = sim::Stream::side1;  // ZeRO parameter gathers, activation offload copies
inline constexpr sim::Stream overlap = sim::Stream::side2;   // CP ring and overlapped TP collectives
}  // namespace stream
/// Stream names for the engine's deadlock message, by sim::Stream value.
inline constexpr const char* kStreamNames[sim::kStreamCount] = {"compute", "pp_send", "dp", "prefetch", "overlap"};

/// What sim::Op::labels hold: the micro-batch (-1: none), the model chunk (virtual
/// stage) on the rank and the [begin, end) global layers (-1: none; naming only).
namespace label {
inline constexpr std::size_t microbatch = 0, chunk = 1, layer_begin = 2, layer_end = 3;
}  // namespace label
static_assert(sim::kOpLabels == 4, "one sim::Op label per workloads label");
/// Label names for the engine's deadlock message ("mb3 chunk0").
inline constexpr const char* kLabelNames[sim::kOpLabels] = {"mb", "chunk", "", ""};

/// "tp", "pp", "dp", "ep", "expert-dp" ("none" for Axis::none).
constexpr const char* axis_name(Axis a) {
  switch (a) {
    case Axis::tp: return "tp";
    case Axis::pp: return "pp";
    case Axis::dp: return "dp";
    case Axis::ep: return "ep";
    case Axis::edp: return "expert-dp";
    case Axis::cp: return "cp";
    case Axis::dpr: return "dp-replica";
    case Axis::etp: return "expert-tp";
    case Axis::none: break;
  }
  return "none";
}

/// The axes the reports list, in report order (expert-dp traffic is folded into dp).
constexpr const char* work_name(Work w) {
  switch (w) {
    case Work::forward: return "forward";
    case Work::backward: return "backward";
    case Work::backward_input: return "backward_input";
    case Work::backward_weight: return "backward_weight";
    case Work::recompute: return "recompute";
    case Work::optimizer: return "optimizer";
    case Work::grad_sync: return "grad_sync";
    case Work::param_gather: return "param_gather";
    case Work::offload: return "offload";
    case Work::other: break;
  }
  return "other";
}

inline constexpr Axis kReportedAxes[] = {Axis::tp, Axis::pp, Axis::dp, Axis::ep, Axis::cp};

}  // namespace ls::wl
