// workloads/model/cp_attention.cpp — see cp_attention.hpp.
#include "workloads/model/cp_attention.hpp"

#include "workloads/model/model.hpp"

namespace ls::wl {

double cp_kv_chunk_bytes(const Scenario& s) {
  const auto& L = s.layout;
  const auto& m = s.model;
  if (L.cp <= 1) return 0;
  const double tokens = static_cast<double>(L.microbatch_size) * static_cast<double>(m.seq_len) / L.cp;
  // K and V of this rank's heads (MLA: after the up-projection, as Megatron-Core's
  // context parallelism exchanges them).
  const AttentionShape A = attention_shape(m);
  return tokens * (A.k_width() + A.v_width()) / L.tp * s.precision.activations;
}

std::vector<CpCollective> cp_exchange(const Scenario& s, bool backward) {
  const auto& L = s.layout;
  if (L.cp <= 1) return {};
  const double S = L.cp * cp_kv_chunk_bytes(s);
  if (L.cp_kind == CpKind::ring) return {CpCollective{sim::CollOp::all_gather, S, backward ? 2 : 1, false}};
  if (!backward) return {CpCollective{sim::CollOp::all_gather, S, 1, false}};
  return {CpCollective{sim::CollOp::all_gather, S, 1, false}, CpCollective{sim::CollOp::reduce_scatter, S, 1, true}};
}

double cp_bytes_sent(const Scenario& s, bool backward) {
  const auto& L = s.layout;
  if (L.cp <= 1) return 0;
  return (backward ? 2.0 : 1.0) * (L.cp - 1) * cp_kv_chunk_bytes(s);
}

}  // namespace ls::wl
