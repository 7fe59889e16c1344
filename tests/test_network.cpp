// tests/test_network.cpp — FlowNetwork: max-min fair rates against hand-computed
// closed forms, finish times exact to the picosecond rounding, incremental
// re-solving, link statistics, lone flows (the same results as the plain path, to the bit).
//
// Numbers are chosen so that the closed forms are exact in binary floating point
// (capacities like 1e9 B/s, shares like 0.5e9, 4.25e9): those are compared with ==.
// Finish times are compared with the same rounding the network uses,
// Time::from_seconds_ceil(bytes / rate), and additionally within 1 ps of the
// closed form in integer picoseconds.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <stdexcept>
#include <vector>

#include "sim/network.hpp"

using ls::sim::FlowId;
using ls::sim::FlowNetwork;
using ls::sim::LinkId;
using ls::sim::Time;

namespace {

constexpr double GBps = 1e9;  // bytes/s

Time ms_t(double v) { return Time::from_seconds(v * 1e-3); }

bool within_1ps(Time got, Time want) {
  const std::int64_t d = got.ps() - want.ps();
  return d >= -1 && d <= 1;
}

// Drives a network to completion the way the engine does: resolve at `now`, pick
// the earliest projected finish, advance to it, finish that flow, repeat. Returns
// the finish time of every flow that was active (by id; ids are not reused here
// because every flow is finished before any new start).
std::map<FlowId, Time> drive(FlowNetwork& net, Time now, const std::vector<FlowId>& flows) {
  std::map<FlowId, Time> done;
  std::vector<FlowId> live = flows;
  std::vector<FlowId> changed;
  while (!live.empty()) {
    changed.clear();
    net.resolve(now, changed);
    auto it = std::min_element(live.begin(), live.end(), [&](FlowId a, FlowId b) {
      return net.finish_time(a) < net.finish_time(b) || (net.finish_time(a) == net.finish_time(b) && a < b);
    });
    const FlowId f = *it;
    REQUIRE(net.finish_time(f) != Time::max());
    REQUIRE(net.finish_time(f) >= now);
    now = net.finish_time(f);
    // At its finish time the flow has drained up to rounding: the ceil to 1 ps
    // leaves at most rate x 1 ps = 1e-3 B here; allow 1 B (1e-6 of the 1e6 B flows).
    CHECK(net.remaining_bytes(f, now) <= 1.0);
    net.finish(now, f);
    done[f] = now;
    live.erase(it);
  }
  return done;
}

std::vector<FlowId> resolve(FlowNetwork& net, Time now) {
  std::vector<FlowId> changed;
  net.resolve(now, changed);
  return changed;
}

bool contains(const std::vector<FlowId>& v, FlowId f) { return std::find(v.begin(), v.end(), f) != v.end(); }

struct RecordingObserver : ls::sim::LinkRateObserver {
  std::vector<std::pair<LinkId, double>> calls;
  void on_link_rate(LinkId link, Time, double rate_Bps) override { calls.emplace_back(link, rate_Bps); }
};

}  // namespace

TEST_CASE("one flow alone gets the whole link") {
  // rate = B; finish = S / B = 1e6 B / 1e9 B/s = 1 ms. (may_run_alone: false, the
  // plain path; the lone one is tested below.)
  FlowNetwork net({1 * GBps});
  const LinkId p[] = {0};
  const FlowId f = net.start(Time::zero(), p, 1e6, /*may_run_alone=*/false);
  CHECK_FALSE(net.lone(f));
  CHECK(net.rate(f) == 0.0);  // rate 0 until resolve
  CHECK(net.finish_time(f) == Time::max());
  const auto ch = resolve(net, Time::zero());
  CHECK(ch == std::vector<FlowId>{f});
  CHECK(net.rate(f) == 1 * GBps);
  CHECK(net.finish_time(f) == Time::from_seconds_ceil(1e6 / GBps));
  CHECK(within_1ps(net.finish_time(f), ms_t(1)));
  const auto done = drive(net, Time::zero(), {f});
  CHECK(within_1ps(done.at(f), ms_t(1)));
  CHECK(net.active_flows() == 0);
}

TEST_CASE("a lone flow has its rate and finish time at start; a joining flow takes it into the re-solve") {
  // L0 (1 GB/s) and L1 (4 GB/s). A (1e6 B over L0+L1) starts alone: rate min(1, 4) GB/s
  // = 1 GB/s, finish 1 ms, no resolve needed. At 0.5 ms B (1e6 B over L0) joins:
  // both get 0.5 GB/s; A has 0.5e6 B left -> 1 ms more -> 1.5 ms; B drains 0.5e6 B in
  // that 1 ms, then alone at 1 GB/s for 0.5e6 B -> 2 ms.
  FlowNetwork net({1 * GBps, 4 * GBps});
  const LinkId pa[] = {0, 1}, pb[] = {0};
  const FlowId a = net.start(Time::zero(), pa, 1e6);
  CHECK(net.lone(a));
  CHECK(net.rate(a) == 1 * GBps);
  CHECK(net.finish_time(a) == Time::from_seconds_ceil(1e6 / GBps));
  CHECK(resolve(net, Time::zero()).empty());  // nothing to re-solve
  CHECK(net.link_busy(0, ms_t(0.25)) == ms_t(0.25));  // an open lone interval counts
  CHECK(net.link_bottleneck(0, ms_t(0.25)) == ms_t(0.25));
  CHECK(net.link_bottleneck(1, ms_t(0.25)) == Time::zero());  // 1 of 4 GB/s: not saturated
  const FlowId b = net.start(ms_t(0.5), pb, 1e6);
  CHECK_FALSE(net.lone(a));
  CHECK_FALSE(net.lone(b));
  const auto ch = resolve(net, ms_t(0.5));
  CHECK(contains(ch, a));
  CHECK(contains(ch, b));
  CHECK(net.rate(a) == 0.5 * GBps);
  const auto done = drive(net, ms_t(0.5), {a, b});
  CHECK(within_1ps(done.at(a), ms_t(1.5)));
  CHECK(within_1ps(done.at(b), ms_t(2)));
  resolve(net, done.at(b));  // closes the saturation at B's finish, as the engine does
  CHECK(net.link_bytes(0) == 2e6);
  CHECK(net.link_bytes(1) == 1e6);
  CHECK(within_1ps(net.link_busy(1, ms_t(3)), ms_t(1.5)));
  // A saturated L0 alone, then A and B together, then B alone: 2 ms in all.
  CHECK(within_1ps(net.link_bottleneck(0, ms_t(3)), ms_t(2)));
}

TEST_CASE("each_part_bottlenecked: every copy of a tied flow holds one of its bottlenecks, lone or not") {
  // L0 and L1 at 1 GB/s, L2 at 2 GB/s. A flow over [L0 | L1] (two parts) runs at 1 GB/s
  // and fills both: each part holds a bottleneck. Over [L0 | L2] it fills L0 only: the
  // second part (L2, half used) holds none, so a copy there would run faster untied.
  for (bool may_run_alone : {true, false}) {
    CAPTURE(may_run_alone);
    FlowNetwork net({1 * GBps, 1 * GBps, 2 * GBps});
    const LinkId even[] = {0, 1}, uneven[] = {0, 2};
    const FlowId a = net.start(Time::zero(), even, 1e6, may_run_alone);
    resolve(net, Time::zero());
    CHECK(net.lone(a) == may_run_alone);
    CHECK(net.each_part_bottlenecked(a, even, 2));
    net.finish(ms_t(1), a);
    resolve(net, ms_t(1));
    const FlowId b = net.start(ms_t(1), uneven, 1e6, may_run_alone);
    resolve(net, ms_t(1));
    CHECK(net.rate(b) == 1 * GBps);
    CHECK_FALSE(net.each_part_bottlenecked(b, uneven, 2));
    CHECK(net.each_part_bottlenecked(b, uneven, 1));  // one part: the whole path
  }
}

TEST_CASE("lone flows: the same finish times and link statistics as the plain path, to the bit") {
  // Twin runs of one random workload, event by event as the engine drives a network:
  // one network may run flows lone, the other never does. Lone flows must give the
  // same allocation, finish times and statistics exactly (==), not approximately:
  // the lone path repeats the plain path's arithmetic.
  std::mt19937_64 rng(2026);
  const int L = 16;
  std::vector<double> caps(L);
  for (int l = 0; l < L; ++l) caps[static_cast<std::size_t>(l)] = (1.0 + static_cast<double>(rng() % 8)) * 0.5 * GBps;
  struct Arrival { Time at; std::vector<LinkId> path; double bytes; };
  std::vector<Arrival> arrivals;
  Time t = Time::zero();
  for (int i = 0; i < 400; ++i) {
    t += Time::from_ps(static_cast<std::int64_t>(rng() % 200'000'000));  // up to 0.2 ms apart
    std::vector<LinkId> p;
    const int len = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < len; ++k) p.push_back(static_cast<LinkId>(rng() % L));  // repeats allowed
    arrivals.push_back({t, p, 1e4 * static_cast<double>(1 + rng() % 40)});  // 10-400 kB: 2.5 us - 0.8 ms
  }
  struct Outcome {
    std::vector<Time> finish;
    std::vector<double> bytes;
    std::vector<Time> busy, bottleneck;
    std::size_t lone = 0, joined = 0;  // flows that started lone; of those, taken into the lists later
  };
  auto run = [&](bool may_run_alone) {
    FlowNetwork net(caps);
    Outcome out;
    out.finish.assign(arrivals.size(), Time::max());
    std::map<FlowId, std::size_t> live;  // flow -> arrival index
    std::map<FlowId, bool> started_lone;
    std::size_t next = 0;
    Time now = Time::zero();
    while (next < arrivals.size() || !live.empty()) {
      resolve(net, now);
      Time first = Time::max();
      FlowId first_flow = 0;
      for (const auto& [f, i] : live)
        if (net.finish_time(f) < first) first = net.finish_time(f), first_flow = f;
      if (next < arrivals.size() && arrivals[next].at <= first) {
        now = arrivals[next].at;
        const FlowId f = net.start(now, arrivals[next].path, arrivals[next].bytes, may_run_alone);
        out.lone += net.lone(f) ? 1 : 0;
        started_lone[f] = net.lone(f);
        live[f] = next++;
      } else {
        REQUIRE(first != Time::max());
        now = first;
        out.finish[live.at(first_flow)] = now;
        out.joined += started_lone.at(first_flow) && !net.lone(first_flow) ? 1 : 0;
        net.finish(now, first_flow);
        live.erase(first_flow);
      }
    }
    resolve(net, now);
    for (LinkId l = 0; l < static_cast<LinkId>(L); ++l) {
      out.bytes.push_back(net.link_bytes(l));
      out.busy.push_back(net.link_busy(l, now));
      out.bottleneck.push_back(net.link_bottleneck(l, now));
    }
    return out;
  };
  const Outcome lone = run(true), plain = run(false);
  CHECK(plain.lone == 0);
  CHECK(lone.lone > 50);  // the workload exercises both paths and the joins between them
  CHECK(lone.lone < arrivals.size() - 50);
  CHECK(lone.joined > 20);
  for (std::size_t i = 0; i < arrivals.size(); ++i) {
    CAPTURE(i);
    CHECK(lone.finish[i] == plain.finish[i]);
  }
  for (std::size_t l = 0; l < static_cast<std::size_t>(L); ++l) {
    CAPTURE(l);
    CHECK(lone.bytes[l] == plain.bytes[l]);
    CHECK(lone.busy[l] == plain.busy[l]);
    CHECK(lone.bottleneck[l] == plain.bottleneck[l]);
  }
}

TEST_CASE("two equal flows share a link and finish together at 2S/B") {
  // Each gets B/2; each needs S / (B/2) = 2S/B = 2 ms. When the first finishes the
  // second has 0 bytes left, so it finishes at the same instant.
  FlowNetwork net({1 * GBps});
  const LinkId p[] = {0};
  const FlowId a = net.start(Time::zero(), p, 1e6);
  const FlowId b = net.start(Time::zero(), p, 1e6);
  resolve(net, Time::zero());
  CHECK(net.rate(a) == 0.5 * GBps);
  CHECK(net.rate(b) == 0.5 * GBps);
  const auto done = drive(net, Time::zero(), {a, b});
  CHECK(within_1ps(done.at(a), ms_t(2)));
  CHECK(within_1ps(done.at(b), ms_t(2)));
}

TEST_CASE("textbook max-min: A over L1+L2, B over L1, C over L2") {
  // L1 = 1 GB/s, L2 = 2 GB/s. Fair shares: L1 1/2, L2 2/2 = 1 -> L1 saturates first,
  // A = B = 0.5; L2 then has 2 - 0.5 = 1.5 left for C alone -> C = 1.5 (GB/s).
  FlowNetwork net({1 * GBps, 2 * GBps});
  const LinkId pa[] = {0, 1}, pb[] = {0}, pc[] = {1};
  const FlowId A = net.start(Time::zero(), pa, 1e6);
  const FlowId B = net.start(Time::zero(), pb, 1e6);
  const FlowId C = net.start(Time::zero(), pc, 1e6);
  resolve(net, Time::zero());
  CHECK(net.rate(A) == 0.5 * GBps);
  CHECK(net.rate(B) == 0.5 * GBps);
  CHECK(net.rate(C) == 1.5 * GBps);
}

TEST_CASE("bottleneck time: a link counts while saturated, busy time while it carries anything") {
  // L1 = 1 GB/s shared by A and B (saturated), L2 = 4 GB/s carrying A alone at 0.5 GB/s
  // (busy, never saturated). B finishes first (1 MB at 0.5 GB/s = 2 ms); A then runs
  // alone at 1 GB/s, saturating L1 again, until its last 0 .. 1 MB drains at 3 ms.
  FlowNetwork net({1 * GBps, 4 * GBps});
  const LinkId pa[] = {0, 1}, pb[] = {0};
  const FlowId A = net.start(Time::zero(), pa, 2e6);
  const FlowId B = net.start(Time::zero(), pb, 1e6);
  resolve(net, Time::zero());
  const auto done = drive(net, Time::zero(), {A, B});
  const Time end = done.at(A);
  CHECK(within_1ps(end, ms_t(3)));
  CHECK(within_1ps(net.link_bottleneck(0, end), ms_t(3)));  // L1 saturated throughout
  CHECK(net.link_bottleneck(1, end) == Time::zero());       // L2 never
  CHECK(within_1ps(net.link_busy(1, end), ms_t(3)));
}

TEST_CASE("four flows over three links with different capacities") {
  // L0 = 10, L1 = 8, L2 = 3 GB/s. F0: L0 L1, F1: L0 L2, F2: L1 L2, F3: L0.
  // Shares: L0 10/3 = 3.33, L1 8/2 = 4, L2 3/2 = 1.5  -> L2 first: F1 = F2 = 1.5.
  // Then L0 (10 - 1.5)/2 = 4.25, L1 (8 - 1.5)/1 = 6.5  -> L0: F0 = F3 = 4.25.
  // L1 carries 4.25 + 1.5 = 5.75 < 8: not a bottleneck.
  FlowNetwork net({10 * GBps, 8 * GBps, 3 * GBps});
  const LinkId p0[] = {0, 1}, p1[] = {0, 2}, p2[] = {1, 2}, p3[] = {0};
  const FlowId f0 = net.start(Time::zero(), p0, 1e6);
  const FlowId f1 = net.start(Time::zero(), p1, 1e6);
  const FlowId f2 = net.start(Time::zero(), p2, 1e6);
  const FlowId f3 = net.start(Time::zero(), p3, 1e6);
  RecordingObserver obs;
  net.set_observer(&obs);
  net.watch(0);
  net.watch(1);
  resolve(net, Time::zero());
  CHECK(net.rate(f0) == 4.25 * GBps);
  CHECK(net.rate(f1) == 1.5 * GBps);
  CHECK(net.rate(f2) == 1.5 * GBps);
  CHECK(net.rate(f3) == 4.25 * GBps);
  // Observer: only watched links, with their aggregate rates (L0 full, L1 5.75).
  std::map<LinkId, double> seen(obs.calls.begin(), obs.calls.end());
  CHECK(obs.calls.size() == 2);
  CHECK(seen.at(0) == 10 * GBps);
  CHECK(seen.at(1) == 5.75 * GBps);
  // A second resolve with nothing dirty changes nothing and reports nothing.
  obs.calls.clear();
  CHECK(resolve(net, Time::zero()).empty());
  CHECK(obs.calls.empty());
}

TEST_CASE("a finishing flow releases its bandwidth at that instant") {
  // B = 1 GB/s. a: 1e6 B, b: 3e6 B, both at 0.5 GB/s. a ends at 1e6/0.5e9 = 2 ms; b
  // then has 3e6 - 1e6 = 2e6 B left at 1 GB/s -> ends at 4 ms (= total bytes / B:
  // the link is work-conserving). Before a ends, b is projected at 6 ms.
  FlowNetwork net({1 * GBps});
  const LinkId p[] = {0};
  const FlowId a = net.start(Time::zero(), p, 1e6);
  const FlowId b = net.start(Time::zero(), p, 3e6);
  resolve(net, Time::zero());
  CHECK(net.finish_time(a) == Time::from_seconds_ceil(1e6 / (0.5 * GBps)));
  CHECK(within_1ps(net.finish_time(b), ms_t(6)));
  const std::uint32_t vb = net.version(b);
  const Time t_a = net.finish_time(a);
  net.finish(t_a, a);
  const auto ch = resolve(net, t_a);
  CHECK(ch == std::vector<FlowId>{b});
  CHECK(net.version(b) == vb + 1);
  CHECK(net.rate(b) == 1 * GBps);
  // b's remaining bytes at t_a, then drained at 1 GB/s, rounded up once.
  const double left = 3e6 - 0.5 * GBps * t_a.seconds();
  CHECK(net.finish_time(b) == t_a + Time::from_seconds_ceil(left / GBps));
  CHECK(within_1ps(net.finish_time(b), ms_t(4)));
}

TEST_CASE("a late arrival: remaining bytes are advanced before the rate changes") {
  // a (2e6 B) alone at 1 GB/s for 1 ms -> 1e6 B left; b (2e6 B) arrives at 1 ms;
  // both at 0.5 GB/s: a ends at 1 + 1e6/0.5e9 s = 3 ms, b has 1e6 B left then and
  // ends at 3 + 1 = 4 ms. Total 4e6 B / 1 GB/s = 4 ms.
  FlowNetwork net({1 * GBps});
  const LinkId p[] = {0};
  const FlowId a = net.start(Time::zero(), p, 2e6);
  resolve(net, Time::zero());
  CHECK(within_1ps(net.finish_time(a), ms_t(2)));
  const FlowId b = net.start(ms_t(1), p, 2e6);
  CHECK(net.remaining_bytes(a, ms_t(1)) == doctest::Approx(1e6).epsilon(1e-12));
  const auto done = drive(net, ms_t(1), {a, b});
  CHECK(within_1ps(done.at(a), ms_t(3)));
  CHECK(within_1ps(done.at(b), ms_t(4)));
}

TEST_CASE("multiplicity: a link used twice carries the rate twice") {
  // Path {L, L}: the flow's rate r uses 2r of L, so r = B/2 and L's aggregate is B.
  // Path {L0, L1, L0} with L0 = 1, L1 = 0.3 GB/s: r = min(1/2, 0.3) = 0.3.
  FlowNetwork net({1 * GBps, 0.3 * GBps});
  RecordingObserver obs;
  net.set_observer(&obs);
  net.watch(0);
  const LinkId twice[] = {0, 0};
  const FlowId f = net.start(Time::zero(), twice, 1e6);
  resolve(net, Time::zero());
  CHECK(net.rate(f) == 0.5 * GBps);
  REQUIRE(obs.calls.size() == 1);
  CHECK(obs.calls[0].second == 1 * GBps);
  const Time tf = net.finish_time(f);
  net.finish(tf, f);
  CHECK(net.link_bytes(0) == 2e6);  // credited bytes x multiplicity
  resolve(net, tf);

  const LinkId zig[] = {0, 1, 0};
  const FlowId g = net.start(ms_t(5), zig, 1e6);
  resolve(net, ms_t(5));
  CHECK(net.rate(g) == 0.3 * GBps);
  // A second flow on L0 alone: L1 stays g's bottleneck (0.3); the other gets
  // 1 - 2 * 0.3 = 0.4 GB/s.
  const LinkId single[] = {0};
  const FlowId h = net.start(ms_t(5), single, 1e6);
  resolve(net, ms_t(5));
  CHECK(net.rate(g) == 0.3 * GBps);
  CHECK(net.rate(h) == doctest::Approx(0.4 * GBps).epsilon(1e-15));
}

TEST_CASE("incremental: a disjoint component is not re-solved") {
  // X on L0 and Y on L1 form two components. Adding Z on L0 halves X's rate (X and
  // Z change) and must not touch Y: Y is neither re-solved nor reported.
  FlowNetwork net({1 * GBps, 1 * GBps});
  const LinkId p0[] = {0}, p1[] = {1};
  const FlowId X = net.start(Time::zero(), p0, 1e6, /*may_run_alone=*/false);
  const FlowId Y = net.start(Time::zero(), p1, 1e6, /*may_run_alone=*/false);
  resolve(net, Time::zero());
  CHECK(net.last_resolve_flows() == 2);
  const std::uint32_t vy = net.version(Y);
  const Time fy = net.finish_time(Y);
  const FlowId Z = net.start(ms_t(0.5), p0, 1e6);
  const auto ch = resolve(net, ms_t(0.5));
  CHECK(net.last_resolve_flows() == 2);  // X and Z only
  CHECK(net.last_resolve_links() == 1);
  CHECK(contains(ch, X));
  CHECK(contains(ch, Z));
  CHECK_FALSE(contains(ch, Y));
  CHECK(net.version(Y) == vy);
  CHECK(net.finish_time(Y) == fy);
  // X: 0.5e6 B left at 0.5 ms, then 0.5 GB/s -> 0.5 + 1 = 1.5 ms.
  CHECK(within_1ps(net.finish_time(X), ms_t(1.5)));
}

TEST_CASE("set_bandwidth re-solves the link's component") {
  // 1e6 B at 1 GB/s; at 0.5 ms the link drops to 0.5 GB/s with 0.5e6 B left ->
  // 1 ms more: finish at 1.5 ms. Setting it to 0 stalls the flow (finish = never).
  FlowNetwork net({1 * GBps});
  const LinkId p[] = {0};
  const FlowId f = net.start(Time::zero(), p, 1e6);
  resolve(net, Time::zero());
  net.set_bandwidth(0, 0.5 * GBps);
  CHECK(net.bandwidth(0) == 0.5 * GBps);
  const auto ch = resolve(net, ms_t(0.5));
  CHECK(ch == std::vector<FlowId>{f});
  CHECK(net.rate(f) == 0.5 * GBps);
  CHECK(within_1ps(net.finish_time(f), ms_t(1.5)));
  net.set_bandwidth(0, 0);
  resolve(net, ms_t(1));
  CHECK(net.rate(f) == 0.0);
  CHECK(net.finish_time(f) == Time::max());
  CHECK(net.remaining_bytes(f, ms_t(7)) == doctest::Approx(0.25e6).epsilon(1e-12));
}

TEST_CASE("a link that stops coupling two flows re-solves both") {
  // A over {L1, L2}, B over {L2, L4}; L1 = L2 = 10, L4 = 6 GB/s. Alone, A could
  // reach 10 and B 6, which overfills L2: A = B = 5. With L1 cut to 3 GB/s, A is
  // held to 3 by L1 and B gets min(10 - 3, 6) = 6 (bounded by L4): L2 now carries
  // 9 < 10 and no longer couples them; B must still be re-solved.
  FlowNetwork net({10 * GBps, 10 * GBps, 6 * GBps});
  const LinkId pa[] = {0, 1}, pb[] = {1, 2};
  const FlowId A = net.start(Time::zero(), pa, 1e9);
  const FlowId B = net.start(Time::zero(), pb, 1e9);
  resolve(net, Time::zero());
  CHECK(net.rate(A) == 5 * GBps);
  CHECK(net.rate(B) == 5 * GBps);
  net.set_bandwidth(0, 3 * GBps);
  const auto ch = resolve(net, ms_t(1));
  CHECK(net.rate(A) == 3 * GBps);
  CHECK(net.rate(B) == 6 * GBps);
  CHECK(contains(ch, A));
  CHECK(contains(ch, B));
  // And back: L1 at 10 again couples them through L2.
  net.set_bandwidth(0, 10 * GBps);
  resolve(net, ms_t(2));
  CHECK(net.rate(A) == 5 * GBps);
  CHECK(net.rate(B) == 5 * GBps);
}

TEST_CASE("link byte counters and busy time") {
  // f: 1e6 B over {L0, L1, L1} from 0; L1 is the bottleneck: 2r = 1 GB/s ->
  // r = 0.5 GB/s, ends at 2 ms. L0 carries 1e6 B, L1 2e6 B; both busy [0, 2 ms].
  // g: 1e6 B over {L0} from 5 ms, alone at 2 GB/s -> ends 5.5 ms. L0 busy 2.5 ms.
  FlowNetwork net({2 * GBps, 1 * GBps, 1 * GBps});
  const LinkId pf[] = {0, 1, 1}, pg[] = {0};
  const FlowId f = net.start(Time::zero(), pf, 1e6);
  auto done = drive(net, Time::zero(), {f});
  CHECK(within_1ps(done.at(f), ms_t(2)));
  CHECK(net.link_bytes(0) == 1e6);
  CHECK(net.link_bytes(1) == 2e6);
  CHECK(net.link_bytes(2) == 0.0);
  CHECK(net.link_busy(0, ms_t(4)) == done.at(f));
  CHECK(net.link_busy(1, ms_t(4)) == done.at(f));
  CHECK(net.link_busy(2, ms_t(4)) == Time::zero());

  const FlowId g = net.start(ms_t(5), pg, 1e6);
  // While g runs, busy time grows with `now`.
  CHECK(net.link_busy(0, ms_t(5.25)) == done.at(f) + ms_t(0.25));
  done = drive(net, ms_t(5), {g});
  CHECK(within_1ps(done.at(g), ms_t(5.5)));
  CHECK(net.link_bytes(0) == 2e6);
  CHECK(within_1ps(net.link_busy(0, ms_t(9)), ms_t(2.5)));
}

TEST_CASE("zero-byte flows finish now; ids are recycled with fresh versions") {
  FlowNetwork net({1 * GBps});
  const LinkId p[] = {0};
  const FlowId z = net.start(ms_t(3), p, 0);
  CHECK(net.finish_time(z) == ms_t(3));
  const auto ch = resolve(net, ms_t(3));
  CHECK(ch == std::vector<FlowId>{z});
  CHECK(net.link_busy(0, ms_t(4)) == Time::zero());  // it never occupied the link
  const std::uint32_t v = net.version(z);
  net.finish(ms_t(3), z);
  CHECK(net.version(z) > v);  // stale completion events for z can be detected
  const FlowId w = net.start(ms_t(3), p, 1e6);
  CHECK(w == z);  // recycled
  CHECK(net.version(w) > v + 1);
  CHECK_THROWS_AS(net.finish(ms_t(3), 99), std::invalid_argument);
}

TEST_CASE("invalid input throws") {
  CHECK_THROWS_AS(FlowNetwork({1e9, 0.0}), std::invalid_argument);
  CHECK_THROWS_AS(FlowNetwork({-1.0}), std::invalid_argument);
  FlowNetwork net({1 * GBps});
  const LinkId bad[] = {3};
  const LinkId ok[] = {0};
  CHECK_THROWS_AS(net.start(Time::zero(), std::span<const LinkId>{}, 1.0), std::invalid_argument);
  CHECK_THROWS_AS(net.start(Time::zero(), bad, 1.0), std::out_of_range);
  CHECK_THROWS_AS(net.start(Time::zero(), ok, -1.0), std::invalid_argument);
  CHECK_THROWS_AS(net.set_bandwidth(0, std::nan("")), std::invalid_argument);
  const FlowId f = net.start(Time::zero(), ok, 1.0);
  net.finish(Time::zero(), f);
  CHECK_THROWS_AS(net.finish(Time::zero(), f), std::invalid_argument);
  CHECK(net.active_flows() == 0);
}

TEST_CASE("random networks satisfy the max-min characterisation, incrementally") {
  // Bertsekas & Gallager Prop. 6.5.1: a feasible allocation is max-min fair iff
  // every flow has a bottleneck link: saturated, and on it no flow has a larger
  // rate. We check that after every incremental start/finish/set_bandwidth, and
  // that a network built from scratch with the same flows agrees, against a relative
  // tolerance of 1e-9 (each rate is a handful of subtractions and one division
  // away from the capacities: rounding error ~1e-15 relative per operation).
  std::mt19937_64 rng(12345);
  const int L = 12;
  std::vector<double> caps(L);
  // Thin links (0.5-4 GB/s) and fat ones (40-80 GB/s): fat links rarely saturate,
  // which exercises the pruning of non-saturating links and the per-flow bounds.
  auto draw_cap = [&rng](int l) {
    return std::uniform_real_distribution<double>(0.5, 4.0)(rng) * GBps * (l % 3 == 0 ? 20.0 : 1.0);
  };
  for (int l = 0; l < L; ++l) caps[static_cast<std::size_t>(l)] = draw_cap(l);
  FlowNetwork net(caps);
  std::vector<FlowId> live;
  std::vector<std::vector<LinkId>> paths(1024);
  Time now = Time::zero();
  for (int step = 0; step < 400; ++step) {
    now += Time::from_ps(1000);
    if (step % 7 == 3) {  // perturb a capacity (exercises the per-flow bound refresh)
      const auto l = static_cast<LinkId>(rng() % L);
      caps[l] = draw_cap(static_cast<int>(l));
      net.set_bandwidth(l, caps[l]);
    } else if (live.size() < 3 || (live.size() < 40 && rng() % 3 != 0)) {
      std::vector<LinkId> p;
      const int len = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < len; ++k) p.push_back(static_cast<LinkId>(rng() % L));  // repeats allowed
      const FlowId f = net.start(now, p, 1e9);
      paths.at(f) = p;
      live.push_back(f);
    } else {
      const std::size_t i = rng() % live.size();
      net.finish(now, live[i]);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
    }
    resolve(net, now);

    std::vector<double> load(L, 0.0), maxrate(L, 0.0);
    for (FlowId f : live)
      for (LinkId l : paths[f]) {
        load[l] += net.rate(f);
        maxrate[l] = std::max(maxrate[l], net.rate(f));
      }
    for (int l = 0; l < L; ++l) CHECK(load[l] <= caps[l] * (1 + 1e-9));
    for (FlowId f : live) {
      CHECK(net.rate(f) > 0);
      bool has_bottleneck = false;
      for (LinkId l : paths[f])
        if (load[l] >= caps[l] * (1 - 1e-9) && net.rate(f) >= maxrate[l] * (1 - 1e-9)) has_bottleneck = true;
      CHECK(has_bottleneck);
    }
    if (step % 25 == 0) {
      FlowNetwork fresh(caps);
      std::vector<FlowId> ids;
      for (FlowId f : live) ids.push_back(fresh.start(now, paths[f], 1e9));
      resolve(fresh, now);
      for (std::size_t i = 0; i < live.size(); ++i)
        CHECK(fresh.rate(ids[i]) == doctest::Approx(net.rate(live[i])).epsilon(1e-9));
    }
  }
}

TEST_CASE("payload bytes: each flow's bytes times its payload fraction, on every link of its path, lone or shared") {
  // A (1e6 wire bytes at 80 % payload) over L0+L1, alone at first; B (1e6 at 100 %) joins
  // on L0. L0 books 2e6 wire and 0.8e6 + 1e6 payload bytes, L1 1e6 and 0.8e6; a link on
  // a path twice books both twice. A fraction outside (0, 1] is refused.
  FlowNetwork net({1 * GBps, 4 * GBps});
  const LinkId pa[] = {0, 1}, pb[] = {0}, twice[] = {1, 1};
  const FlowId a = net.start(Time::zero(), pa, 1e6, true, 0.8);
  const FlowId b = net.start(ms_t(0.5), pb, 1e6);
  drive(net, ms_t(0.5), {a, b});
  CHECK(net.link_bytes(0) == 2e6);
  CHECK(net.link_payload_bytes(0) == doctest::Approx(1.8e6).epsilon(1e-15));
  CHECK(net.link_payload_bytes(1) == doctest::Approx(0.8e6).epsilon(1e-15));
  const FlowId c = net.start(ms_t(5), twice, 1e6, true, 0.5);
  drive(net, ms_t(5), {c});
  CHECK(net.link_payload_bytes(1) == doctest::Approx(0.8e6 + 2 * 0.5e6).epsilon(1e-15));
  CHECK_THROWS_AS(net.start(ms_t(9), pb, 1e6, true, 0.0), std::invalid_argument);
  CHECK_THROWS_AS(net.start(ms_t(9), pb, 1e6, true, 1.5), std::invalid_argument);
  net.credit_link(0, 10, Time::zero(), Time::zero(), 7);
  CHECK(net.link_payload_bytes(0) == doctest::Approx(1.8e6 + 7).epsilon(1e-15));
}

TEST_CASE("copy_link_stats: a link gets another's bytes, busy and saturated time as of now, and only while idle") {
  // A (1e6 bytes at 1 GB/s) alone on L0 from 0 to 1 ms: L0 busy and saturated 1 ms. L1 had
  // its own 0.5e6-byte flow (at 4 GB/s: 0.125 ms); after the copy it reads as L0 does.
  FlowNetwork net({1 * GBps, 4 * GBps});
  const LinkId p0[] = {0}, p1[] = {1};
  const FlowId a = net.start(Time::zero(), p0, 1e6);
  const FlowId b = net.start(Time::zero(), p1, 0.5e6, true, 0.5);
  drive(net, Time::zero(), {a, b});
  const Time end = ms_t(2);
  net.copy_link_stats(0, 1, end);
  CHECK(net.link_bytes(1) == net.link_bytes(0));
  CHECK(net.link_payload_bytes(1) == net.link_payload_bytes(0));
  CHECK(net.link_busy(1, end) == net.link_busy(0, end));
  CHECK(net.link_busy(1, end) == ms_t(1));
  CHECK(net.link_bottleneck(1, end) == ms_t(1));
  const FlowId c = net.start(end, p1, 1e6);
  CHECK_THROWS_AS(net.copy_link_stats(0, 1, end), std::invalid_argument);
  CHECK(net.lone(c));
}
