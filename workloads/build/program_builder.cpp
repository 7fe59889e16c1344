// workloads/build/program_builder.cpp — see program_builder.hpp.
#include "workloads/spec/vocabulary.hpp"
#include "workloads/build/program_builder.hpp"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "workloads/model/layout.hpp"
#include "workloads/cost/pass_costs.hpp"
#include "workloads/build/rank_groups.hpp"
#include "workloads/model/schedule.hpp"
#include "workloads/build/stage_emitter.hpp"
#include "workloads/build/stage_memory.hpp"

namespace ls::wl {

ProgramInputs::ProgramInputs(const Scenario& s)
    : own_costs_(std::in_place, s), costs(*own_costs_), bytes(pass_bytes(s)), params(s), layers(stage_layers(s, &costs)) {}

ProgramInputs::ProgramInputs(const Scenario& s, const KernelPassCosts& shared_costs)
    : costs(shared_costs), bytes(pass_bytes(s)), params(s), layers(stage_layers(s, &costs)) {}

BuiltProgram build_program(const Scenario& sc) { return build_program(sc, ProgramInputs(sc)); }

BuiltProgram build_program(const Scenario& sc, const ProgramInputs& in, RankTable ranks) {
  const auto& m = sc.model;
  const auto& L = sc.layout;
  const int p = L.pp, v = std::max(1, L.virtual_stages), M = L.microbatches;
  BuiltProgram out;
  auto& prog = out.program;

  const StageLayers& layers = in.layers;
  out.stage_layers = layers.per_stage;

  const std::optional<Routing> routing = expert_routing(sc);
  if (routing) {
    out.routing = *routing;
    if (L.ep > 1) prog.all_to_all_weight = routing->device_share;
    if (L.ep > 1 && m.moe.max_nodes_per_token > 0) {
      // Indexed by the number of nodes an ep group spans (equal members on each).
      prog.node_dispatch.top_k = m.moe.top_k;
      prog.node_dispatch.node_share.assign(static_cast<std::size_t>(L.ep) + 1, 0.0);
      for (int nodes = 1; nodes <= L.ep; ++nodes)
        if (L.ep % nodes == 0)
          prog.node_dispatch.node_share[static_cast<std::size_t>(nodes)] =
              node_selection_share(m.moe.experts, m.moe.top_k, m.moe.max_nodes_per_token, nodes);
    }
  }
  if (ranks == RankTable::assign) assign_ranks_and_groups(sc, routing ? &*routing : nullptr, prog);

  const DeviceParams& params = in.params;
  const EmitterInputs inputs{&sc, &in.costs, &in.bytes, &params};
  const auto sched = build_schedule(L.schedule, p, M, v);

  out.static_memory.resize(static_cast<std::size_t>(p));
  out.activation_bytes_per_microbatch.assign(static_cast<std::size_t>(p), 0);
  out.compute_breakdown.assign(static_cast<std::size_t>(p), ComputeBreakdown{});
  prog.stages.resize(static_cast<std::size_t>(p));
  std::vector<StageEmitter> emitters;
  emitters.reserve(static_cast<std::size_t>(p));
  for (int st = 0; st < p; ++st) {
    const auto& chunks = layers.chunks[static_cast<std::size_t>(st)];
    const StageParams sp = stage_params(sc, params, chunks, st);
    const MemoryTerms mt = static_memory(sc, params, chunks, st, sp);
    out.static_memory[static_cast<std::size_t>(st)] = mt;
    out.activation_bytes_per_microbatch[static_cast<std::size_t>(st)] = activation_bytes_per_microbatch(sc, in.bytes, chunks, st);
    emitters.emplace_back(inputs, chunks, st);
    if (st > 0) emitters.back().reserve_like(emitters[static_cast<std::size_t>(st) - 1]);
    emitters.back().emit(sched[static_cast<std::size_t>(st)], sp, mt);
    out.compute_breakdown[static_cast<std::size_t>(st)] = emitters.back().compute_breakdown();
  }
  // Every recv exists now: point each send at its peer's recv.
  for (int st = 0; st < p; ++st) prog.stages[static_cast<std::size_t>(st)] = emitters[static_cast<std::size_t>(st)].take();
  for (int st = 0; st < p; ++st) {
    auto& sends = prog.stages[static_cast<std::size_t>(st)].streams[static_cast<std::size_t>(stream::pp_send)];
    for (const auto& s : emitters[static_cast<std::size_t>(st)].sends())
      sends[s.op].peer_op = emitters[static_cast<std::size_t>(s.peer_stage)].recv_index(s.gradient, s.microbatch, s.peer_chunk);
  }

  out.tokens_per_step = static_cast<double>(M) * L.microbatch_size * L.dp * static_cast<double>(m.seq_len);
  out.matmul_rows = static_cast<double>(L.microbatch_size) * static_cast<double>(m.seq_len);
  return out;
}

}  // namespace ls::wl
