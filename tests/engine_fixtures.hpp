// tests/engine_fixtures.hpp — small hand-built programs shared by the engine tests
// (test_engine, test_symmetry).
#pragma once

#include <cstddef>

#include "sim/program.hpp"

namespace ls::test {

/// The pipeline hop the engine tests time: stage 0 computes 10 us, then sends 1 MB
/// (on group slot 2, the pp slot of these tests) to stage 1, which receives it and,
/// when `receiver_computes`, computes 5 us after it.
inline void add_send_recv_hop(sim::Program& p, bool receiver_computes) {
  constexpr sim::GroupSlot kPpSlot = 2;
  sim::Op c;
  c.kind = sim::OpKind::compute;
  c.duration = sim::us(10);
  c.counts_as_busy = true;
  p.stages[0].streams[0].push_back(c);
  sim::Op send;
  send.kind = sim::OpKind::send;
  send.group_slot = kPpSlot;
  send.bytes = 1e6;
  send.peer_stage = 1;
  send.dep_count = 1;
  p.stages[0].deps.push_back(sim::OpRef{0, 0});
  p.stages[0].streams[1].push_back(send);
  sim::Op recv;
  recv.kind = sim::OpKind::recv;
  recv.group_slot = kPpSlot;
  p.stages[1].streams[0].push_back(recv);
  if (receiver_computes) {
    sim::Op tail;
    tail.kind = sim::OpKind::compute;
    tail.duration = sim::us(5);
    tail.counts_as_busy = true;
    p.stages[1].streams[0].push_back(tail);
  }
}

/// Two replicas of a two-stage pipeline running add_send_recv_hop: ranks 0, 1 are
/// replica 0 (stages 0, 1) and ranks 2, 3 replica 1, each rank on its own device.
inline sim::Program two_replicas_pipeline(bool receiver_computes) {
  sim::Program p;
  p.ranks.resize(4);
  for (std::size_t r = 0; r < 4; ++r) {
    p.ranks[r].device = static_cast<int>(r);
    p.ranks[r].stage = static_cast<int>(r % 2);
  }
  p.stages.resize(2);
  p.pp_peer = {0, 1, 0, 1, 2, 3, 2, 3};
  add_send_recv_hop(p, receiver_computes);
  return p;
}

}  // namespace ls::test
