// workloads/advice/memory_remedies.cpp — see memory_remedies.hpp.
#include "workloads/advice/memory_remedies.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "workloads/advice/diagnostics.hpp"
#include "workloads/model/headroom.hpp"
#include "workloads/model/layout.hpp"
#include "workloads/build/program_totals.hpp"
#include "workloads/build/program_builder.hpp"

namespace ls::wl {

std::vector<MemoryRemedy> memory_remedies(const Scenario& s) {
  std::vector<MemoryRemedy> out;
  // A remedy is offered only when it is a valid layout and raises no warning the
  // scenario does not already have (ZeRO-2/3 beside pipeline parallelism: zero-with-pp).
  std::vector<std::string> base_codes;
  for (const auto& w : scenario_warnings(s)) base_codes.push_back(w.code);
  auto add = [&](std::string change, Scenario fixed) {
    if (!validate(fixed).empty()) return;
    for (const auto& w : scenario_warnings(fixed))
      if (std::find(base_codes.begin(), base_codes.end(), w.code) == base_codes.end()) return;
    out.push_back({std::move(change), std::move(fixed)});
  };
  const auto& L = s.layout;
  if (L.zero < 3 && L.dp > 1) {
    Scenario f = s;
    f.layout.zero = L.zero + 1;
    f.layout.shard_group = 0;
    add(fmt::format("layout.zero: {}", L.zero + 1), std::move(f));
  }
  // HSDP: shard inside a node (NVLink), replicate across nodes.
  const int in_node = std::max(1, s.cluster.gpus_per_node / std::max(1, L.tp));
  if (L.zero < 3 && L.dp > in_node && in_node > 1 && L.dp % in_node == 0 && s.model.moe.experts == 0) {
    Scenario f = s;
    f.layout.zero = 3;
    f.layout.shard_group = in_node;
    add(fmt::format("layout.zero: 3, layout.shard_group: {}", in_node), std::move(f));
  }
  if (!L.offload.activations) {
    Scenario f = s;
    f.layout.offload.activations = true;
    add("layout.offload.activations: true", std::move(f));
  }
  if (!L.offload.optimizer) {
    Scenario f = s;
    f.layout.offload.optimizer = true;
    add("layout.offload.optimizer: true", std::move(f));
  }
  return out;
}

double built_peak_bytes(const Scenario& s) {
  const BuiltProgram bp = build_program(s);
  return device_peak_bytes(bp.static_memory, program_totals(bp.program).activation_peak_bytes);
}

std::string priced_memory_remedies(const Scenario& s, double base_step_s, const StepTimeOf& step_time_of, int max_priced) {
  std::string text;
  int priced = 0;
  for (auto& r : memory_remedies(s)) {
    if (priced >= max_priced) break;
    const double peak = built_peak_bytes(r.scenario);
    if (!memory_fits(r.scenario, peak)) continue;
    const double t = step_time_of(r.scenario);
    ++priced;
    const bool tight = memory_verdict(r.scenario, peak) == MemoryVerdict::tight;
    text += fmt::format("{}{} {} (peak {:.2f} GB) at {:.4g} s per step ({:+.1f}%)", text.empty() ? "" : "; ", r.change,
                        tight ? "fits tightly (needs expandable segments)" : "fits", peak / 1e9, t, 100.0 * (t - base_step_s) / base_step_s);
  }
  return text.empty() ? ". Neither offload nor HSDP/ZeRO alone makes it fit"
                      : ". Simulated: " + text;
}

}  // namespace ls::wl
