// workloads/advice/memory_remedies.hpp — the out-of-memory warning's priced remedies: the
// layout changes that move state off the GPU or shard it (optimizer offload,
// activation offload, ZeRO with an in-node HSDP shard group), each checked to fit by
// the built program's memory (what `check` prints) and priced by one simulation.
#pragma once

#include <string>
#include <vector>

#include "workloads/spec/scenario_spec.hpp"
#include "workloads/advice/what_if.hpp"

namespace ls::wl {

/// One candidate fix: what to set, and the scenario with it set.
struct MemoryRemedy {
  std::string change;  // "layout.offload.optimizer: true"
  Scenario scenario;
};

/// The candidates for `s`, usually cheapest in time first (sharding costs overlapped
/// communication, offload costs PCIe copies and a CPU step): ZeRO one stage up, ZeRO-3
/// sharded in-node (HSDP shard_group = GPUs per node / tp) when dp spans nodes,
/// activation offload, optimizer offload. Only valid layouts that raise no scenario
/// warning the scenario does not have (so ZeRO-2/3 only when pp = 1: zero-with-pp).
/// O(1) scenarios.
std::vector<MemoryRemedy> memory_remedies(const Scenario& s);

/// Peak bytes per device of the built program (static terms + activation peak), the
/// figure `check` prints. O(ops).
double built_peak_bytes(const Scenario& s);

/// Appends to the out-of-memory warning the remedies that make `s` fit, each with its
/// peak and simulated step time; at most `max_priced` simulations.
std::string priced_memory_remedies(const Scenario& s, double base_step_s, const StepTimeOf& step_time_of, int max_priced = 2);

}  // namespace ls::wl
