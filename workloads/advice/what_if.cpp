// workloads/advice/what_if.cpp — see what_if.hpp.
#include "workloads/advice/what_if.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "workloads/model/layout.hpp"
#include "workloads/advice/memory_remedies.hpp"
#include "workloads/build/program_builder.hpp"
#include "workloads/build/stage_layers.hpp"

namespace ls::wl {

namespace {

Warning* find_warning(Result& r, const std::string& code) {
  for (auto& w : r.warnings)
    if (w.code == code) return &w;
  return nullptr;
}

/// The placement with degree-1 axes dropped: two orders that differ only in those
/// put every rank on the same device.
std::vector<std::string> effective_placement(const LayoutSpec& l) {
  std::vector<std::string> out;
  for (const auto& axis : l.placement) {
    const int degree = axis == "tp" ? l.tp : axis == "pp" ? l.pp : axis == "dp" ? l.dp : axis == "ep" ? l.ep : 2;
    if (degree != 1) out.push_back(axis);
  }
  return out;
}

/// True when a fix changes nothing the simulation sees (the fixes below only clear
/// perturbations, balance stages or routing, or reorder the placement): then the
/// what-if's step time is the base's and no second simulation is needed.
bool same_simulation(const Scenario& a, const Scenario& b) {
  return a.perturbations.devices.size() == b.perturbations.devices.size() &&
         a.model.moe.routing == b.model.moe.routing && a.model.moe.load == b.model.moe.load &&
         effective_placement(a.layout) == effective_placement(b.layout) &&
         resolve_stage_layers(a) == resolve_stage_layers(b);
}

std::string delta_text(double base_s, double fixed_s) {
  return fmt::format("{:.4g} s per step instead of {:.4g} s ({:+.1f}%)", fixed_s, base_s, 100.0 * (fixed_s - base_s) / base_s);
}

// Slow devices priced one by one (one simulation each); beyond this only jointly.
constexpr std::size_t kMaxPricedStragglers = 4;

}  // namespace

void price_warnings(const Scenario& sc, Result& res, const StepTimeOf& simulate_fix) {
  const double base = res.step_time_s;
  // same_simulation only recognises fixes that leave the layout alone; the memory
  // remedies change it, so they always simulate.
  const auto step_time_of = [&](const Scenario& fixed) { return same_simulation(sc, fixed) ? base : simulate_fix(fixed); };
  if (Warning* w = find_warning(res, "out-of-memory")) w->message += priced_memory_remedies(sc, base, simulate_fix);
  if (Warning* w = find_warning(res, "straggler")) {
    Scenario fixed = sc;
    fixed.perturbations.devices.clear();
    const double t = step_time_of(fixed);
    w->message += fmt::format(". Without the slow device(s) the step would take {}: the straggler costs {:.4g} s ({:.1f}% of the step)",
                              delta_text(base, t), base - t, 100.0 * (base - t) / base);
    // Each slow device's own cost: one more simulation per device, so only for a few.
    std::vector<PerturbedDevice*> slow;
    for (auto& p : res.perturbed_devices)
      if (p.compute_slowdown > 1.0) slow.push_back(&p);
    if (slow.size() == 1) {
      slow.front()->cost_s = std::max(0.0, base - t);
    } else if (slow.size() <= kMaxPricedStragglers) {
      for (auto* p : slow) {
        Scenario one = sc;
        const std::string& name = res.device_names[static_cast<std::size_t>(p->device)];
        std::erase_if(one.perturbations.devices, [&](const DeviceSlowdown& d) { return d.device == name; });
        p->cost_s = std::max(0.0, base - step_time_of(one));
      }
    }
  }
  if (Warning* w = find_warning(res, "stage-imbalance"); w && sc.layout.stage_layers_mode != StageLayersMode::balanced) {
    // The warning stands only when a split is predicted faster: the balanced split,
    // simulated. Otherwise no whole-layer move helps and it is dropped.
    Scenario fixed = sc;
    fixed.layout.stage_layers_mode = StageLayersMode::balanced;
    fixed.layout.stage_layers.clear();
    if (validate(fixed).empty()) {
      const double t = step_time_of(fixed);
      if (t < base * (1 - 1e-9))
        w->message += fmt::format(", simulated: {}", delta_text(base, t));
      else
        std::erase_if(res.warnings, [](const Warning& x) { return x.code == "stage-imbalance"; });
    }
  }
  if (Warning* w = find_warning(res, "moe-imbalance")) {
    Scenario fixed = sc;
    fixed.model.moe.routing = RoutingKind::balanced;
    fixed.model.moe.load.clear();
    const double t = step_time_of(fixed);
    w->message += fmt::format(". With balanced routing the step would take {}: the skew costs {:.4g} s ({:.1f}% of the step)",
                              delta_text(base, t), base - t, 100.0 * (base - t) / base);
  }
  if (Warning* w = find_warning(res, "tp-crosses-nodes")) {
    // An in-node placement exists when a TP group fits in a node: make tp the
    // fastest-varying mesh axis so every group is 8 consecutive GPUs.
    if (sc.layout.tp <= sc.cluster.gpus_per_node && !sc.cluster.graph && sc.layout.placement.front() != "tp") {
      Scenario fixed = sc;
      fixed.layout.placement = {"tp", "dp", "pp"};
      const double t = step_time_of(fixed);
      w->message += fmt::format(". With placement [tp, dp, pp] every TP group stays in a node: {}", delta_text(base, t));
    } else {
      w->message += fmt::format(". No in-node placement exists (tp = {} > {} GPUs per node); the exposed TP time is the cost",
                                sc.layout.tp, sc.cluster.gpus_per_node);
    }
  }
}

}  // namespace ls::wl
