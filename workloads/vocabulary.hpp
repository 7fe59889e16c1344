// workloads/vocabulary.hpp — the names of the LLM-training vocabulary, one table each.
//
// The parallelism axes and the kinds of work are what workloads/ builds programs
// from; the summary, the JSON report, the trace and the engine's deadlock message
// all print them through these tables so a spelling changes in one place.
#pragma once

#include "sim/program.hpp"

namespace ls::wl {

/// "tp", "pp", "dp", "ep", "expert-dp" ("none" for Axis::none).
constexpr const char* axis_name(sim::Axis a) {
  switch (a) {
    case sim::Axis::tp: return "tp";
    case sim::Axis::pp: return "pp";
    case sim::Axis::dp: return "dp";
    case sim::Axis::ep: return "ep";
    case sim::Axis::edp: return "expert-dp";
    case sim::Axis::none: break;
  }
  return "none";
}

/// The axes the reports list, in report order (expert-dp traffic is folded into dp).
inline constexpr sim::Axis kReportedAxes[] = {sim::Axis::tp, sim::Axis::pp, sim::Axis::dp, sim::Axis::ep};

}  // namespace ls::wl
