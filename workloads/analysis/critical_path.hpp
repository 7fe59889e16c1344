// workloads/analysis/critical_path.hpp — the critical path of one simulated step.
//
// Walks back from the op that ended the step through the ops that released each
// other (sim::OpTrace: enabler, last collective member, delivering send). Every
// picosecond of [step start, step end] lands in exactly one bucket (compute, comm
// per axis, wait), so the shares sum to the step time by construction.
//
// Cost: O(ops on the path · log ops) (each hop decodes a global op id).
#pragma once

#include <cstdint>
#include <unordered_set>
#include <vector>

#include "sim/engine.hpp"
#include "sim/program.hpp"
#include "sim/time.hpp"
#include "workloads/build/result.hpp"

namespace ls::wl {

/// The walk's buckets, the device where the path ends, the global op ids on the path
/// (to flag trace spans) and the segments in time order.
struct CriticalWalk {
  sim::Time compute, wait, comm[kAxisCount];
  int device = 0;
  std::unordered_set<std::int64_t> ops;
  std::vector<CriticalSegment> segments;  // latest first while walking; reversed at the end

  /// Puts [from, to) of `device`'s time in one bucket and records the segment.
  void attribute(CriticalSegment::Kind kind, Axis axis, std::int32_t device, const sim::Op* op, sim::Time from,
                 sim::Time to);
};

/// Requires an engine run with EngineConfig::record_ops; [step_start, step_end] is
/// the step that engine ran last.
CriticalWalk walk_critical_path(const sim::Engine& engine, const sim::Program& program, sim::Time step_start,
                                sim::Time step_end);

}  // namespace ls::wl
