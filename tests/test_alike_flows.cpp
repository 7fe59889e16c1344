// tests/test_alike_flows.cpp — sim/alike_flows.hpp: which flows of a plan fold, and
// that the engine's folded run is the unfolded one (or refuses). The fabric is a star:
// GPU i reaches the switch over up(i) and is reached over down(i), each B bytes/s, so
// an all-to-all's times are closed-form.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <vector>

#include "sim/alike_flows.hpp"
#include "sim/engine.hpp"

using namespace ls::sim;

namespace {

constexpr double kB = 1e9;  // bytes/s per port and direction
constexpr GroupSlot kEp = 1, kDp = 3;

LinkId up(std::int32_t gpu) { return static_cast<LinkId>(2 * gpu); }
LinkId down(std::int32_t gpu) { return static_cast<LinkId>(2 * gpu + 1); }

/// Every group's collective is a one-phase all-to-all: `bytes` from each member to
/// each other member over up(src), down(dst), then 1 us.
class StarPlanner final : public CommPlanner {
public:
  const CommPlan& collective(std::span<const std::int32_t> devices, CollOp, double bytes) override {
    auto& p = cache_[{std::vector<std::int32_t>(devices.begin(), devices.end()), bytes}];
    if (!p.phases.empty()) return p;
    CommPhase ph;
    ph.latency = us(1);
    for (const std::int32_t s : devices)
      for (const std::int32_t d : devices) {
        if (s == d) continue;
        ph.flows.push_back(PlanFlow{static_cast<std::uint32_t>(p.links.size()), 2, bytes});
        p.links.push_back(up(s));
        p.links.push_back(down(d));
      }
    p.phases.push_back(std::move(ph));
    p.bytes_per_member = bytes * static_cast<double>(devices.size() - 1);
    return p;
  }
  const CommPlan& transfer(std::int32_t s, std::int32_t d, double bytes) override {
    const std::int32_t pair[2] = {s, d};
    return collective(pair, CollOp::all_to_all, bytes);
  }
  const CommPlan& all_to_all_matrix(std::span<const std::int32_t> devices, std::span<const double> m) override {
    return collective(devices, CollOp::all_to_all, m.size() > 1 ? m[1] : 0);
  }
  const CommPlan& node_limited_all_to_all(std::span<const std::int32_t> devices, double bytes,
                                          const NodeLimitedDispatch&) override {
    return collective(devices, CollOp::all_to_all, bytes);
  }

private:
  std::map<std::pair<std::vector<std::int32_t>, double>, CommPlan> cache_;
};

FlowNetwork star(int gpus) { return FlowNetwork(std::vector<double>(static_cast<std::size_t>(2 * gpus), kB)); }

Op collective(GroupSlot slot, double bytes) {
  Op o;
  o.kind = OpKind::collective;
  o.coll = CollOp::all_to_all;
  o.group_slot = slot;
  o.bytes = bytes;
  return o;
}

/// `n` ranks of one stage, one all-to-all of `bytes` per pair over all of them (slot kEp,
/// main stream); with `pair_bytes` > 0, ranks 0 and 1 also run one of their own
/// beside it (slot kDp, side stream 2), which loads up(0) and up(1) but no other uplink.
Program all_to_all_program(int n, double bytes, double pair_bytes = 0) {
  Program p;
  p.ranks.resize(static_cast<std::size_t>(n));
  p.stages.resize(1);
  Group all{kEp, {}};
  for (int r = 0; r < n; ++r) {
    p.ranks[static_cast<std::size_t>(r)].device = r;
    p.ranks[static_cast<std::size_t>(r)].group[kEp] = 0;
    all.ranks.push_back(r);
  }
  p.groups.push_back(all);
  p.pp_peer.assign(static_cast<std::size_t>(n), 0);
  for (int r = 0; r < n; ++r) p.pp_peer[static_cast<std::size_t>(r)] = r;
  p.stages[0].streams[0] = {collective(kEp, bytes)};
  if (pair_bytes > 0) {
    p.groups.push_back(Group{kDp, {0, 1}});
    p.ranks[0].group[kDp] = 1;
    p.ranks[1].group[kDp] = 1;
    for (int r = 2; r < n; ++r) p.ranks[static_cast<std::size_t>(r)].group[kDp] = -1;
    p.stages[0].streams[2] = {collective(kDp, pair_bytes)};
  }
  return p;
}

struct Run {
  Time end;
  std::uint64_t events = 0;
  std::vector<double> link_bytes;
};

Run run(const Program& p, int n, bool fold) {
  StarPlanner planner;
  FlowNetwork net = star(n);
  EngineConfig cfg;
  cfg.fold_alike_flows = fold;
  Engine eng(p, planner, net, cfg);
  Run r;
  r.end = eng.run_step(Time::zero(), 0);
  r.events = eng.events_processed();
  for (std::size_t l = 0; l < net.link_count(); ++l) r.link_bytes.push_back(net.link_bytes(static_cast<LinkId>(l)));
  return r;
}

}  // namespace

TEST_CASE("fold_alike_flows: an all-to-all on a star folds into one flow standing for every pair") {
  StarPlanner planner;
  const FlowNetwork net = star(4);
  const std::int32_t devs[] = {0, 1, 2, 3};
  const CommPlan& plan = planner.collective(devs, CollOp::all_to_all, 1e6);
  const CommPlan folded = fold_alike_flows(plan, net);
  REQUIRE(folded.phases.size() == 1);
  REQUIRE(folded.phases[0].flows.size() == 1);
  const PlanFlow& f = folded.phases[0].flows[0];
  CHECK(f.copies == 12);  // 4 × 3 ordered pairs
  CHECK(f.path_len == 24);
  CHECK(f.bytes == 1e6);
  CHECK(folded.phases[0].latency == us(1));
  CHECK(folded.bytes_per_member == plan.bytes_per_member);
  // The same links, as often: each up(i) and down(i) three times.
  std::vector<LinkId> a(plan.links), b(folded.links.begin() + f.path_begin, folded.links.begin() + f.path_begin + f.path_len);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  CHECK(a == b);
}

TEST_CASE("fold_alike_flows: flows that differ in bytes, capacity on the path or load stay apart") {
  CommPlan p;
  p.links = {up(0), down(1), up(1), down(0), up(2), down(3), up(3), down(2), up(2), down(0)};
  CommPhase ph;
  ph.latency = us(1);
  ph.flows = {PlanFlow{0, 2, 1e6}, PlanFlow{2, 2, 1e6}, PlanFlow{4, 2, 2e6}, PlanFlow{6, 2, 1e6}, PlanFlow{8, 2, 1e6}};
  p.phases.push_back(ph);
  FlowNetwork net = star(4);
  net.set_bandwidth(down(1), kB / 2);
  const CommPlan folded = fold_alike_flows(p, net);
  // Loads of the phase: down(0) and up(2) carry two of its flows, every other link one.
  // 0→1 meets a half-rate port, 2→3 moves other bytes, and 1→0 (loads 1, 2), 3→2 (1, 1)
  // and 2→0 (2, 2) read differently: nothing folds.
  CHECK(folded.phases[0].flows.size() == 5);
  for (const PlanFlow& f : folded.phases[0].flows) CHECK(f.copies == 1);
}

TEST_CASE("alike flows: a folded all-to-all takes (n−1)·s/B + latency, as unfolded, in fewer events") {
  for (const int n : {2, 3, 8}) {
    CAPTURE(n);
    const double s = 1e6;
    const Program p = all_to_all_program(n, s);
    const Run off = run(p, n, false), on = run(p, n, true);
    // Every uplink carries n−1 flows at B/(n−1) each: (n−1)·s/B, then the phase latency.
    const Time expect = Time::from_seconds_ceil((n - 1) * s / kB) + us(1);
    // Within 1 ps: progressive filling reaches B/(n−1) through other roundings in the
    // two runs (a drain is ceiled to the picosecond).
    CHECK(std::llabs((off.end - expect).ps()) <= 1);
    CHECK(std::llabs((on.end - off.end).ps()) <= 1);
    for (std::size_t l = 0; l < off.link_bytes.size(); ++l) CHECK(on.link_bytes[l] == doctest::Approx(off.link_bytes[l]).epsilon(1e-12));
    CHECK(on.link_bytes[up(0)] == doctest::Approx((n - 1) * s));
    if (n > 2) CHECK(on.events < off.events);
  }
}

TEST_CASE("alike flows: copies that meet other traffic make the engine refuse the fold") {
  // Ranks 0 and 1 run their own exchange beside the all-to-all: up(0) and up(1) carry
  // one flow more than up(2), up(3), so the copies of the folded flow would not all run at
  // one rate (those from 2 and 3 are bottlenecked nowhere on their own paths).
  const int n = 4;
  const Program p = all_to_all_program(n, 1e6, 4e6);
  CHECK_NOTHROW(run(p, n, false));
  CHECK_THROWS_AS(run(p, n, true), AlikeFlowsDiffer);
}

TEST_CASE("alike flows: other traffic that loads every copy alike keeps the fold, and it agrees with the unfolded run") {
  // A 2-rank all-to-all beside an exchange of the same two ranks: both flows of each
  // meet the same load on their paths.
  const int n = 2;
  const Program p = all_to_all_program(n, 1e6, 4e6);
  const Run off = run(p, n, false), on = run(p, n, true);
  CHECK(std::llabs((on.end - off.end).ps()) <= 1);
  for (std::size_t l = 0; l < off.link_bytes.size(); ++l) CHECK(on.link_bytes[l] == doctest::Approx(off.link_bytes[l]).epsilon(1e-12));
}

namespace {

/// Two replicas of a 2-rank all-to-all (ranks 0, 1 on GPUs 0, 1; ranks 2, 3 on GPUs 2, 3),
/// replica 0 running for both, its plan tied to replica 1's: each tied flow crosses
/// both copies' paths (0→1 then 2→3; 1→0 then 3→2).
struct TiedAllToAll {
  StarPlanner planner;
  Program program;
  EngineConfig cfg;

  explicit TiedAllToAll(double bytes) {
    program = all_to_all_program(4, bytes);
    program.groups[0].ranks = {0, 1};
    program.groups.push_back(Group{kEp, {2, 3}});
    program.ranks[2].group[kEp] = 1;
    program.ranks[3].group[kEp] = 1;
    auto& s = cfg.symmetry;
    s.replicas = 2;
    s.replica = {0, 0, 1, 1};
    s.position = {0, 1, 0, 1};
    s.rank_at = {0, 2, 1, 3};  // [position · 2 + replica]
    const std::int32_t own[] = {0, 1};
    const CommPlan& twin = planner.collective(own, CollOp::all_to_all, bytes);
    auto tied = std::make_shared<CommPlan>(twin);
    tied->links = {up(0), down(1), up(2), down(3), up(1), down(0), up(3), down(2)};
    tied->phases[0].flows = {PlanFlow{0, 4, bytes}, PlanFlow{4, 4, bytes}};
    s.tied[&twin] = EngineSymmetry::Tied{tied, 2};
  }
};

}  // namespace

TEST_CASE("alike flows: a tied plan's alike flows fold over every replica's copies, each checked on its own path") {
  const double s = 1e6;
  for (const bool fold : {false, true}) {
    CAPTURE(fold);
    TiedAllToAll t(s);
    t.cfg.fold_alike_flows = fold;
    FlowNetwork net = star(4);
    Engine eng(t.program, t.planner, net, t.cfg);
    // One flow each way per pair at B: s/B, then the latency; every port carries s.
    CHECK(eng.run_step(Time::zero(), 0) == Time::from_seconds_ceil(s / kB) + us(1));
    for (std::int32_t g = 0; g < 4; ++g) {
      CHECK(net.link_bytes(up(g)) == doctest::Approx(s));
      CHECK(net.link_bytes(down(g)) == doctest::Approx(s));
    }
  }
  // Replica 1's uplinks at half rate: its copies drain at B/2, replica 0's could run at B.
  // Folded, the one flow stands for four copies of two links each (two flows × two
  // replicas); replica 0's have no bottleneck of their own, and the engine says so.
  TiedAllToAll t(s);
  t.cfg.fold_alike_flows = true;
  FlowNetwork net = star(4);
  net.set_bandwidth(up(2), kB / 2);
  net.set_bandwidth(up(3), kB / 2);
  Engine eng(t.program, t.planner, net, t.cfg);
  CHECK_THROWS_AS(eng.run_step(Time::zero(), 0), AlikeFlowsDiffer);
}
