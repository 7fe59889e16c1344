// workloads/build/symmetry.cpp — see symmetry.hpp.
#include "workloads/build/symmetry.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include <fmt/format.h>

namespace ls::wl {

namespace {

constexpr sim::LinkId kNone = UINT32_MAX;

/// A replica-local plan of replica 0 and its mirror in every other replica.
struct LocalPlan {
  const sim::CommPlan* plan = nullptr;
  std::vector<const sim::CommPlan*> mirror;  // index k − 1 for replica k
  bool ghosted = false;
};

void each_link(const sim::CommPlan& p, auto fn) {
  for (const auto& ph : p.phases)
    for (const auto& f : ph.flows)
      for (std::uint32_t i = 0; i < f.path_len; ++i) fn(p.links[f.path_begin + i]);
}

/// Same phases, flows, bytes, path lengths and latencies: the mirror runs alike.
bool alike(const sim::CommPlan& a, const sim::CommPlan& b) {
  if (a.phases.size() != b.phases.size() || a.bytes_per_member != b.bytes_per_member) return false;
  for (std::size_t p = 0; p < a.phases.size(); ++p) {
    const auto& x = a.phases[p];
    const auto& y = b.phases[p];
    if (x.latency != y.latency || x.flows.size() != y.flows.size()) return false;
    for (std::size_t f = 0; f < x.flows.size(); ++f)
      if (x.flows[f].bytes != y.flows[f].bytes || x.flows[f].path_len != y.flows[f].path_len) return false;
  }
  return true;
}

std::string premise_broken(const Scenario& sc, const sim::Program& prog) {
  const auto& pt = sc.perturbations;
  if (!pt.devices.empty()) return "device perturbations";
  if (!pt.links.empty()) return "link perturbations";
  if (pt.jitter.compute_cv > 0 || pt.jitter.comm_cv > 0) return "jitter";
  if (sc.cluster.graph) return "an explicit fabric graph";
  if (sc.layout.dp / std::max(1, sc.layout.ep) <= 1) return "one dp replica";
  for (double w : prog.all_to_all_weight)
    if (w != prog.all_to_all_weight.front()) return "non-uniform MoE routing";
  for (const auto& r : prog.ranks)
    if (r.work_scale != prog.ranks.front().work_scale) return "non-uniform MoE routing";
  return "";
}

/// (group or −1−sender, op or peer, bytes) whose plan was asked for already.
using Seen = std::set<std::tuple<std::int32_t, int, double>>;

/// decide_symmetry's state, one method per phase. A phase that finds the premise
/// broken returns why ("" when it holds); the tables filled so far stay in the
/// decision, as they were when the phase stopped.
class SymmetryDecider {
public:
  SymmetryDecider(const Scenario& sc, const sim::Program& prog, sim::CommPlanner& planner, const std::vector<double>& bw,
                  const std::vector<int>& traced)
      : sc_(sc), prog_(prog), planner_(planner), bw_(bw), traced_(traced), nranks_(prog.ranks.size()) {}

  SymmetryDecision decide() {
    if (!sc_.simulation.symmetry) return std::move(out_);
    std::string why = premise_broken(sc_, prog_);
    if (why.empty()) why = map_replicas();
    if (why.empty()) why = check_groups();
    if (why.empty()) why = collect_local_plans();
    if (why.empty()) why = check_mirrors_alike();
    if (why.empty()) {
      close_ghosts();
      why = check_crowding();
    }
    if (why.empty()) why = map_links();
    if (!why.empty()) {
      out_.status = "broken: " + why;
      return std::move(out_);
    }
    tie_ghosted_plans();
    out_.engine.replicas = R_;
    out_.status = "used";
    return std::move(out_);
  }

private:
  int replica_of(const sim::RankInfo& ri) const { return ri.dp / E_; }
  int replica_of_rank(std::int32_t r) const { return replica_of(prog_.ranks[static_cast<std::size_t>(r)]); }
  /// Rank r's twin in replica k.
  std::int32_t mirror(std::int32_t r, int k) const {
    const sim::EngineSymmetry& es = out_.engine;
    return es.rank_at[static_cast<std::size_t>(es.position[static_cast<std::size_t>(r)]) * static_cast<std::size_t>(R_) +
                      static_cast<std::size_t>(k)];
  }
  std::vector<std::int32_t> devices(const std::vector<std::int32_t>& ranks) const {
    std::vector<std::int32_t> d;
    for (auto r : ranks) d.push_back(prog_.ranks[static_cast<std::size_t>(r)].device);
    return d;
  }

  /// Replicas are blocks of E = ep consecutive dp indices (an expert-parallel group
  /// lies inside one); a rank's position is (stage, tp, dp mod E): rank_at[pos·R + k].
  std::string map_replicas() {
    E_ = std::max(1, sc_.layout.ep);
    R_ = sc_.layout.dp / E_;
    // Ranks that share (stage, tp, dp) differ in their context-parallel index, which
    // RankInfo does not hold: the j-th of them in rank order is cp index j (the mesh
    // numbers cp the same way in every replica; the plan checks below verify it).
    std::vector<int> sub(nranks_);
    {
      std::map<std::tuple<int, int, int>, int> seen_coord;
      for (std::size_t r = 0; r < nranks_; ++r) {
        const auto& ri = prog_.ranks[r];
        sub[r] = seen_coord[std::make_tuple(ri.stage, ri.tp, ri.dp)]++;
      }
    }
    std::map<std::tuple<int, int, int, int>, int> pos_of;
    for (std::size_t r = 0; r < nranks_; ++r) {
      const auto& ri = prog_.ranks[r];
      pos_of.emplace(std::make_tuple(ri.stage, ri.tp, ri.dp % E_, sub[r]), static_cast<int>(pos_of.size()));
    }
    const std::size_t P = pos_of.size();
    if (P * static_cast<std::size_t>(R_) != nranks_) return "ranks do not form alike replicas";
    sim::EngineSymmetry& es = out_.engine;
    es.replica.resize(nranks_);
    es.position.resize(nranks_);
    es.rank_at.assign(nranks_, -1);
    for (std::size_t r = 0; r < nranks_; ++r) {
      const auto& ri = prog_.ranks[r];
      const int pos = pos_of.at({ri.stage, ri.tp, ri.dp % E_, sub[r]});
      const int k = replica_of(ri);
      es.replica[r] = k;
      es.position[r] = pos;
      if (k < 0 || k >= R_) return "ranks do not form alike replicas";
      auto& slot = es.rank_at[static_cast<std::size_t>(pos) * static_cast<std::size_t>(R_) + static_cast<std::size_t>(k)];
      if (slot >= 0) return "ranks do not form alike replicas";
      slot = static_cast<std::int32_t>(r);
    }
    return "";
  }

  /// A trace that draws devices outside replica 0 watches their links: every mirror
  /// then runs as a ghost. A group with no member in replica 0 would never run.
  std::string check_groups() {
    ghost_all_ = std::any_of(traced_.begin(), traced_.end(), [&](int r) { return replica_of_rank(r) != 0; });
    for (const auto& g : prog_.groups)
      if (std::none_of(g.ranks.begin(), g.ranks.end(), [&](std::int32_t m) { return replica_of_rank(m) == 0; }) &&
          std::any_of(g.ranks.begin(), g.ranks.end(), [&](std::int32_t m) { return replica_of_rank(m) != replica_of_rank(g.ranks.front()); }))
        return "a group spans replicas without a member in replica 0";
    return "";
  }

  template <class MirrorPlan>
  void add_local(const sim::CommPlan& p0, MirrorPlan mirror_plan) {
    if (local_index_.count(&p0)) return;
    LocalPlan lp{&p0, {}, ghost_all_};  // ghost_all: see check_groups
    for (int k = 1; k < R_; ++k) lp.mirror.push_back(&mirror_plan(k));
    local_index_.emplace(&p0, local_.size());
    local_.push_back(std::move(lp));
  }

  /// A collective of replica-0 rank `ri`: cross-replica (its links are marked) or local.
  void add_collective(const sim::RankInfo& ri, const sim::Op& op, Seen& seen) {
    const std::int32_t g = ri.group[op.group_slot];
    if (g < 0 || !seen.emplace(g, static_cast<int>(op.coll) * 256 + op.variant, op.bytes).second) return;
    const auto& members = prog_.groups[static_cast<std::size_t>(g)].ranks;
    const bool cross = std::any_of(members.begin(), members.end(), [&](std::int32_t m) { return replica_of_rank(m) != 0; });
    // As the engine asks for it (sim::Engine::group_plan): a weighted
    // all-to-all (uniform here) is a matrix plan.
    const auto& weight = prog_.all_to_all_weight;
    const bool matrix = op.coll == sim::CollOp::all_to_all && weight.size() == members.size();
    auto plan_for = [&](const std::vector<std::int32_t>& ranks) -> const sim::CommPlan& {
      if (!matrix) return planner_.collective(devices(ranks), op.coll, op.bytes);
      const std::size_t n = ranks.size();
      std::vector<double> m(n * n, 0.0);
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j)
          if (i != j) m[i * n + j] = op.bytes * weight[op.variant == 0 ? j : i];
      return planner_.all_to_all_matrix(devices(ranks), m);
    };
    const sim::CommPlan& p0 = plan_for(members);
    if (cross) {
      each_link(p0, [&](sim::LinkId l) { cross_link_[l] = 1; });
      return;
    }
    add_local(p0, [&](int k) -> const sim::CommPlan& {
      std::vector<std::int32_t> mm;
      for (auto m : members) mm.push_back(mirror(m, k));
      return plan_for(mm);
    });
  }

  /// A pipeline transfer of replica-0 rank `r`: always replica-local.
  void add_transfer(std::size_t r, const sim::Op& op, Seen& seen) {
    const std::int32_t peer = prog_.pp_peer[r * prog_.stages.size() + static_cast<std::size_t>(op.peer_stage)];
    if (!seen.emplace(-1 - static_cast<std::int32_t>(r), peer, op.bytes).second) return;
    const auto dev = [&](std::int32_t x) { return prog_.ranks[static_cast<std::size_t>(x)].device; };
    const auto self = static_cast<std::int32_t>(r);
    add_local(planner_.transfer(dev(self), dev(peer), op.bytes), [&](int k) -> const sim::CommPlan& {
      return planner_.transfer(dev(mirror(self, k)), dev(mirror(peer, k)), op.bytes);
    });
  }

  /// Every plan replica 0's ops use, as the engine will ask the planner for it.
  std::string collect_local_plans() {
    cross_link_.assign(bw_.size(), 0);
    Seen seen;
    for (std::size_t r = 0; r < nranks_; ++r) {
      const auto& ri = prog_.ranks[r];
      if (replica_of(ri) != 0) continue;
      const auto& sp = prog_.stages[static_cast<std::size_t>(ri.stage)];
      for (const auto& ops : sp.streams)
        for (const auto& op : ops) {
          if (op.kind == sim::OpKind::collective) add_collective(ri, op, seen);
          else if (op.kind == sim::OpKind::send) add_transfer(r, op, seen);
        }
    }
    return "";
  }

  std::string check_mirrors_alike() const {
    for (const auto& lp : local_)
      for (const auto* m : lp.mirror)
        if (!alike(*lp.plan, *m)) return "a replica's communication differs from replica 0's (placement or fabric)";
    return "";
  }

  /// Links used by more than one replica's local traffic, or by cross-replica
  /// traffic, are shared: the closure ghosts every local plan that touches one.
  void close_ghosts() {
    std::vector<std::int32_t> owner(bw_.size(), -1);
    std::vector<std::uint8_t> shared = cross_link_;
    auto own = [&](const sim::CommPlan& p, int k) {
      each_link(p, [&](sim::LinkId l) {
        if (owner[l] == -1) owner[l] = k;
        else if (owner[l] != k) shared[l] = 1;
      });
    };
    for (const auto& lp : local_) {
      own(*lp.plan, 0);
      for (int k = 1; k < R_; ++k) own(*lp.mirror[static_cast<std::size_t>(k - 1)], k);
    }
    auto touches = [&](const sim::CommPlan& p) {
      bool t = false;
      each_link(p, [&](sim::LinkId l) { t = t || shared[l]; });
      return t;
    };
    for (bool changed = true; changed;) {
      changed = false;
      for (auto& lp : local_) {
        if (!lp.ghosted) {
          lp.ghosted = touches(*lp.plan);
          for (const auto* m : lp.mirror) lp.ghosted = lp.ghosted || touches(*m);
          if (!lp.ghosted) continue;
        }
        // A ghosted plan's links and its mirrors' carry traffic of several replicas now.
        bool added = false;
        auto mark = [&](sim::LinkId l) {
          if (!shared[l]) {
            shared[l] = 1;
            added = true;
          }
        };
        each_link(*lp.plan, mark);
        for (const auto* m : lp.mirror) each_link(*m, mark);
        changed = changed || added;
      }
    }
  }

  /// Early refusal (the engine's drain check would find it after a long run): a
  /// ghosted plan's copies start together with equal bytes, so if the copies of one
  /// flow meet a different number of their siblings on their most crowded link (ECMP
  /// putting two replicas' transfers on one spine, say), the replicas cannot drain
  /// alike.
  std::string check_crowding() const {
    std::vector<std::uint32_t> crowd(bw_.size(), 0);
    for (const auto& lp : local_) {
      if (!lp.ghosted) continue;
      for (std::size_t p = 0; p < lp.plan->phases.size(); ++p) {
        auto copies = [&](auto fn) {
          fn(*lp.plan);
          for (const auto* m : lp.mirror) fn(*m);
        };
        const std::size_t nflows = lp.plan->phases[p].flows.size();
        auto count = [&](std::uint32_t delta) {
          copies([&](const sim::CommPlan& c) {
            for (const auto& f : c.phases[p].flows)
              for (std::uint32_t i = 0; i < f.path_len; ++i) crowd[c.links[f.path_begin + i]] += delta;
          });
        };
        count(1);
        for (std::size_t f = 0; f < nflows; ++f) {
          std::uint32_t first = 0;
          bool uneven = false, any = false;
          copies([&](const sim::CommPlan& c) {
            const auto& fl = c.phases[p].flows[f];
            std::uint32_t most = 0;
            for (std::uint32_t i = 0; i < fl.path_len; ++i) most = std::max(most, crowd[c.links[fl.path_begin + i]]);
            if (!any) first = most;
            uneven = uneven || (any && most != first);
            any = true;
          });
          if (uneven) return "replicas' copies of one transfer crowd shared links unevenly (routes through the spines)";
        }
        count(-1u);
      }
    }
    return "";
  }

  /// Private plans: replica 0's links map one to one onto each mirror's, with equal bandwidth.
  /// The maps are cleared through the pairs just made (R passes over every link of a
  /// 16k-GPU fabric would cost more than the plans' own links).
  std::string map_links() {
    std::vector<sim::LinkId> image(bw_.size(), kNone);
    std::vector<std::uint8_t> taken(bw_.size(), 0);
    auto& link_copy = out_.link_copy;
    for (int k = 1; k < R_; ++k) {
      const std::size_t first_pair = link_copy.size();
      for (const auto& lp : local_) {
        if (lp.ghosted) continue;
        const auto& a = *lp.plan;
        const auto& b = *lp.mirror[static_cast<std::size_t>(k - 1)];
        for (std::size_t p = 0; p < a.phases.size(); ++p)
          for (std::size_t f = 0; f < a.phases[p].flows.size(); ++f) {
            const auto& fa = a.phases[p].flows[f];
            const auto& fb = b.phases[p].flows[f];
            for (std::uint32_t i = 0; i < fa.path_len; ++i) {
              const sim::LinkId la = a.links[fa.path_begin + i], lb = b.links[fb.path_begin + i];
              if (image[la] == lb) continue;
              if (image[la] != kNone || taken[lb] || bw_[la] != bw_[lb]) return "replicas' links do not correspond one to one";
              image[la] = lb;
              taken[lb] = 1;
              link_copy.emplace_back(la, lb);
            }
          }
      }
      for (std::size_t i = first_pair; i < link_copy.size(); ++i) {
        image[link_copy[i].first] = kNone;
        taken[link_copy[i].second] = 0;
      }
    }
    return "";
  }

  /// Ghosted plans run tied (EngineSymmetry::tied): one flow per place over every
  /// copy's path, replica 0's first.
  void tie_ghosted_plans() {
    for (const auto& lp : local_) {
      if (!lp.ghosted) continue;
      auto tied = std::make_shared<sim::CommPlan>();
      tied->bytes_per_member = lp.plan->bytes_per_member;
      tied->phases = lp.plan->phases;
      for (std::size_t p = 0; p < tied->phases.size(); ++p)
        for (std::size_t f = 0; f < tied->phases[p].flows.size(); ++f) {
          auto& tf = tied->phases[p].flows[f];
          tf.path_begin = static_cast<std::uint32_t>(tied->links.size());
          auto append = [&](const sim::CommPlan& c) {
            const auto& cf = c.phases[p].flows[f];
            tied->links.insert(tied->links.end(), c.links.begin() + cf.path_begin, c.links.begin() + cf.path_begin + cf.path_len);
          };
          append(*lp.plan);
          for (const auto* m : lp.mirror) append(*m);
          tf.path_len = static_cast<std::uint32_t>(tied->links.size()) - tf.path_begin;
        }
      out_.engine.tied.emplace(lp.plan, sim::EngineSymmetry::Tied{std::move(tied), static_cast<std::uint32_t>(lp.mirror.size() + 1)});
    }
  }

  const Scenario& sc_;
  const sim::Program& prog_;
  sim::CommPlanner& planner_;
  const std::vector<double>& bw_;  // per link
  const std::vector<int>& traced_;
  const std::size_t nranks_;
  SymmetryDecision out_;
  int E_ = 1, R_ = 1;        // ranks per replica block in dp (ep), replicas
  bool ghost_all_ = false;  // a traced rank lies outside replica 0
  std::vector<std::uint8_t> cross_link_;  // per link: carries cross-replica traffic
  std::vector<LocalPlan> local_;
  std::map<const sim::CommPlan*, std::size_t> local_index_;
};

}  // namespace

SymmetryDecision decide_symmetry(const Scenario& sc, const sim::Program& prog, sim::CommPlanner& planner,
                                 const std::vector<double>& bw, const std::vector<int>& traced) {
  return SymmetryDecider(sc, prog, planner, bw, traced).decide();
}

}  // namespace ls::wl
