// workloads/what_if.cpp — see what_if.hpp.
#include "workloads/what_if.hpp"

#include <string>

#include <fmt/format.h>

#include "workloads/layout.hpp"
#include "workloads/memory_remedies.hpp"
#include "workloads/program_builder.hpp"

namespace ls::wl {

namespace {

Warning* find_warning(Result& r, const std::string& code) {
  for (auto& w : r.warnings)
    if (w.code == code) return &w;
  return nullptr;
}

std::string delta_text(double base_s, double fixed_s) {
  return fmt::format("{:.4g} s per step instead of {:.4g} s ({:+.1f}%)", fixed_s, base_s, 100.0 * (fixed_s - base_s) / base_s);
}

}  // namespace

void price_warnings(const Scenario& sc, Result& res, const StepTimeOf& step_time_of) {
  const double base = res.step_time_s;
  if (Warning* w = find_warning(res, "out-of-memory")) w->message += priced_memory_remedies(sc, base, step_time_of);
  if (Warning* w = find_warning(res, "straggler")) {
    Scenario fixed = sc;
    fixed.perturbations.devices.clear();
    const double t = step_time_of(fixed);
    w->message += fmt::format(". Without the slow device(s) the step would take {}: the straggler costs {:.4g} s ({:.1f}% of the step)",
                              delta_text(base, t), base - t, 100.0 * (base - t) / base);
  }
  if (Warning* w = find_warning(res, "stage-imbalance"); w && sc.layout.stage_layers_mode != StageLayersMode::balanced) {
    Scenario fixed = sc;
    fixed.layout.stage_layers_mode = StageLayersMode::balanced;
    fixed.layout.stage_layers.clear();
    if (validate(fixed).empty()) {
      const auto layers = resolve_stage_layers(fixed);
      std::string list;
      for (int n : layers) list += fmt::format("{}{}", list.empty() ? "" : ", ", n);
      const double t = step_time_of(fixed);
      if (t < base * (1 - 1e-9))
        w->message += fmt::format("; stage_layers: balanced gives [{}] and {}", list, delta_text(base, t));
      else
        w->message += fmt::format("; stage_layers: balanced ([{}]) would not help ({}): the imbalance is not in the layer split "
                                  "(an uneven LM head that no whole-layer move can offset, or a slow device)",
                                  list, delta_text(base, t));
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
