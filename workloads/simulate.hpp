// workloads/simulate.hpp — the public entry points: plan a scenario (no simulation,
// workloads/layout_report.hpp) and simulate it (build the cluster, build every rank's program, replay it on the
// engine, fold the recorder into a Result).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "sim/error.hpp"
#include "workloads/layout_report.hpp"  // layout_report(): `layoutsim check`
#include "workloads/resolve.hpp"
#include "workloads/build/result.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

/// `--trace-devices` named a GPU the cluster does not have (a usage error).
struct UnknownTraceDevice : UsageError {
  using UsageError::UsageError;
};

/// The trace would be too large to build (a usage error): it names its estimate and
/// the devices to trace instead.
struct TraceTooLarge : UsageError {
  using UsageError::UsageError;
};

/// The most ops a trace draws (the traced devices' ops of the one step it shows). Each
/// costs about 500 bytes of memory while the trace is built and 280 bytes of JSON, its
/// slice with its share of flows and counters (measured on GPT-3 175B with all 1,024
/// GPUs traced: 3.45 M slices, 1.7 GB peak, 0.96 GB of trace), so the bound keeps a
/// trace under about 4 GB of memory and 2.3 GB on disk.
inline constexpr std::uint64_t kMaxTracedOps = 8'000'000;
inline constexpr double kTraceBuildBytesPerOp = 500;
inline constexpr double kTraceJsonBytesPerOp = 280;

struct SimOptions {
  bool trace = false;             // keep spans/counters for the Chrome trace
  /// Which devices the trace draws (`--trace-devices`): "auto" (empty list too) = the
  /// first kAutoTraceDevices of replica 0, one device per stage, every perturbed
  /// device and every device the critical path runs on; "all"; or a list of GPU names.
  std::vector<std::string> trace_devices;
  /// Price the warnings by simulating the fix (no straggler, balanced stages, TP
  /// inside nodes). Each what-if is one more simulation, run only when its warning fires.
  bool what_if = true;
  /// Walk the critical path (one 24-byte op trace per simulated op, up to
  /// simulation.critical_path_ops). False: no walk, no traces and no warning about it;
  /// the step time and every number but the critical path's are the same.
  bool critical_path = true;
  /// Report the links: utilisation by kind, the busiest links, the link groups and the
  /// bottleneck (a pass over every link of the cluster, with its name). False: those
  /// are left empty; every other number is the same.
  bool links = true;
  /// Split the step into what each micro-batch adds and what it costs once
  /// (Result::step_split): one more simulation, at more micro-batches, without what-ifs.
  bool step_split = false;
};

/// Runs the simulation. Throws std::runtime_error on a deadlocked schedule, with a
/// message naming the waiting ranks and what each waits on, and sim::TimeRangeError
/// when a time leaves the representable range (saying which values to check).
Result simulate(const ResolvedScenario& s, const SimOptions& opts = {});

}  // namespace ls::wl
