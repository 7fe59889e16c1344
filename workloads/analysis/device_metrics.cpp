// workloads/analysis/device_metrics.cpp — see device_metrics.hpp.
#include "workloads/analysis/device_metrics.hpp"

#include <algorithm>
#include <map>

namespace ls::wl {

void fold_stage_spread(Result& res, const sim::Program& prog, const std::vector<sim::RankStats>& stats) {
  std::vector<bool> seen(res.per_stage.size(), false);
  for (std::size_t r = 0; r < stats.size(); ++r) {
    const auto s = static_cast<std::size_t>(prog.ranks[r].stage);
    if (s >= res.per_stage.size()) continue;
    auto& sr = res.per_stage[s];
    const double c = stats[r].compute_busy.seconds();
    if (!seen[s] || c < sr.compute_min_s) sr.compute_min_s = c;
    if (!seen[s] || c > sr.compute_max_s) {
      sr.compute_max_s = c;
      sr.slowest_device = prog.ranks[r].device;
    }
    seen[s] = true;
  }
}

namespace {

std::map<std::int32_t, sim::Time> critical_time_per_device(const CriticalWalk& walk) {
  std::map<std::int32_t, sim::Time> per;
  for (const auto& seg : walk.segments)
    if (seg.device >= 0) per[seg.device] += seg.end - seg.start;
  return per;
}

}  // namespace

void fold_critical_devices(Result& res, const CriticalWalk& walk, double step0) {
  const auto per = critical_time_per_device(walk);
  std::vector<DeviceShare> all;
  for (const auto& [d, t] : per) all.push_back({d, step0 > 0 ? t.seconds() / step0 : 0.0});
  std::stable_sort(all.begin(), all.end(), [](const DeviceShare& a, const DeviceShare& b) { return a.share > b.share; });
  if (all.size() > 5) all.resize(5);
  res.critical_path.devices = std::move(all);
}

void fold_perturbed_devices(Result& res, const Scenario& sc, const sim::Program& prog, const std::vector<sim::RankStats>& stats,
                            const CriticalWalk* walk, double step0) {
  const auto per = walk ? critical_time_per_device(*walk) : std::map<std::int32_t, sim::Time>{};
  std::map<std::int32_t, double> slow;  // device index -> product of its factors
  for (const auto& ds : sc.perturbations.devices) {
    const auto it = std::find(res.device_names.begin(), res.device_names.end(), ds.device);
    if (it == res.device_names.end()) continue;  // checked by resolve(); nothing to report
    auto [e, fresh] = slow.emplace(static_cast<std::int32_t>(it - res.device_names.begin()), 1.0);
    e->second *= ds.compute_slowdown;
  }
  for (const auto& [dev, factor] : slow) {
    PerturbedDevice p;
    p.device = dev;
    p.compute_slowdown = factor;
    for (std::size_t r = 0; r < prog.ranks.size() && r < stats.size(); ++r) {
      if (prog.ranks[r].device != dev) continue;
      p.stage = prog.ranks[r].stage;
      p.compute_s = stats[r].compute_busy.seconds();
      p.idle_fraction = step0 > 0 ? 1.0 - p.compute_s / step0 : 0.0;
      if (static_cast<std::size_t>(p.stage) < res.per_stage.size())
        p.stage_mean_compute_s = res.per_stage[static_cast<std::size_t>(p.stage)].compute_s;
    }
    if (const auto it = per.find(dev); it != per.end() && step0 > 0) p.critical_share = it->second.seconds() / step0;
    res.perturbed_devices.push_back(p);
  }
}

}  // namespace ls::wl
