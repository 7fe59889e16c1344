// sim/engine_symmetry.cpp — the engine's symmetric fast path (EngineSymmetry in
// engine.hpp): trace records for the ranks a representative stands for, ghost flows
// on shared links and their check, and the copy of per-rank statistics.
#include "sim/engine.hpp"

#include "sim/alike_flows.hpp"

#include <fmt/format.h>

namespace ls::sim {

void Engine::observe(std::int32_t rank, int stream, std::uint32_t index, const Op& op, Time start, Time end,
                     std::uint64_t flow_id, std::int64_t mem_now) {
  auto emit = [&](std::int32_t r, std::uint64_t fid) {
    if (!cfg_.traced[static_cast<std::size_t>(r)]) return;
    observer_->on_op(OpRecord{r, static_cast<std::uint8_t>(stream), index, &op, start, end, fid});
    if (op.mem_delta_bytes != 0) observer_->on_memory(r, end, mem_now);
  };
  emit(rank, flow_id);
  if (active_.empty()) return;
  // The ranks this one stands for ran the same op at the same time; a send/recv
  // pairing id names the receiving rank, so it moves to the mirror's replica.
  const EngineSymmetry& sym = cfg_.symmetry;
  const auto R = static_cast<std::size_t>(sym.replicas);
  const auto pos = static_cast<std::size_t>(sym.position[static_cast<std::size_t>(rank)]);
  for (const std::int32_t k : stands_for_[static_cast<std::size_t>(sym.replica[static_cast<std::size_t>(rank)])]) {
    const auto kk = static_cast<std::size_t>(k);
    const std::int32_t m = sym.rank_at[pos * R + kk];
    std::uint64_t fid = 0;
    if (flow_id != 0) {
      const auto to = static_cast<std::size_t>(flow_id >> 32);
      const auto to_m = static_cast<std::uint64_t>(sym.rank_at[static_cast<std::size_t>(sym.position[to]) * R + kk]);
      fid = (to_m << 32) | (flow_id & 0xffffffffULL);
    }
    emit(m, fid);
  }
}

void Engine::start_ghosts(std::uint32_t cid, Time now) {
  // Copies: net_.start may not move comms_, but keep the reads simple.
  const Comm& c = comms_[cid];
  const std::uint32_t places = c.outstanding;
  if (cid >= ghost_span_.size()) ghost_span_.resize(static_cast<std::size_t>(cid) + 1);
  ghost_span_[cid].assign(places, {Time::max(), Time::zero()});
  std::uint32_t added = 0;
  for (const CommPlan* gp : *c.ghosts) {
    const CommPhase& ph = gp->phases[c.phase];
    std::uint32_t place = 0;
    for (const PlanFlow& f : ph.flows) {
      const double bytes = f.bytes * c.scale * c.multiplier;
      if (bytes <= 0 || f.path_len == 0) continue;
      const FlowId id = net_.start(now, std::span<const LinkId>(gp->links.data() + f.path_begin, f.path_len), bytes,
                                   /*may_run_alone=*/false, f.efficiency);  // drain spans are checked per resolve
      if (id >= flow_comm_.size()) flow_comm_.resize(static_cast<std::size_t>(id) + 1);
      if (id >= flow_place_.size()) flow_place_.resize(static_cast<std::size_t>(id) + 1);
      flow_comm_[id] = cid;
      flow_place_[id] = place++;
      ++added;
    }
    if (place != places) throw SymmetryBroken("a replica's communication plan differs from the representative's");
  }
  comms_[cid].outstanding += added;
}

void Engine::check_ghosts(std::uint32_t cid) const {
  for (const auto& [first, last] : ghost_span_[cid])
    if (last - first > cfg_.symmetry.tolerance)
      throw SymmetryBroken(fmt::format("dp replicas' transfers on shared links drained {} ps apart", (last - first).ps()));
}

void Engine::tie(const CommPlan*& plan, std::uint32_t& copies) const {
  copies = 0;
  if (cfg_.symmetry.tied.empty()) return;
  const auto it = cfg_.symmetry.tied.find(plan);
  if (it == cfg_.symmetry.tied.end()) return;
  plan = it->second.plan.get();
  copies = it->second.copies;
}

void Engine::check_tied() const {
  for (const FlowId f : net_.last_resolved_flows())
    if (f < flow_tied_.size()) check_tied_flow(f, flow_tied_[f]);
}

void Engine::check_tied_flow(FlowId f, const TiedFlow& t) const {
  if (t.copies == 0 || net_.each_part_bottlenecked(f, std::span<const LinkId>(t.path, static_cast<std::size_t>(t.len) * t.copies), t.copies))
    return;
  // A flow both folded and tied over replicas is taken for a fold that failed: the
  // unfolded run that follows throws SymmetryBroken if the replicas were the cause.
  if (t.folded) throw AlikeFlowsDiffer("alike flows of an all-to-all would run at different rates");
  throw SymmetryBroken("a dp replica's copy of a transfer on shared links would run at another rate than its runner's");
}

void Engine::copy_to_mirrors() {
  const EngineSymmetry& sym = cfg_.symmetry;
  for (std::size_t r = 0; r < ranks_.size(); ++r)
    if (!active_[r]) stats_[r] = stats_[static_cast<std::size_t>(sym.runner_rank(r))];
}

int Engine::ranks_simulated() const {
  int n = 0;
  for (std::size_t r = 0; r < ranks_.size(); ++r) n += simulated(static_cast<std::int32_t>(r)) ? 1 : 0;
  return n;
}

}  // namespace ls::sim
