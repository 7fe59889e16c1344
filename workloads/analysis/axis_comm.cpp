// workloads/analysis/axis_comm.cpp — see axis_comm.hpp.
#include "workloads/analysis/axis_comm.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <map>
#include <unordered_map>
#include <tuple>
#include <vector>

#include "sim/group_plan.hpp"
#include "topology/planner.hpp"
#include "workloads/build/program_totals.hpp"
#include "workloads/cost/hardware.hpp"

namespace ls::wl {

namespace {

/// One stage representative's sums, per reported axis.
struct RankSums {
  std::array<double, kAxisCount> bytes{};
  std::array<double, kAxisCount> link_s{};   // each op's bytes at its own plan's slowest link
  std::array<double, kAxisCount> slowest{};  // 0: none met yet
  std::array<std::size_t, kAxisCount> slowest_link{};
  std::array<bool, kAxisCount> member{};
  double compute_s = 0;
  double hw_flops = 0;
};

}  // namespace

AxisComms axis_comm_budgets(const Scenario& s, const sim::Program& prog, const topo::Cluster& cluster) {
  topo::Planner planner(cluster, s.cluster.ideal_network, collective_costs_of(s.gpu));
  const std::vector<double> capacity = link_capacities(s, cluster);

  // The slowest link a plan's flows cross (0: none), noted as the axis's slowest when
  // it is; each op's bytes are timed at its own plan's slowest link. Plans repeat (every
  // layer's all-reduces, every bucket's reduce-scatter): their slowest link is found once.
  struct Slowest {
    double Bps = 0;
    std::size_t link = 0;
  };
  std::unordered_map<const sim::CommPlan*, Slowest> slowest_of;
  const auto add_plan = [&](RankSums& sums, int ax, const sim::CommPlan& plan, double bytes) {
    const auto a = static_cast<std::size_t>(ax);
    auto [it, fresh] = slowest_of.try_emplace(&plan);
    if (fresh) {
      for (const auto& phase : plan.phases)
        for (const auto& flow : phase.flows) {
          if (!(flow.bytes > 0)) continue;
          for (std::uint32_t k = 0; k < flow.path_len; ++k) {
            const std::size_t l = plan.links[flow.path_begin + k];
            if (it->second.Bps == 0 || capacity[l] < it->second.Bps) it->second = {capacity[l], l};
          }
        }
    }
    const Slowest slowest = it->second;
    sums.bytes[a] += bytes;
    sums.member[a] = true;
    if (!(slowest.Bps > 0)) return;
    sums.link_s[a] += bytes / slowest.Bps;
    if (sums.slowest[a] == 0 || slowest.Bps < sums.slowest[a]) {
      sums.slowest[a] = slowest.Bps;
      sums.slowest_link[a] = slowest.link;
    }
  };
  // A group's plan per (group, op, variant, bytes): looked up without rebuilding the member list.
  std::map<std::tuple<std::int32_t, int, int, double>, const sim::CommPlan*> group_plans;

  // The stage's first rank stands for the stage: ranks of a stage run one template.
  std::vector<int> representative(prog.stages.size(), -1);
  for (std::size_t r = 0; r < prog.ranks.size(); ++r) {
    const auto st = static_cast<std::size_t>(prog.ranks[r].stage);
    if (representative[st] < 0) representative[st] = static_cast<int>(r);
  }

  std::vector<RankSums> per_stage;
  std::vector<std::int32_t> devs;
  for (std::size_t st = 0; st < prog.stages.size(); ++st) {
    RankSums sums;
    const int r = representative[st];
    if (r < 0) continue;
    const sim::RankInfo& info = prog.ranks[static_cast<std::size_t>(r)];
    for (const auto& stream : prog.stages[st].streams)
      for (const sim::Op& op : stream) {
        if (op.kind == sim::OpKind::compute) {
          const double scale = op.scaled_by_rank ? info.work_scale : 1.0;
          sums.compute_s += op.duration.seconds() * scale;
          sums.hw_flops += op.hw_flops * scale;
          continue;
        }
        if (op.kind == sim::OpKind::recv) continue;  // counted at the sender
        const int ax = static_cast<int>(reported_axis(axis_of(op)));
        if (op.kind == sim::OpKind::send) {
          const std::int32_t peer = prog.pp_peer[static_cast<std::size_t>(r) * prog.stages.size() + static_cast<std::size_t>(op.peer_stage)];
          const sim::CommPlan& plan = planner.transfer(info.device, prog.ranks[static_cast<std::size_t>(peer)].device, op.bytes);
          add_plan(sums, ax, plan, plan.bytes_per_member);
          continue;
        }
        const std::int32_t g = info.group[op.group_slot];
        if (g < 0) continue;  // degree 1: no traffic
        auto [it, fresh] = group_plans.try_emplace({g, static_cast<int>(op.coll), op.variant, op.bytes}, nullptr);
        if (fresh) {
          devs.clear();
          for (const std::int32_t m : prog.groups[static_cast<std::size_t>(g)].ranks) devs.push_back(prog.ranks[static_cast<std::size_t>(m)].device);
          it->second = &sim::group_collective_plan(planner, prog, devs, op.coll, op.bytes, op.variant);
        }
        add_plan(sums, ax, *it->second, it->second->bytes_per_member * op.repeat);
      }
    per_stage.push_back(sums);
  }

  AxisComms out;
  for (const Axis a : kReportedAxes) {
    const auto ax = static_cast<std::size_t>(a);
    AxisComm& b = out[ax];
    int n = 0;
    double slowest = 0;
    std::size_t slowest_link = 0;
    for (const RankSums& sums : per_stage) {
      if (!sums.member[ax]) continue;
      ++n;
      b.bytes_per_device += sums.bytes[ax];
      b.time_at_slowest_link_s += sums.link_s[ax];
      b.hardware_flops_per_device += sums.hw_flops;
      b.compute_s += sums.compute_s;
      if (sums.slowest[ax] > 0 && (slowest == 0 || sums.slowest[ax] < slowest)) {
        slowest = sums.slowest[ax];
        slowest_link = sums.slowest_link[ax];
      }
    }
    if (n == 0) continue;
    b.present = true;
    b.bytes_per_device /= n;
    b.hardware_flops_per_device /= n;
    b.compute_s /= n;
    b.time_at_slowest_link_s /= n;
    b.bytes_per_flop = b.hardware_flops_per_device > 0 ? b.bytes_per_device / b.hardware_flops_per_device : 0;
    if (slowest > 0) {
      b.slowest_link_Bps = slowest;
      b.slowest_link_kind = cluster.link(static_cast<sim::LinkId>(slowest_link)).kind;
    }
    b.comm_to_compute = b.compute_s > 0 ? b.time_at_slowest_link_s / b.compute_s : 0;
  }
  return out;
}

}  // namespace ls::wl
