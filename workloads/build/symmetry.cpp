// workloads/build/symmetry.cpp — see symmetry.hpp.
#include "workloads/build/symmetry.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "sim/group_plan.hpp"
#include "workloads/model/layout.hpp"

namespace ls::wl {

namespace {

constexpr sim::LinkId kNone = UINT32_MAX;

/// A replica-local plan: its copy in every replica (copy[k]: replica k's, as the
/// engine will ask the planner for it).
struct LocalPlan {
  std::vector<const sim::CommPlan*> copy;
  bool ghosted = false;
};

void each_link(const sim::CommPlan& p, auto fn) {
  for (const auto& ph : p.phases)
    for (const auto& f : ph.flows)
      for (std::uint32_t i = 0; i < f.path_len; ++i) fn(p.links[f.path_begin + i]);
}

/// Calls fn(la, lb) for the links of `a` and `b` at each place of every flow's path
/// (two copies of one plan, alike in shape), until it returns false; false then.
bool each_link_pair(const sim::CommPlan& a, const sim::CommPlan& b, auto fn) {
  for (std::size_t p = 0; p < a.phases.size(); ++p)
    for (std::size_t f = 0; f < a.phases[p].flows.size(); ++f) {
      const auto& fa = a.phases[p].flows[f];
      const auto& fb = b.phases[p].flows[f];
      for (std::uint32_t i = 0; i < fa.path_len; ++i)
        if (!fn(a.links[fa.path_begin + i], b.links[fb.path_begin + i])) return false;
    }
  return true;
}

/// Same phases, flows, bytes, latencies and path lengths, and links of equal bandwidth
/// along each path: the two copies run alike when nothing else shares their links.
bool alike(const sim::CommPlan& a, const sim::CommPlan& b, const std::vector<double>& bw) {
  if (a.phases.size() != b.phases.size() || a.bytes_per_member != b.bytes_per_member) return false;
  for (std::size_t p = 0; p < a.phases.size(); ++p) {
    const auto& x = a.phases[p];
    const auto& y = b.phases[p];
    if (x.latency != y.latency || x.flows.size() != y.flows.size()) return false;
    for (std::size_t f = 0; f < x.flows.size(); ++f) {
      const auto& fx = x.flows[f];
      const auto& fy = y.flows[f];
      if (fx.bytes != fy.bytes || fx.path_len != fy.path_len) return false;
      for (std::uint32_t i = 0; i < fx.path_len; ++i)
        if (bw[a.links[fx.path_begin + i]] != bw[b.links[fy.path_begin + i]]) return false;
    }
  }
  return true;
}

/// A 64-bit mix (splitmix64's finaliser): the signature hash only buckets replicas,
/// equality is then checked exactly.
std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  std::uint64_t z = h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
std::uint64_t bits(double d) {
  std::uint64_t u = 0;
  std::memcpy(&u, &d, sizeof u);
  return u;
}

std::uint64_t shape_hash(const sim::CommPlan& p, const std::vector<double>& bw) {
  std::uint64_t h = mix(p.phases.size(), bits(p.bytes_per_member));
  for (const auto& ph : p.phases) {
    h = mix(h, static_cast<std::uint64_t>(ph.latency.ps()));
    for (const auto& f : ph.flows) {
      h = mix(mix(h, bits(f.bytes)), f.path_len);
      for (std::uint32_t i = 0; i < f.path_len; ++i) h = mix(h, bits(bw[p.links[f.path_begin + i]]));
    }
  }
  return h;
}

/// dp indices per replica: an expert-parallel group's span (0: uneven; 1 for dense models).
int replica_block(const Scenario& sc) { return sc.model.moe.experts > 0 ? expert_dp_block(sc.layout) : 1; }

std::string premise_broken(const Scenario& sc) {
  const auto& pt = sc.perturbations;
  for (const auto& d : pt.devices)
    if (d.drift_per_step > 0) return "a device whose slowdown drifts between steps";
  if (pt.jitter.compute_cv > 0 || pt.jitter.comm_cv > 0) return "jitter";
  const int block = replica_block(sc);
  if (block == 0) return "expert groups straddle data-parallel replicas unevenly";
  if (sc.layout.dp / block <= 1) return "one dp replica";
  return "";
}

/// (group or −1−sender, op or peer, bytes) whose plan was asked for already.
using Seen = std::set<std::tuple<std::int32_t, int, double>>;

/// decide_symmetry's state, one method per phase. A phase that finds the premise
/// broken returns why ("" when it holds); the decision then runs every rank.
class SymmetryDecider {
public:
  SymmetryDecider(const Scenario& sc, const sim::Program& prog, sim::CommPlanner& planner, const SymmetryInputs& in)
      : sc_(sc), prog_(prog), planner_(planner), bw_(in.link_bandwidth), factor_(in.compute_factor), traced_(in.traced),
        split_by_load_(in.split_by_load), nranks_(prog.ranks.size()) {}

  SymmetryDecision decide() {
    if (!sc_.simulation.symmetry) return std::move(out_);
    if (factor_.size() != nranks_) throw std::invalid_argument("decide_symmetry: compute factors != ranks");
    std::string why = premise_broken(sc_);
    if (why.empty()) why = map_replicas();
    if (why.empty()) why = check_group_reach();
    if (why.empty()) why = collect_local_plans();
    if (why.empty()) {
      classify();
      mark_traced_mirrors();
      close_ghosts();
      split_by_crowding();
      why = check_cross_groups();
    }
    if (why.empty()) why = map_links();
    if (!why.empty()) {
      out_.status = "broken: " + why;
      out_.engine = sim::EngineSymmetry{};
      out_.link_copy.clear();
      out_.link_mirror.clear();
      return std::move(out_);
    }
    tie_ghosted_plans();
    out_.engine.replicas = R_;
    out_.engine.runner = runner_;
    for (int k = 0; k < R_; ++k) out_.classes += runs(k) ? 1 : 0;
    out_.status = "used";
    return std::move(out_);
  }

private:
  int replica_of(const sim::RankInfo& ri) const { return ri.dp / E_; }
  int replica_of_rank(std::int32_t r) const { return replica_of(prog_.ranks[static_cast<std::size_t>(r)]); }
  /// Rank r's twin in replica k.
  std::int32_t mirror(std::int32_t r, int k) const {
    return rank_at(static_cast<std::size_t>(out_.engine.position[static_cast<std::size_t>(r)]), k);
  }
  std::vector<std::int32_t> devices(const std::vector<std::int32_t>& ranks) const {
    std::vector<std::int32_t> d;
    for (auto r : ranks) d.push_back(prog_.ranks[static_cast<std::size_t>(r)].device);
    return d;
  }

  /// Replicas are blocks of E consecutive dp indices (an expert-parallel group lies
  /// inside one: layout.hpp expert_dp_block); a rank's position is (stage, tp, dp mod E,
  /// cp): rank_at[pos·R + k].
  std::string map_replicas() {
    E_ = std::max(1, replica_block(sc_));
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
    P_ = pos_of.size();
    if (P_ * static_cast<std::size_t>(R_) != nranks_) return "ranks do not form alike replicas";
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

  /// Plans are collected from replica 0's ops: a group spanning replicas must have a
  /// member there, or its links would be missed.
  std::string check_group_reach() const {
    for (const auto& g : prog_.groups)
      if (std::none_of(g.ranks.begin(), g.ranks.end(), [&](std::int32_t m) { return replica_of_rank(m) == 0; }) &&
          std::any_of(g.ranks.begin(), g.ranks.end(), [&](std::int32_t m) { return replica_of_rank(m) != replica_of_rank(g.ranks.front()); }))
        return "a group spans replicas without a member in replica 0";
    return "";
  }

  /// Replica 0's local plan `p0` and `copy_in(k)`, its copy in replica k (nullptr: the
  /// replicas do not correspond).
  template <class CopyIn>
  bool add_local(const sim::CommPlan& p0, CopyIn copy_in) {
    if (local_index_.count(&p0)) return true;
    LocalPlan lp;
    lp.copy.push_back(&p0);
    for (int k = 1; k < R_; ++k) {
      const sim::CommPlan* c = copy_in(k);
      if (!c) return false;
      lp.copy.push_back(c);
    }
    local_index_.emplace(&p0, local_.size());
    local_.push_back(std::move(lp));
    return true;
  }

  /// A collective of replica-0 rank `r`: cross-replica (its links are marked) or local.
  bool add_collective(std::size_t r, const sim::Op& op, Seen& seen) {
    const std::int32_t g = prog_.ranks[r].group[op.group_slot];
    // insert, not emplace: a stage's ops repeat a few keys thousands of times, and
    // emplace would allocate a node for each before finding it there.
    if (g < 0 || !seen.insert({g, static_cast<int>(op.coll) * 256 + op.variant, op.bytes}).second) return true;
    const auto& members = prog_.groups[static_cast<std::size_t>(g)].ranks;
    const bool cross = std::any_of(members.begin(), members.end(), [&](std::int32_t m) { return replica_of_rank(m) != 0; });
    // As the engine asks for it: member by member, the same plan (sim/group_plan.hpp).
    auto plan_for = [&](const std::vector<std::int32_t>& ranks) -> const sim::CommPlan& {
      return sim::group_collective_plan(planner_, prog_, devices(ranks), op.coll, op.bytes, op.variant);
    };
    const sim::CommPlan& p0 = plan_for(members);
    if (cross) {
      each_link(p0, [&](sim::LinkId l) {
        cross_link_[l] = 1;
        ++load_[l];
      });
      if (cross_seen_.insert(&p0).second) cross_plans_.push_back(&p0);
      return true;
    }
    return add_local(p0, [&](int k) -> const sim::CommPlan* {
      // Replica k's rank asks for its own group's plan: that group must be the mirror
      // of replica 0's, member by member.
      const std::int32_t gk = prog_.ranks[static_cast<std::size_t>(mirror(static_cast<std::int32_t>(r), k))].group[op.group_slot];
      if (gk < 0) return nullptr;
      const auto& mk = prog_.groups[static_cast<std::size_t>(gk)].ranks;
      if (mk.size() != members.size()) return nullptr;
      for (std::size_t i = 0; i < mk.size(); ++i)
        if (mk[i] != mirror(members[i], k)) return nullptr;
      return &plan_for(mk);
    });
  }

  /// A pipeline transfer of replica-0 rank `r`: always replica-local.
  bool add_transfer(std::size_t r, const sim::Op& op, Seen& seen) {
    const std::size_t S = prog_.stages.size();
    const std::int32_t peer = prog_.pp_peer[r * S + static_cast<std::size_t>(op.peer_stage)];
    if (!seen.insert({-1 - static_cast<std::int32_t>(r), peer, op.bytes}).second) return true;
    if (peer < 0 || replica_of_rank(peer) != 0) return false;
    const auto dev = [&](std::int32_t x) { return prog_.ranks[static_cast<std::size_t>(x)].device; };
    const auto self = static_cast<std::int32_t>(r);
    return add_local(planner_.transfer(dev(self), dev(peer), op.bytes), [&](int k) -> const sim::CommPlan* {
      const std::int32_t sk = mirror(self, k);
      const std::int32_t pk = prog_.pp_peer[static_cast<std::size_t>(sk) * S + static_cast<std::size_t>(op.peer_stage)];
      if (pk != mirror(peer, k)) return nullptr;
      return &planner_.transfer(dev(sk), dev(pk), op.bytes);
    });
  }

  /// Every plan replica 0's ops use and its copies, as the engine will ask the planner for them.
  std::string collect_local_plans() {
    cross_link_.assign(bw_.size(), 0);
    load_.assign(bw_.size(), 0);
    Seen seen;
    for (std::size_t r = 0; r < nranks_; ++r) {
      const auto& ri = prog_.ranks[r];
      if (replica_of(ri) != 0) continue;
      const auto& sp = prog_.stages[static_cast<std::size_t>(ri.stage)];
      for (const auto& ops : sp.streams)
        for (const auto& op : ops) {
          bool ok = true;
          if (op.kind == sim::OpKind::collective) ok = add_collective(r, op, seen);
          else if (op.kind == sim::OpKind::send) ok = add_transfer(r, op, seen);
          if (!ok) return "ranks do not form alike replicas";
        }
    }
    return "";
  }

  /// Replicas alike in every local plan's shape (links' bandwidths included) and in
  /// every position's compute factor and expert load form a class; its first replica
  /// runs for it.
  void classify() {
    auto same = [&](int a, int b) {
      for (std::size_t p = 0; p < P_; ++p) {
        const auto ra = static_cast<std::size_t>(rank_at(p, a)), rb = static_cast<std::size_t>(rank_at(p, b));
        if (factor_[ra] != factor_[rb] || prog_.ranks[ra].work_scale != prog_.ranks[rb].work_scale) return false;
      }
      for (const auto& lp : local_)
        if (!alike(*lp.copy[static_cast<std::size_t>(a)], *lp.copy[static_cast<std::size_t>(b)], bw_)) return false;
      return true;
    };
    runner_.assign(static_cast<std::size_t>(R_), -1);
    std::unordered_map<std::uint64_t, std::vector<int>> bucket;  // hash → runners
    for (int k = 0; k < R_; ++k) {
      std::uint64_t h = 0;
      for (std::size_t p = 0; p < P_; ++p) {
        const auto rk = static_cast<std::size_t>(rank_at(p, k));
        h = mix(mix(h, bits(factor_[rk])), bits(prog_.ranks[rk].work_scale));
      }
      for (const auto& lp : local_) h = mix(h, shape_hash(*lp.copy[static_cast<std::size_t>(k)], bw_));
      auto& runners = bucket[h];
      for (int q : runners)
        if (same(q, k)) {
          runner_[static_cast<std::size_t>(k)] = q;
          break;
        }
      if (runner_[static_cast<std::size_t>(k)] < 0) {
        runner_[static_cast<std::size_t>(k)] = k;
        runners.push_back(k);
      }
    }
  }

  std::int32_t rank_at(std::size_t pos, int k) const {
    return out_.engine.rank_at[pos * static_cast<std::size_t>(R_) + static_cast<std::size_t>(k)];
  }
  bool runs(int k) const { return runner_[static_cast<std::size_t>(k)] == k; }

  /// A trace that draws devices of a replica that does not run watches their links:
  /// every local plan then runs as ghosts. (Classes only split from here on, and a
  /// runner stays one, so the rule still holds after split_by_crowding.)
  void mark_traced_mirrors() {
    const bool ghost_all = std::any_of(traced_.begin(), traced_.end(), [&](int r) { return !runs(replica_of_rank(r)); });
    if (ghost_all)
      for (auto& lp : local_) lp.ghosted = true;
  }

  /// Links used by more than one replica's local traffic, or by cross-replica
  /// traffic, are shared: the closure ghosts every local plan that touches one.
  void close_ghosts() {
    // Which replica's local traffic crosses each link (-1: none, -2: several).
    owner_.assign(bw_.size(), -1);
    for (const auto& lp : local_)
      for (int k = 0; k < R_; ++k)
        each_link(*lp.copy[static_cast<std::size_t>(k)], [&](sim::LinkId l) {
          if (owner_[l] == -1) owner_[l] = k;
          else if (owner_[l] != k) owner_[l] = -2;
        });
    std::vector<std::uint8_t> shared = cross_link_;
    for (std::size_t l = 0; l < shared.size(); ++l) shared[l] = shared[l] || owner_[l] == -2;
    auto touches = [&](const sim::CommPlan& p) {
      bool t = false;
      each_link(p, [&](sim::LinkId l) { t = t || shared[l]; });
      return t;
    };
    for (bool changed = true; changed;) {
      changed = false;
      for (auto& lp : local_) {
        if (!lp.ghosted) {
          for (const auto* c : lp.copy) lp.ghosted = lp.ghosted || touches(*c);
          if (!lp.ghosted) continue;
        }
        // A ghosted plan's links carry traffic of several replicas now.
        bool added = false;
        for (const auto* c : lp.copy)
          each_link(*c, [&](sim::LinkId l) {
            if (!shared[l]) {
              shared[l] = 1;
              added = true;
            }
          });
        changed = changed || added;
      }
    }
  }

  /// A ghosted plan's copies start together with equal bytes; a copy of one flow that
  /// meets more of its siblings on its most crowded link than another copy (ECMP
  /// putting two replicas' transfers on one spine, say) drains at another rate, so
  /// the two replicas cannot share a runner: classes split by those counts. (The
  /// engine's bottleneck check after every re-solve is what makes the result exact;
  /// this split only keeps it from refusing.)
  void split_by_crowding() {
    std::vector<std::vector<std::uint32_t>> most(static_cast<std::size_t>(R_));
    std::vector<std::uint32_t> crowd(bw_.size(), 0);
    for (const auto& lp : local_) {
      if (!lp.ghosted) continue;
      // Copies in different classes may differ in shape (a tp ring inside one node
      // here, across two there): each copy is read by its own phases and flows; within
      // a class, where the counts are compared, the shapes are alike.
      std::size_t phases = 0;
      for (const auto* c : lp.copy) phases = std::max(phases, c->phases.size());
      for (std::size_t p = 0; p < phases; ++p) {
        auto count = [&](std::uint32_t delta) {
          for (const auto* c : lp.copy) {
            if (p >= c->phases.size()) continue;
            for (const auto& f : c->phases[p].flows)
              for (std::uint32_t i = 0; i < f.path_len; ++i) crowd[c->links[f.path_begin + i]] += delta;
          }
        };
        count(1);
        for (int k = 0; k < R_; ++k) {
          const sim::CommPlan& c = *lp.copy[static_cast<std::size_t>(k)];
          if (p >= c.phases.size()) continue;
          for (const auto& fl : c.phases[p].flows) {
            std::uint32_t m = 0;
            for (std::uint32_t i = 0; i < fl.path_len; ++i) m = std::max(m, crowd[c.links[fl.path_begin + i]]);
            most[static_cast<std::size_t>(k)].push_back(m);
          }
        }
        count(-1u);
      }
    }
    // Beyond its own plan's copies, a copy meets every other plan's flows on its links:
    // copies whose links carry different numbers of flows in all seldom drain alike
    // (SymmetryInputs::split_by_load).
    if (split_by_load_) {
      for (const auto& lp : local_)
        for (const auto* c : lp.copy) each_link(*c, [&](sim::LinkId l) { ++load_[l]; });
      for (const auto& lp : local_) {
        if (!lp.ghosted) continue;
        for (int k = 0; k < R_; ++k)
          each_link(*lp.copy[static_cast<std::size_t>(k)], [&](sim::LinkId l) { most[static_cast<std::size_t>(k)].push_back(load_[l]); });
      }
    }
    std::map<std::pair<int, std::vector<std::uint32_t>>, int> first;  // (runner, counts) → new runner
    for (int k = 0; k < R_; ++k) {
      auto& q = runner_[static_cast<std::size_t>(k)];
      q = first.emplace(std::make_pair(q, std::move(most[static_cast<std::size_t>(k)])), k).first->second;
    }
  }

  /// A collective over several replicas starts when its simulated members arrive; a
  /// member that does not run arrives with its runner's twin, which must therefore be
  /// in the same group.
  std::string check_cross_groups() const {
    for (const auto& g : prog_.groups) {
      const int k0 = replica_of_rank(g.ranks.front());
      if (std::all_of(g.ranks.begin(), g.ranks.end(), [&](std::int32_t m) { return replica_of_rank(m) == k0; })) continue;
      std::vector<std::int32_t> sorted = g.ranks;
      std::sort(sorted.begin(), sorted.end());
      for (std::int32_t m : g.ranks) {
        const std::int32_t twin = mirror(m, runner_[static_cast<std::size_t>(replica_of_rank(m))]);
        if (!std::binary_search(sorted.begin(), sorted.end(), twin)) return "a group spans replicas that do not run without their runners";
      }
    }
    return "";
  }

  /// Private plans: the runner's links map one to one onto each replica's it runs
  /// for, with equal bandwidth. The maps are cleared through the pairs just made (R
  /// passes over every link of a 16k-GPU fabric would cost more than the plans' own links).
  std::string map_links() {
    std::vector<sim::LinkId> image(bw_.size(), kNone);
    std::vector<std::uint8_t> taken(bw_.size(), 0);
    auto& link_copy = out_.link_copy;
    for (int k = 0; k < R_; ++k) {
      if (runs(k)) continue;
      const auto q = static_cast<std::size_t>(runner_[static_cast<std::size_t>(k)]);
      const std::size_t first_pair = link_copy.size();
      for (const auto& lp : local_) {
        if (lp.ghosted) continue;
        const bool one_to_one = each_link_pair(*lp.copy[q], *lp.copy[static_cast<std::size_t>(k)], [&](sim::LinkId la, sim::LinkId lb) {
          if (image[la] == lb) return true;
          if (image[la] != kNone || taken[lb] || bw_[la] != bw_[lb]) return false;
          image[la] = lb;
          taken[lb] = 1;
          link_copy.emplace_back(la, lb);
          return true;
        });
        if (!one_to_one) return "replicas' links do not correspond one to one";
      }
      for (std::size_t i = first_pair; i < link_copy.size(); ++i) {
        image[link_copy[i].first] = kNone;
        taken[link_copy[i].second] = 0;
      }
    }
    return "";
  }

  /// Links of replica k that mirror its runner q's (mirror_[l_k] = l_q, else kNone): every
  /// ghosted plan's copy k crosses l_k where its copy q crosses l_q, one to one, at equal
  /// bandwidth; no other replica's local traffic crosses either; and the same
  /// cross-replica flows cross both, as often. Each such pair then carries the same flows
  /// at the same rates whenever the copies run alike (what the engine's check holds them
  /// to), so a tied flow need not cross l_k: l_q stands for it, in the check and, after
  /// the run, in the link's statistics (SymmetryDecision::link_mirror). None with a trace
  /// (it watches links).
  void find_mirrored_links() {
    mirror_.assign(bw_.size(), kNone);
    if (!traced_.empty()) return;
    // The cross-replica flows on each link, by number, once per crossing: built in flow
    // order, so two links' lists are equal exactly when the same flows cross them as often.
    std::vector<std::vector<std::uint32_t>> cross(bw_.size());
    std::uint32_t uid = 0;
    for (const auto* cp : cross_plans_)
      for (const auto& ph : cp->phases)
        for (const auto& f : ph.flows) {
          for (std::uint32_t i = 0; i < f.path_len; ++i) cross[cp->links[f.path_begin + i]].push_back(uid);
          ++uid;
        }
    // Per replica k that does not run: the pairs its ghosted copies make with its runner's,
    // position by position; a link paired with two others is no mirror.
    std::vector<sim::LinkId> image(bw_.size(), kNone), pre(bw_.size(), kNone);
    std::vector<std::uint8_t> bad(bw_.size(), 0);
    std::vector<sim::LinkId> touched;
    for (int k = 0; k < R_; ++k) {
      const int q = runner_[static_cast<std::size_t>(k)];
      if (q == k) continue;
      touched.clear();
      for (const auto& lp : local_) {
        if (!lp.ghosted) continue;
        each_link_pair(*lp.copy[static_cast<std::size_t>(q)], *lp.copy[static_cast<std::size_t>(k)], [&](sim::LinkId la, sim::LinkId lb) {
          if (image[la] == kNone && pre[lb] == kNone) {
            image[la] = lb;
            pre[lb] = la;
            touched.push_back(la);
            touched.push_back(lb);
          } else if (image[la] != lb || pre[lb] != la) {
            bad[la] = bad[lb] = 1;
            if (image[la] == kNone) touched.push_back(la);
            if (pre[lb] == kNone) touched.push_back(lb);
          }
          return true;
        });
      }
      for (const sim::LinkId la : touched) {
        const sim::LinkId lb = image[la];
        if (lb == kNone || bad[la] || bad[lb] || pre[lb] != la) continue;
        if (la != lb && bw_[la] == bw_[lb] && owner_[la] == q && owner_[lb] == k && cross[la] == cross[lb]) {
          mirror_[lb] = la;
          out_.link_mirror.emplace_back(la, lb);
        }
      }
      for (const sim::LinkId l : touched) {
        image[l] = pre[l] = kNone;
        bad[l] = 0;
      }
    }
  }

  /// Ghosted plans run tied (EngineSymmetry::tied): per runner, one flow per place
  /// over the paths of its class's copies, the runner's first, less the links that
  /// mirror the runner's (find_mirrored_links); where it leaves some out, the flow's
  /// check path is every copy's path with the runner's links standing in for them.
  void tie_ghosted_plans() {
    find_mirrored_links();
    std::vector<std::vector<int>> members(static_cast<std::size_t>(R_));
    for (int k = 0; k < R_; ++k) members[static_cast<std::size_t>(runner_[static_cast<std::size_t>(k)])].push_back(k);
    for (const auto& lp : local_) {
      if (!lp.ghosted) continue;
      for (int q = 0; q < R_; ++q) {
        if (!runs(q)) continue;
        const auto& cls = members[static_cast<std::size_t>(q)];  // q first: k ascends
        const sim::CommPlan& own = *lp.copy[static_cast<std::size_t>(q)];
        auto tied = std::make_shared<sim::CommPlan>();
        tied->bytes_per_member = own.bytes_per_member;
        tied->phases = own.phases;
        for (std::size_t p = 0; p < tied->phases.size(); ++p)
          for (std::size_t f = 0; f < tied->phases[p].flows.size(); ++f) {
            auto& tf = tied->phases[p].flows[f];
            tf.path_begin = static_cast<std::uint32_t>(tied->links.size());
            const std::size_t check_begin = tied->check_links.size();
            bool left_out = false;
            for (int k : cls) {
              const sim::CommPlan& c = *lp.copy[static_cast<std::size_t>(k)];
              const auto& cf = c.phases[p].flows[f];
              const std::size_t part = tied->check_links.size();
              bool kept = k == q;
              for (std::uint32_t i = 0; i < cf.path_len; ++i) {
                const sim::LinkId l = c.links[cf.path_begin + i];
                const bool mirrored = k != q && mirror_[l] != kNone;
                if (!mirrored) tied->links.push_back(l);
                tied->check_links.push_back(mirrored ? mirror_[l] : l);
                left_out = left_out || mirrored;
                kept = kept || !mirrored;
              }
              // Every link mirrored: the copy's part would be the runner's, checked once.
              if (!kept) tied->check_links.resize(part);
            }
            tf.path_len = static_cast<std::uint32_t>(tied->links.size()) - tf.path_begin;
            if (left_out) {
              tf.check_begin = static_cast<std::uint32_t>(check_begin);
              tf.check_len = static_cast<std::uint32_t>(tied->check_links.size() - check_begin);
              tf.check_part = own.phases[p].flows[f].path_len;
            } else {
              tied->check_links.resize(check_begin);  // the path is its own check path
            }
          }
        out_.engine.tied.emplace(&own, sim::EngineSymmetry::Tied{std::move(tied), static_cast<std::uint32_t>(cls.size())});
      }
    }
  }

  const Scenario& sc_;
  const sim::Program& prog_;
  sim::CommPlanner& planner_;
  const std::vector<double>& bw_;      // per link
  const std::vector<double>& factor_;  // per rank: compute factor
  const std::vector<int>& traced_;
  const bool split_by_load_;
  const std::size_t nranks_;
  SymmetryDecision out_;
  int E_ = 1, R_ = 1;  // ranks per replica block in dp (ep), replicas
  std::size_t P_ = 0;  // positions per replica
  std::vector<std::int32_t> runner_;      // per replica
  std::vector<std::uint8_t> cross_link_;  // per link: carries cross-replica traffic
  std::vector<std::uint32_t> load_;       // per link: flows of every plan and copy that cross it
  std::vector<const sim::CommPlan*> cross_plans_;  // the cross-replica plans, once each, as met
  std::set<const sim::CommPlan*> cross_seen_;
  std::vector<sim::LinkId> mirror_;       // per link of a replica that does not run: its runner's twin
  std::vector<std::int32_t> owner_;       // per link: the one replica whose local traffic crosses it (close_ghosts)
  std::vector<LocalPlan> local_;
  std::map<const sim::CommPlan*, std::size_t> local_index_;
};

}  // namespace

SymmetryDecision decide_symmetry(const Scenario& sc, const sim::Program& prog, sim::CommPlanner& planner, const SymmetryInputs& in) {
  return SymmetryDecider(sc, prog, planner, in).decide();
}

}  // namespace ls::wl
