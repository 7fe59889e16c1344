// tests/test_engine.cpp — sim/engine.hpp: streams, dependencies, rendezvous, transfers,
// deadlock reports, determinism. Programs are built by hand; the planner is a stub
// whose plans are single flows on a private link, so every time is closed-form.
#include <doctest/doctest.h>

#include <map>
#include <stdexcept>
#include <string>

#include "engine_fixtures.hpp"
#include "sim/engine.hpp"

using namespace ls::sim;

// Group slots for the hand-built programs: any distinct non-zero slots do; the
// engine gives them no meaning (workloads/spec/vocabulary.hpp maps its axes onto them).
constexpr GroupSlot kTp = 1, kPp = 2, kDp = 3;

namespace {

/// Every collective or transfer is one flow of `bytes` over link 0 (1 GB/s) plus 1 us.
class StubPlanner final : public CommPlanner {
public:
  const CommPlan& collective(std::span<const std::int32_t>, CollOp, double bytes) override { return plan(bytes); }
  const CommPlan& transfer(std::int32_t, std::int32_t, double bytes) override { return plan(bytes); }
  const CommPlan& all_to_all_matrix(std::span<const std::int32_t>, std::span<const double> m) override {
    double total = 0;
    for (double b : m) total += b;
    return plan(total);
  }
  const CommPlan& node_limited_all_to_all(std::span<const std::int32_t>, double bytes, const NodeLimitedDispatch&) override {
    return plan(bytes);
  }

private:
  const CommPlan& plan(double bytes) {
    auto& p = cache_[bytes];
    if (p.phases.empty()) {
      p.links = {0};
      p.phases.push_back(CommPhase{{PlanFlow{0, 1, bytes}}, us(1)});
      p.bytes_per_member = bytes;
    }
    return p;
  }
  std::map<double, CommPlan> cache_;
};

Op compute(Time d, int mb = 0) {
  Op o;
  o.kind = OpKind::compute;
  o.duration = d;
  o.labels[0] = mb;
  o.counts_as_busy = true;
  return o;
}

/// Two ranks of one stage in one dp group (slot kDp).
Program two_ranks_one_dp_group() {
  Program p;
  p.ranks.resize(2);
  p.stages.resize(1);
  for (int r = 0; r < 2; ++r) {
    p.ranks[static_cast<std::size_t>(r)].device = r;
    p.ranks[static_cast<std::size_t>(r)].group[kDp] = 0;
  }
  p.groups.push_back(Group{kDp, {0, 1}});
  p.pp_peer = {0, 1};
  return p;
}

Program two_ranks() {
  Program p;
  p.ranks.resize(2);
  p.ranks[0].stage = 0;
  p.ranks[0].device = 0;
  p.ranks[1].stage = 1;
  p.ranks[1].device = 1;
  p.stages.resize(2);
  p.pp_peer = {0, 1, 0, 1};  // rank*stages + stage
  return p;
}

}  // namespace

TEST_CASE("send/recv: the receiver waits for compute + transfer") {
  // Rank 0: compute 10 us, then send 1 MB (1 ms at 1 GB/s + 1 us). Rank 1: recv, compute 5 us.
  // Expected end = 10 us + 1000 us + 1 us + 5 us = 1016 us.
  Program p = two_ranks();
  ls::test::add_send_recv_hop(p, /*receiver_computes=*/true);
  StubPlanner planner;
  FlowNetwork net({1e9});
  Engine eng(p, planner, net, EngineConfig{});
  const Time end = eng.run_step(Time::zero(), 0);
  CHECK(end == us(1016));
  // Exposed PP time at the receiver: from the transfer's start (10 us) to its arrival (1011 us).
  CHECK(eng.stats()[1].exposed[kPp] == us(1001));
  CHECK(eng.stats()[0].bytes_sent[kPp] == doctest::Approx(1e6));
}

TEST_CASE("send/recv: a sender twenty messages ahead of its receiver") {
  // Rank 0 computes 1 us and sends 1 kB (1 us at 1 GB/s + 1 us), twenty times; its send
  // stream runs one transfer at a time, so message i arrives at 1 + 2(i + 1) us. Rank 1
  // receives each and computes 1 ms after it: all but the first message wait for it, up
  // to nineteen at once, past the mailbox ring's first capacity (8).
  // End = 3 us (first arrival) + 20 ms; the only exposed wait is the first, 1 → 3 us.
  constexpr int kMessages = 20;
  Program p = two_ranks();
  for (int i = 0; i < kMessages; ++i) {
    p.stages[0].streams[0].push_back(compute(us(1)));
    Op send;
    send.kind = OpKind::send;
    send.group_slot = kPp;
    send.bytes = 1e3;
    send.peer_stage = 1;
    send.peer_op = static_cast<std::uint32_t>(2 * i);
    send.dep_begin = static_cast<std::uint32_t>(p.stages[0].deps.size());
    send.dep_count = 1;
    p.stages[0].deps.push_back(OpRef{0, static_cast<std::uint32_t>(i)});
    p.stages[0].streams[1].push_back(send);
    Op recv;
    recv.kind = OpKind::recv;
    recv.group_slot = kPp;
    p.stages[1].streams[0].push_back(recv);
    p.stages[1].streams[0].push_back(compute(ms(1)));
  }
  StubPlanner planner;
  FlowNetwork net({1e9});
  Engine eng(p, planner, net, EngineConfig{});
  // Twice: the second step starts from emptied mailboxes.
  for (int step = 0; step < 2; ++step) {
    const Time start = step == 0 ? Time::zero() : us(50000);
    CHECK(eng.run_step(start, step) == start + us(3) + ms(kMessages));
    CHECK(eng.stats()[1].exposed[kPp] == us(2));
  }
}

TEST_CASE("mailboxes: a ring keeps every message through its growth and frees each on receipt") {
  Mailboxes m;
  m.reset(2);
  const std::size_t first = m.capacity();
  // Messages 0..39 to rank 1 before it receives any: the ring doubles to 64.
  for (std::uint32_t q = 0; q < 40; ++q) m.at(1, q).arrival = 100 + q;
  CHECK(m.capacity() > first);
  CHECK(m.peek(0, 0).arrival == -1);  // the other rank's ring is untouched
  for (std::uint32_t q = 0; q < 40; ++q) {
    CHECK(m.peek(1, q).arrival == 100 + q);
    m.take(1, q);
  }
  // Freed on receipt: the records at 40..79 start empty; 200 ahead is empty, not grown into.
  const std::size_t grown = m.capacity();
  CHECK(m.peek(1, 40).arrival == -1);
  CHECK(m.peek(1, 240).transfer_start == -1);
  CHECK(m.capacity() == grown);
  m.at(1, 41).transfer_start = 7;
  m.clear();
  CHECK(m.peek(1, 41).transfer_start == -1);
}

TEST_CASE("collective rendezvous: starts when the last member arrives") {
  // Rank 0 computes 100 us, rank 1 computes 300 us, then both all-reduce 1 MB
  // (1 ms + 1 us on the stub link). Both finish at 300 + 1001 = 1301 us.
  Program p;
  p.ranks.resize(2);
  p.stages.resize(1);
  p.ranks[0].device = 0;
  p.ranks[1].device = 1;
  p.ranks[0].group[kTp] = 0;
  p.ranks[1].group[kTp] = 0;
  p.groups.push_back(Group{kTp, {0, 1}});
  p.pp_peer = {0, 1};
  Op c = compute(us(100));
  Op ar;
  ar.kind = OpKind::collective;
  ar.group_slot = kTp;
  ar.bytes = 1e6;
  p.stages[0].streams[0] = {c, ar};
  StubPlanner planner;
  FlowNetwork net({1e9});
  EngineConfig cfg;
  cfg.compute_factor = {1.0, 3.0};  // rank 1 is a 3x straggler
  Engine eng(p, planner, net, cfg);
  CHECK(eng.run_step(Time::zero(), 0) == us(1301));
  // Rank 0 waited 200 us for rank 1, then 1001 us of communication: all exposed TP.
  CHECK(eng.stats()[0].exposed[kTp] == us(1201));
  CHECK(eng.stats()[1].exposed[kTp] == us(1001));
}

TEST_CASE("cross-stream dependency: the compute stream waits for a dp op") {
  // dp stream: all-reduce (group of one → free) is replaced by a real 2-rank group;
  // compute op 1 depends on dp op 0 which depends on compute op 0.
  Program p = two_ranks_one_dp_group();
  auto& st = p.stages[0];
  st.deps = {OpRef{0, 0}, OpRef{2, 0}};
  Op ar;
  ar.kind = OpKind::collective;
  ar.group_slot = kDp;
  ar.bytes = 2e6;  // 2 ms + 1 us
  ar.dep_begin = 0;
  ar.dep_count = 1;
  Op c1 = compute(us(10));
  c1.dep_begin = 1;
  c1.dep_count = 1;
  st.streams[0] = {compute(us(10)), c1};
  st.streams[2] = {ar};
  StubPlanner planner;
  FlowNetwork net({1e9});
  Engine eng(p, planner, net, EngineConfig{});
  // 10 us + 2001 us + 10 us.
  CHECK(eng.run_step(Time::zero(), 0) == us(2021));
  CHECK(eng.stats()[0].exposed[kDp] == us(2001));
}

TEST_CASE("a wrong ordering is reported as a deadlock naming the waiting ranks") {
  // Both ranks first wait to receive from each other: neither can ever send.
  Program p = two_ranks();
  for (int s = 0; s < 2; ++s) {
    Op r;
    r.kind = OpKind::recv;
    r.group_slot = kPp;
    r.labels[0] = 0;
    Op snd;
    snd.kind = OpKind::send;
    snd.group_slot = kPp;
    snd.bytes = 1;
    snd.peer_stage = 1 - s;
    snd.peer_op = 0;
    snd.dep_begin = 0;
    snd.dep_count = 1;
    p.stages[static_cast<std::size_t>(s)].deps.push_back(OpRef{0, 0});
    p.stages[static_cast<std::size_t>(s)].streams[0].push_back(r);
    p.stages[static_cast<std::size_t>(s)].streams[1].push_back(snd);
  }
  StubPlanner planner;
  FlowNetwork net({1e9});
  Engine eng(p, planner, net, EngineConfig{});
  std::string msg;
  try {
    eng.run_step(Time::zero(), 0);
  } catch (const std::runtime_error& e) {
    msg = e.what();
  }
  CHECK(msg.find("deadlock") != std::string::npos);
  CHECK(msg.find("rank 0") != std::string::npos);
  CHECK(msg.find("rank 1") != std::string::npos);
  CHECK(msg.find("waits to receive") != std::string::npos);
  // Generic stream names (no EngineConfig names); the sender is found from the
  // send that targets the recv, not guessed.
  CHECK(msg.find("rank 0 (stage 0) main stream at op #0 (recv): waits to receive from stage 1") != std::string::npos);
  CHECK(msg.find("rank 1 (stage 1) main stream at op #0 (recv): waits to receive from stage 0") != std::string::npos);
}

TEST_CASE("jitter is deterministic per seed and changes with it") {
  Program p;
  p.ranks.resize(1);
  p.stages.resize(1);
  p.pp_peer = {0};
  for (int i = 0; i < 50; ++i) p.stages[0].streams[0].push_back(compute(us(100)));
  auto run = [&](std::uint64_t seed) {
    StubPlanner planner;
    FlowNetwork net({1e9});
    EngineConfig cfg;
    cfg.compute_cv = 0.1;
    cfg.seed = seed;
    Engine eng(p, planner, net, cfg);
    return eng.run_step(Time::zero(), 0);
  };
  CHECK(run(1) == run(1));
  CHECK(run(1) != run(2));
  // Mean-one noise: 50 ops of 100 us with cv 0.1 stay within ±10 % of 5 ms (≈7 sigma).
  CHECK(std::abs(run(3).seconds() - 5e-3) < 5e-4);
}

namespace {

CommPlan one_link_plan(LinkId link, double bytes) {
  CommPlan c;
  c.links = {link};
  c.phases.push_back(CommPhase{{PlanFlow{0, 1, bytes}}, us(1)});
  c.bytes_per_member = bytes;
  return c;
}

EngineSymmetry replica_tables() {
  EngineSymmetry s;
  s.replicas = 2;
  s.replica = {0, 0, 1, 1};
  s.position = {0, 1, 0, 1};
  s.rank_at = {0, 2, 1, 3};  // [position · 2 + replica]
  return s;
}

}  // namespace

TEST_CASE("symmetric fast path: replica 1 shares replica 0's timeline; its ghost runs on its own link") {
  const Program p = ls::test::two_replicas_pipeline(/*receiver_computes=*/true);
  StubPlanner planner;
  const CommPlan ghost = one_link_plan(1, 1e6);
  FlowNetwork net({1e9, 1e9});
  EngineConfig cfg;
  cfg.symmetry = replica_tables();
  cfg.symmetry.ghosts[&planner.transfer(0, 1, 1e6)] = {&ghost};
  Engine eng(p, planner, net, cfg);
  CHECK(eng.run_step(Time::zero(), 0) == us(1016));  // as two_ranks' send/recv case
  CHECK(eng.ranks_simulated() == 2);
  CHECK_FALSE(eng.simulated(3));
  CHECK(eng.stats()[3].exposed[kPp] == us(1001));    // copied from rank 1
  CHECK(eng.stats()[2].bytes_sent[kPp] == doctest::Approx(1e6));
  CHECK(net.link_bytes(1) == doctest::Approx(1e6));  // the ghost carried replica 1's bytes
}

TEST_CASE("symmetric fast path: a ghost that drains apart from its twin throws SymmetryBroken") {
  // Replica 1's link is half as fast: its transfer would take 2 ms, not 1 ms, so the
  // replicas' timelines differ and the caller must simulate every rank.
  const Program p = ls::test::two_replicas_pipeline(/*receiver_computes=*/true);
  StubPlanner planner;
  const CommPlan ghost = one_link_plan(1, 1e6);
  FlowNetwork net({1e9, 0.5e9});
  EngineConfig cfg;
  cfg.symmetry = replica_tables();
  cfg.symmetry.ghosts[&planner.transfer(0, 1, 1e6)] = {&ghost};
  Engine eng(p, planner, net, cfg);
  CHECK_THROWS_AS(eng.run_step(Time::zero(), 0), SymmetryBroken);
}

TEST_CASE("overlap meter: compute time beside measured side collectives, their union, not their sum") {
  // Two ranks. Main stream: compute 3000 us. Streams 2 and 3: one 1 MB all-reduce
  // each, both from t = 0; on the stub's one 1 GB/s link they share it max-min, so
  // each takes 1 MB / 0.5 GB/s + 1 us = 2001 us. The compute runs beside [0, 2001]:
  // 2001 us (the sum of the two would be 4002).
  Program p = two_ranks_one_dp_group();
  Op ar;
  ar.kind = OpKind::collective;
  ar.group_slot = kDp;
  ar.bytes = 1e6;
  auto& st = p.stages[0];
  st.streams[0] = {compute(us(3000))};
  st.streams[2] = {ar};
  st.streams[3] = {ar};
  StubPlanner planner;
  const auto beside = [&](std::uint8_t mask) {
    FlowNetwork net({1e9});
    EngineConfig cfg;
    cfg.overlap_streams = mask;
    Engine eng(p, planner, net, cfg);
    CHECK(eng.run_step(Time::zero(), 0) == us(3000));
    CHECK(eng.stats()[0].compute_busy == us(3000));
    return eng.stats()[0].compute_beside_comm;
  };
  CHECK(beside(0b01100) == us(2001));
  CHECK(beside(0b00100) == us(2001));  // stream 2 alone spans the same interval
  CHECK(beside(0) == Time::zero());    // not measured
  CHECK(beside(0b10000) == Time::zero());  // a stream with no collective
}
