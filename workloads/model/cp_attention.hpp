// workloads/model/cp_attention.hpp — the key/value exchange of context parallelism.
//
// Under `layout.cp` each sequence is split in 2·cp chunks and rank i of a cp group holds
// chunks i and 2·cp−1−i, so that every rank does the same share of the causal attention
// (Megatron-Core's load balancing). Its queries need the keys and values of the whole
// sequence; how they travel is `layout.cp_kind`:
//  * ring (Megatron-Core / TransformerEngine P2P): cp−1 steps, each passing one rank's
//    K/V chunk to the ring neighbour while the attention of the chunk at hand runs; the
//    backward passes K/V again and the dK/dV accumulators the other way (2× the bytes).
//    A step's transfer is hidden behind its attention block; only what exceeds it shows.
//  * all-gather (Llama 3, Dubey et al. 2024 §3.3.2): K/V all-gathered before the
//    attention (exposed), the backward all-gathers them again and reduce-scatters dK/dV.
// Bytes: one rank's K/V for one micro-batch is chunk = 2·b·(s/cp)·(g/t)·d·ab (g KV heads,
// split over t TP ranks, head dimension d = h/a, ab bytes per element). Per layer and
// micro-batch each rank sends (cp−1)·chunk forward and 2·(cp−1)·chunk backward, both
// kinds alike. Memory: each rank keeps only its own chunk's K/V for the backward
// (layer_kernels.cpp); the all-gather kind's transient buffer of the gathered K/V
// (cp·chunk per layer pass) is not counted. As collectives both are a ring all-gather (or reduce-scatter) of the
// per-rank buffer S = cp·chunk: (cp−1) steps of S/cp (topology/collective_costs.hpp).
#pragma once

#include <vector>

#include "sim/comm_plan.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

/// One K/V chunk of one rank for one micro-batch, bytes: 2·b·(s/cp)·(g/t)·(h/a)·ab.
/// 0 when cp == 1. O(1).
double cp_kv_chunk_bytes(const Scenario& s);

/// One collective of the exchange.
struct CpCollective {
  sim::CollOp coll = sim::CollOp::all_gather;
  double bytes = 0;   // per-rank buffer S = cp·chunk
  int repeat = 1;     // back-to-back runs (ring backward: K/V and dK/dV)
  bool after = false; // runs after the attention (the all-gather kind's dK/dV reduce-scatter)
};

/// The exchange of one layer pass. `backward`: a backward (or its input half), else a
/// forward or a recompute. Empty when cp == 1. O(1).
std::vector<CpCollective> cp_exchange(const Scenario& s, bool backward);

/// Bytes each rank sends per layer and micro-batch (closed form, for tests and docs):
/// (cp−1)·chunk forward, 2·(cp−1)·chunk backward. O(1).
double cp_bytes_sent(const Scenario& s, bool backward);

}  // namespace ls::wl
