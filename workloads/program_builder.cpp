// workloads/program_builder.cpp — see program_builder.hpp.
#include "workloads/program_builder.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "workloads/hardware.hpp"
#include "workloads/memory.hpp"
#include "workloads/model.hpp"
#include "workloads/moe.hpp"
#include "workloads/schedule.hpp"
#include "workloads/vocabulary.hpp"

namespace ls::wl {

namespace {

using sim::CollOp;
using sim::Op;
using sim::OpKind;

constexpr int kCompute = static_cast<int>(stream::compute);
constexpr int kPpSend = static_cast<int>(stream::pp_send);
constexpr int kDp = static_cast<int>(stream::dp);
constexpr int kPrefetch = static_cast<int>(stream::prefetch);

/// Per-device compute costs, shared by every layer of the dense model.
struct Costs {
  LayerCosts layer, embed, head;
  sim::Time f, b, bi, bw, rc;          // layer times
  sim::Time ef, eb, hf, hb;            // embedding / head times
  double act_layer = 0;                // activation bytes kept per layer per micro-batch
  double act_full_layer = 0;           // activations materialised by a full recompute of one layer
  double logits_bytes = 0;             // LM head: fp32 logits kept for the loss backward
  // MoE layers: the dense part (attention, router, shared experts) and the routed
  // experts, split so that only the latter scales with a device's expert load.
  bool moe = false;
  LayerCosts moe_dense, moe_expert;
  sim::Time mf, mb, mbi, mbw, mrc;     // dense part times
  sim::Time xf, xb, xbi, xbw, xrc;     // expert part times (balanced load)
  double a2a_bytes = 0;                // one dispatch/combine buffer per device: b·s·k·h·act_bytes / t
  double tp_bytes = 0;                 // one TP all-reduce buffer: b·s·h·act_bytes
  double pp_bytes = 0;                 // one boundary tensor per TP rank
};

sim::Time time_of(const GpuSpec& g, const Cost& c) {
  if (c.flops <= 0 && c.bytes <= 0) return sim::Time::zero();
  return compute_time(g, c.flops, c.bytes, c.rows);
}

Costs make_costs(const Scenario& sc) {
  const auto& m = sc.model;
  const auto& L = sc.layout;
  const int ab = sc.precision.activations;
  Costs c;
  c.layer = layer_costs(m, L.microbatch_size, L.tp, L.sequence_parallel, L.recompute, ab);
  c.embed = embedding_costs(m, L.microbatch_size, L.tp, ab);
  c.head = lm_head_costs(m, L.microbatch_size, L.tp, ab);
  if (L.embedding_free) {
    c.embed = LayerCosts{};
    c.head = LayerCosts{};
  }
  const auto& g = sc.gpu;
  c.f = time_of(g, c.layer.forward);
  c.b = time_of(g, c.layer.backward);
  c.bi = time_of(g, c.layer.backward_input);
  c.bw = time_of(g, c.layer.backward_weight);
  c.rc = time_of(g, c.layer.recompute);
  c.ef = time_of(g, c.embed.forward);
  c.eb = time_of(g, c.embed.backward);
  c.hf = time_of(g, c.head.forward);
  c.hb = time_of(g, c.head.backward);
  if (m.moe.experts > 0) {
    // Difference of two layer_costs calls: the full MoE layer minus the same layer
    // with no routed expert visits (top_k = 0) leaves exactly the routed-expert work.
    c.moe = true;
    const int l_moe = std::max(1, m.moe.every_n_layers) - 1;
    const LayerCosts full = layer_costs(m, l_moe, L.microbatch_size, L.tp, L.ep, L.sequence_parallel, L.recompute, ab);
    ModelSpec m0 = m;
    m0.moe.top_k = 0;
    c.moe_dense = layer_costs(m0, l_moe, L.microbatch_size, L.tp, L.ep, L.sequence_parallel, L.recompute, ab);
    // Rows of one expert's matmul: the ep group's tokens × top_k spread over E experts.
    const double rows = static_cast<double>(L.ep) * L.microbatch_size * static_cast<double>(m.seq_len) * m.moe.top_k /
                        m.moe.experts;
    auto diff = [&](const Cost& a, const Cost& b) { return Cost{a.flops - b.flops, a.bytes - b.bytes, rows}; };
    c.moe_expert.forward = diff(full.forward, c.moe_dense.forward);
    c.moe_expert.backward = diff(full.backward, c.moe_dense.backward);
    c.moe_expert.backward_input = diff(full.backward_input, c.moe_dense.backward_input);
    c.moe_expert.backward_weight = diff(full.backward_weight, c.moe_dense.backward_weight);
    c.moe_expert.recompute = diff(full.recompute, c.moe_dense.recompute);
    c.moe_expert.model_flops_fwd = full.model_flops_fwd - c.moe_dense.model_flops_fwd;
    c.mf = time_of(g, c.moe_dense.forward);
    c.mb = time_of(g, c.moe_dense.backward);
    c.mbi = time_of(g, c.moe_dense.backward_input);
    c.mbw = time_of(g, c.moe_dense.backward_weight);
    c.mrc = time_of(g, c.moe_dense.recompute);
    c.xf = time_of(g, c.moe_expert.forward);
    c.xb = time_of(g, c.moe_expert.backward);
    c.xbi = time_of(g, c.moe_expert.backward_input);
    c.xbw = time_of(g, c.moe_expert.backward_weight);
    c.xrc = time_of(g, c.moe_expert.recompute);
    // Each TP rank dispatches a disjoint 1/t of the micro-batch's tokens.
    c.a2a_bytes = static_cast<double>(L.microbatch_size) * static_cast<double>(m.seq_len) * static_cast<double>(m.hidden) *
                  m.moe.top_k * ab / L.tp;
  }
  c.act_layer = activation_bytes_per_layer(m, L.microbatch_size, L.tp, L.sequence_parallel, L.recompute);
  c.act_full_layer = activation_bytes_per_layer(m, L.microbatch_size, L.tp, L.sequence_parallel, Recompute::none);
  const double bsh = static_cast<double>(L.microbatch_size) * static_cast<double>(m.seq_len) * static_cast<double>(m.hidden);
  // Logits in fp32 (4 B) for the cross-entropy, vocab split over tp (Megatron's vocab-parallel head).
  c.logits_bytes = L.embedding_free ? 0.0
                                    : static_cast<double>(L.microbatch_size) * static_cast<double>(m.seq_len) *
                                          static_cast<double>(m.vocab) * 4.0 / L.tp;
  c.tp_bytes = bsh * ab;
  // With sequence parallelism the boundary activation is already split over the TP
  // group, so each TP rank sends 1/t of it (Megatron's scatter/gather optimisation).
  c.pp_bytes = L.sequence_parallel && L.tp > 1 ? bsh * ab / L.tp : bsh * ab;
  return c;
}

/// Builder state for one stage's template.
struct StageBuilder {
  sim::StageProgram sp;
  std::uint32_t add(int stream, Op op, std::initializer_list<sim::OpRef> deps = {}) {
    op.dep_begin = static_cast<std::uint32_t>(sp.deps.size());
    op.dep_count = 0;
    for (const auto& d : deps) {
      sp.deps.push_back(d);
      ++op.dep_count;
    }
    auto& v = sp.streams[static_cast<std::size_t>(stream)];
    v.push_back(op);
    return static_cast<std::uint32_t>(v.size() - 1);
  }
  std::uint32_t last(int stream) const {
    return static_cast<std::uint32_t>(sp.streams[static_cast<std::size_t>(stream)].size() - 1);
  }
  std::uint32_t count(int stream) const {
    return static_cast<std::uint32_t>(sp.streams[static_cast<std::size_t>(stream)].size());
  }
};

/// Fields every op of a micro-batch pass carries; mb < 0 marks work outside any micro-batch.
Op base_op(OpKind kind, Work w, int mb, int chunk, int lb, int le) {
  Op op;
  op.kind = kind;
  op.tag = tag(w);
  op.counts_as_busy = mb >= 0;
  op.labels[label::microbatch] = mb;
  op.labels[label::chunk] = chunk;
  op.labels[label::layer_begin] = lb;
  op.labels[label::layer_end] = le;
  return op;
}

Op compute_op(Work w, int mb, int chunk, int lb, int le, sim::Time dur, double hw, double model, std::int64_t mem) {
  Op op = base_op(OpKind::compute, w, mb, chunk, lb, le);
  op.duration = dur;
  op.hw_flops = hw;
  op.model_flops = model;
  op.mem_delta_bytes = mem;
  return op;
}

Op coll_op(Axis axis, CollOp coll, Work w, int mb, int chunk, int lb, int le, double bytes, int repeat) {
  Op op = base_op(OpKind::collective, w, mb, chunk, lb, le);
  op.group_slot = slot(axis);
  op.coll = coll;
  op.bytes = bytes;
  op.repeat = static_cast<std::uint8_t>(repeat);
  return op;
}

/// A pipeline transfer end: the send (pp_send stream) or the recv (compute stream).
Op pp_op(OpKind kind, Work w, int mb, int chunk, double bytes, int peer_stage) {
  Op op;
  op.kind = kind;
  op.group_slot = slot(Axis::pp);
  op.tag = tag(w);
  op.labels[label::microbatch] = mb;
  op.labels[label::chunk] = chunk;
  op.bytes = bytes;
  op.peer_stage = peer_stage;
  return op;
}

}  // namespace

std::vector<int> balanced_stage_layers(const Scenario& s) {
  const int p = s.layout.pp;
  const Costs c = make_costs(s);
  // Embedding and LM head in layer-equivalents of one micro-batch's F+B(+recompute).
  const double layer = (c.f + c.b + c.rc).seconds();
  std::vector<double> extra(static_cast<std::size_t>(p), 0.0);
  if (layer > 0) {
    extra.front() += (c.ef + c.eb).seconds() / layer;
    extra.back() += (c.hf + c.hb).seconds() / layer;
  }
  return balanced_stage_layers(s.model.layers, p, extra);
}

std::vector<int> resolve_stage_layers(const Scenario& s) {
  switch (s.layout.stage_layers_mode) {
    case StageLayersMode::explicit_list: return s.layout.stage_layers;
    case StageLayersMode::balanced: return balanced_stage_layers(s);
    case StageLayersMode::auto_even: break;
  }
  return even_stage_layers(s.model.layers, s.layout.pp);
}

BuiltProgram build_program(const Scenario& sc) {
  if (auto errs = validate(sc); !errs.empty())
    throw std::invalid_argument(fmt::format("{}: {}", errs.front().key_path, errs.front().message));
  const auto& m = sc.model;
  const auto& L = sc.layout;
  const int p = L.pp, t = L.tp, d = L.dp, v = std::max(1, L.virtual_stages), M = L.microbatches;
  const Costs c = make_costs(sc);
  BuiltProgram out;

  // ---- layers per stage and per chunk (model chunk mc = chunk·p + stage, Megatron) ----
  out.stage_layers = resolve_stage_layers(sc);
  out.chunk_layers.assign(static_cast<std::size_t>(p), std::vector<ChunkLayers>(static_cast<std::size_t>(v)));
  {
    // Layer counts per model chunk, in model order. An explicit list may give one
    // entry per stage (split evenly over its v chunks) or one per model chunk.
    std::vector<int> per_mc(static_cast<std::size_t>(p * v));
    if (static_cast<int>(out.stage_layers.size()) == p * v && v > 1) {
      per_mc = out.stage_layers;
      out.stage_layers.assign(static_cast<std::size_t>(p), 0);
      for (int mc = 0; mc < p * v; ++mc) out.stage_layers[static_cast<std::size_t>(mc % p)] += per_mc[static_cast<std::size_t>(mc)];
    } else {
      for (int st = 0; st < p; ++st) {
        const int n = out.stage_layers[static_cast<std::size_t>(st)];
        for (int ch = 0; ch < v; ++ch) per_mc[static_cast<std::size_t>(ch * p + st)] = n / v + (ch < n % v ? 1 : 0);
      }
    }
    int begin = 0;
    for (int mc = 0; mc < p * v; ++mc) {
      auto& cl = out.chunk_layers[static_cast<std::size_t>(mc % p)][static_cast<std::size_t>(mc / p)];
      cl.begin = begin;
      cl.end = begin + per_mc[static_cast<std::size_t>(mc)];
      begin = cl.end;
    }
  }

  // ---- MoE routing ----
  std::optional<Routing> routing;
  if (m.moe.experts > 0) {
    routing = route_tokens(m.moe, L.ep);
    out.routing = *routing;
    if (L.ep > 1) out.program.all_to_all_weight = routing->device_share;
  }

  // ---- ranks and groups ----
  const Mesh mesh(d, t, p, L.placement);
  auto& prog = out.program;
  const int D = mesh.size();
  prog.ranks.resize(static_cast<std::size_t>(D));
  prog.pp_peer.assign(static_cast<std::size_t>(D) * static_cast<std::size_t>(p), -1);
  // Group ids: tp groups indexed by (dp, pp), dp groups by (tp, pp).
  std::map<std::tuple<int, int, int>, int> gid;  // (axis, a, b) -> group
  auto group_of = [&](Axis ax, int a, int b) {
    auto key = std::make_tuple(static_cast<int>(ax), a, b);
    auto it = gid.find(key);
    if (it != gid.end()) return it->second;
    const int id = static_cast<int>(prog.groups.size());
    prog.groups.push_back(sim::Group{slot(ax), {}});
    gid.emplace(key, id);
    return id;
  };
  for (int r = 0; r < D; ++r) {
    const Coord co = mesh.coord(r);
    auto& ri = prog.ranks[static_cast<std::size_t>(r)];
    ri.device = r;
    ri.stage = co.pp;
    ri.dp = co.dp;
    ri.tp = co.tp;
    if (t > 1) ri.group[static_cast<int>(Axis::tp)] = group_of(Axis::tp, co.dp, co.pp);
    if (d > 1) ri.group[static_cast<int>(Axis::dp)] = group_of(Axis::dp, co.tp, co.pp);
    // Expert parallelism is carved out of dp (Megatron): ep consecutive dp indices
    // share the experts; ranks with the same dp index modulo ep hold the same
    // experts and reduce their gradients together (expert-data-parallel group).
    if (L.ep > 1) ri.group[static_cast<int>(Axis::ep)] = group_of(Axis::ep, co.tp, co.pp * (d / L.ep) + co.dp / L.ep);
    if (m.moe.experts > 0 && d / L.ep > 1)
      ri.group[static_cast<int>(Axis::edp)] = group_of(Axis::edp, co.tp, co.pp * L.ep + co.dp % L.ep);
    ri.ep = co.dp % L.ep;
    if (routing) ri.work_scale = routing->device_factor[static_cast<std::size_t>(ri.ep)];
    for (int st = 0; st < p; ++st)
      prog.pp_peer[static_cast<std::size_t>(r) * static_cast<std::size_t>(p) + static_cast<std::size_t>(st)] =
          mesh.rank(Coord{co.dp, co.tp, st});
  }
  // Members in axis-coordinate order (ring order follows the placement's neighbours).
  for (int r = 0; r < D; ++r) {
    const auto& ri = prog.ranks[static_cast<std::size_t>(r)];
    for (int ax = 0; ax < kAxisCount; ++ax)
      if (ri.group[static_cast<std::size_t>(ax)] >= 0)
        prog.groups[static_cast<std::size_t>(ri.group[static_cast<std::size_t>(ax)])].ranks.push_back(r);
  }

  // ---- schedule → per-stage templates ----
  const auto sched = build_schedule(L.schedule, p, M, v);
  const bool zb = L.schedule == Schedule::zb_h1;
  const bool zero3 = L.zero >= 3 && d > 1;
  // Per-device parameters of one layer: the dense part is split over tp; routed
  // experts also over ep (each device holds experts/ep of them).
  auto expert_dev_params = [&](int l) {
    return layer_is_moe(m, l) ? static_cast<double>(m.moe.experts) / L.ep * expert_params(m) / t : 0.0;
  };
  auto dense_dev_params = [&](int l) {
    return layer_is_moe(m, l) ? (layer_params(m, l) - m.moe.experts * expert_params(m)) / t : layer_params(m) / t;
  };
  auto layer_w_bytes = [&](int l) { return (dense_dev_params(l) + expert_dev_params(l)) * sc.precision.weights; };
  const bool edp = m.moe.experts > 0 && d / L.ep > 1;
  const int last_mc = p * v - 1;
  // A tied table is counted once, on the first stage, so that fully sharded state is
  // exactly bytes·N/D (the seed's worked example). Megatron keeps a second copy on the
  // last stage for the LM head; that copy (V·h/t parameters) is not modelled.
  // `embedding_free` (what-if/tests) removes the embedding and head entirely: no
  // work and no parameters, so equal stages really are equal.
  const double head_params = L.embedding_free ? 0.0 : lm_head_params(m);
  const double emb_params = L.embedding_free ? 0.0 : embedding_params(m);
  // Weights a gather must fetch for layer l: the layer, plus the embedding with the
  // first layer and the LM head with the last (they live on those stages).
  auto gather_w_bytes = [&](int l) {
    double b = layer_w_bytes(l);
    if (l == 0) b += emb_params / t * sc.precision.weights;
    if (l == m.layers - 1) b += head_params / t * sc.precision.weights;
    return b;
  };
  // ZeRO-1/2 (distributed optimizer): each rank updated its shard; the new weights are
  // all-gathered bucket by bucket at the start of the next step, overlapped with the
  // forward (Megatron's overlap_param_gather). In one simulated step: a gather per
  // layer on the prefetch stream, and the layer's first forward waits for it.
  const bool zero12_gather = d > 1 && (L.zero == 1 || L.zero == 2);

  // recv index per (stage, dir, mb, chunk); sends patched once all stages exist.
  std::vector<std::vector<std::uint32_t>> recv_idx(static_cast<std::size_t>(p),
                                                   std::vector<std::uint32_t>(static_cast<std::size_t>(2 * M * v), 0));
  auto rkey = [&](int dir, int mb, int ch) { return static_cast<std::size_t>((dir * M + mb) * v + ch); };
  struct PendingSend { int stage; std::uint32_t op; int peer_stage, dir, mb, chunk; };
  std::vector<PendingSend> sends;

  out.static_memory.resize(static_cast<std::size_t>(p));
  out.activation_bytes_per_microbatch.assign(static_cast<std::size_t>(p), 0);
  out.stage_compute_s.assign(static_cast<std::size_t>(p), 0);
  prog.stages.resize(static_cast<std::size_t>(p));

  for (int st = 0; st < p; ++st) {
    StageBuilder B;
    const auto& items = sched[static_cast<std::size_t>(st)];
    // Last backward-type item per chunk: DP/ZeRO gradient work hangs off it.
    std::vector<int> last_grad_item(static_cast<std::size_t>(v), -1);
    for (int i = 0; i < static_cast<int>(items.size()); ++i) {
      const auto& it = items[static_cast<std::size_t>(i)];
      const bool grad = zb ? it.kind == ItemKind::backward_weight
                           : (it.kind == ItemKind::backward || it.kind == ItemKind::backward_weight);
      if (grad) last_grad_item[static_cast<std::size_t>(it.chunk)] = i;
    }
    std::uint32_t prefetch_seq = 0;          // ZeRO-3 gathers issued so far
    std::vector<std::uint32_t> gather_users; // compute op that consumed gather k
    double bucket = 0;                       // pending DP gradient bytes
    bool dp_any = false;

    auto gather_for = [&](int mb, int ch, int layer) -> std::int64_t {
      if (!zero3) return -1;
      // One-layer prefetch: gather k may start once the layer that used gather k−2
      // has finished, so at most two gathered layers are resident.
      Op g = coll_op(Axis::dp, CollOp::all_gather, Work::param_gather, -1, ch, layer, layer + 1, gather_w_bytes(layer), 1);
      g.labels[label::microbatch] = mb;
      std::uint32_t idx;
      if (prefetch_seq >= 2)
        idx = B.add(kPrefetch, g, {sim::OpRef{static_cast<std::uint8_t>(kCompute), gather_users[prefetch_seq - 2]}});
      else
        idx = B.add(kPrefetch, g);
      ++prefetch_seq;
      return idx;
    };
    std::vector<char> step_gathered(static_cast<std::size_t>(m.layers), 0);
    // ZeRO-1/2: the first forward of a layer in this step waits for its weights.
    auto step_gather_for = [&](int ch, int layer) -> std::int64_t {
      if (!zero12_gather || step_gathered[static_cast<std::size_t>(layer)]) return -1;
      step_gathered[static_cast<std::size_t>(layer)] = 1;
      const double dense = gather_w_bytes(layer) - expert_dev_params(layer) * sc.precision.weights;
      const auto idx = B.add(kPrefetch, coll_op(Axis::dp, CollOp::all_gather, Work::param_gather, -1, ch, layer, layer + 1, dense, 1));
      if (edp && layer_is_moe(m, layer))
        return B.add(kPrefetch, coll_op(Axis::edp, CollOp::all_gather, Work::param_gather, -1, ch, layer, layer + 1,
                                        expert_dev_params(layer) * sc.precision.weights, 1));
      return idx;
    };
    auto layer_compute = [&](Op op, std::int64_t gather) {
      std::uint32_t idx;
      if (gather >= 0) {
        idx = B.add(kCompute, op, {sim::OpRef{static_cast<std::uint8_t>(kPrefetch), static_cast<std::uint32_t>(gather)}});
        if (zero3) gather_users.push_back(idx);  // the ZeRO-3 window tracks who used gather k
      } else {
        idx = B.add(kCompute, op);
      }
      return idx;
    };
    auto tp_comm = [&](Work w, int mb, int ch, int lb, int le, int repeat) {
      if (t > 1) B.add(kCompute, coll_op(Axis::tp, CollOp::all_reduce, w, mb, ch, lb, le, c.tp_bytes, repeat));
    };
    auto dp_grad = [&](std::uint32_t after_compute, double bytes, int lb, int le, int ch, bool flush) {
      if (d <= 1) return;
      bucket += bytes;
      if (!flush && bucket < L.dp_bucket_bytes) return;
      const CollOp op = L.zero >= 1 ? CollOp::reduce_scatter : CollOp::all_reduce;
      Op g = coll_op(Axis::dp, op, Work::grad_sync, -1, ch, lb, le, bucket, 1);
      B.add(kDp, g, {sim::OpRef{static_cast<std::uint8_t>(kCompute), after_compute}});
      bucket = 0;
      dp_any = true;
    };

    auto ep_a2a = [&](Work w, int mb, int ch, int l, int variant) {
      if (L.ep <= 1) return;
      Op a = coll_op(Axis::ep, CollOp::all_to_all, w, mb, ch, l, l + 1, c.a2a_bytes, 1);
      a.variant = static_cast<std::uint8_t>(variant);
      B.add(kCompute, a);
    };
    auto expert_op = [&](Work w, int mb, int ch, int l, sim::Time dur, double hw, double mf) {
      Op x = compute_op(w, mb, ch, l, l + 1, dur, hw, mf, 0);
      x.scaled_by_rank = true;
      return B.add(kCompute, x);
    };
    auto edp_grad = [&](int l, int ch) {
      // Expert gradients reduce over the ranks holding the same experts.
      if (!edp || !layer_is_moe(m, l)) return;
      const CollOp op = L.zero >= 1 ? CollOp::reduce_scatter : CollOp::all_reduce;
      B.add(kDp, coll_op(Axis::edp, op, Work::grad_sync, -1, ch, l, l + 1, expert_dev_params(l) * sc.precision.gradients, 1),
            {sim::OpRef{static_cast<std::uint8_t>(kCompute), B.last(kCompute)}});
      dp_any = true;
    };

    for (int i = 0; i < static_cast<int>(items.size()); ++i) {
      const auto& it = items[static_cast<std::size_t>(i)];
      const int ch = it.chunk, mb = it.microbatch;
      const int mc = ch * p + st;
      const auto cl = out.chunk_layers[static_cast<std::size_t>(st)][static_cast<std::size_t>(ch)];
      const double act = c.act_layer;
      if (it.kind == ItemKind::forward) {
        if (mc > 0) {
          recv_idx[static_cast<std::size_t>(st)][rkey(0, mb, ch)] =
              B.add(kCompute, pp_op(OpKind::recv, Work::forward, mb, ch, c.pp_bytes, -1));
        }
        if (mc == 0 && !L.embedding_free) {
          B.add(kCompute, compute_op(Work::forward, mb, ch, -1, 0, c.ef, c.embed.forward.flops, c.embed.model_flops_fwd, 0));
          tp_comm(Work::forward, mb, ch, -1, 0, 1);  // vocab-parallel embedding all-reduce
        }
        for (int l = cl.begin; l < cl.end; ++l) {
          std::int64_t g = gather_for(mb, ch, l);
          if (g < 0) g = step_gather_for(ch, l);
          if (c.moe && layer_is_moe(m, l)) {
            // Attention + router, dispatch, the experts this device owns, combine.
            layer_compute(compute_op(Work::forward, mb, ch, l, l + 1, c.mf, c.moe_dense.forward.flops,
                                     c.moe_dense.model_flops_fwd, static_cast<std::int64_t>(act)),
                          g);
            tp_comm(Work::forward, mb, ch, l, l + 1, 1);
            ep_a2a(Work::forward, mb, ch, l, 0);
            expert_op(Work::forward, mb, ch, l, c.xf, c.moe_expert.forward.flops, c.moe_expert.model_flops_fwd);
            ep_a2a(Work::forward, mb, ch, l, 1);
            tp_comm(Work::forward, mb, ch, l, l + 1, 1);
            continue;
          }
          layer_compute(compute_op(Work::forward, mb, ch, l, l + 1, c.f, c.layer.forward.flops, c.layer.model_flops_fwd,
                                   static_cast<std::int64_t>(act)),
                        g);
          tp_comm(Work::forward, mb, ch, l, l + 1, 2);
        }
        if (mc == last_mc && !L.embedding_free)
          B.add(kCompute, compute_op(Work::forward, mb, ch, m.layers, m.layers + 1, c.hf, c.head.forward.flops,
                                     c.head.model_flops_fwd, static_cast<std::int64_t>(c.logits_bytes)));
        if (mc < last_mc) {
          const Op s = pp_op(OpKind::send, Work::forward, mb, ch, c.pp_bytes, (mc + 1) % p);
          const auto idx = B.add(kPpSend, s, {sim::OpRef{static_cast<std::uint8_t>(kCompute), B.last(kCompute)}});
          sends.push_back(PendingSend{st, idx, (mc + 1) % p, 0, mb, (mc + 1) / p});
        }
        continue;
      }
      if (it.kind == ItemKind::backward || it.kind == ItemKind::backward_input) {
        const bool split = it.kind == ItemKind::backward_input;
        if (mc < last_mc) {
          recv_idx[static_cast<std::size_t>(st)][rkey(1, mb, ch)] =
              B.add(kCompute, pp_op(OpKind::recv, Work::backward, mb, ch, c.pp_bytes, -1));
        }
        if (mc == last_mc && !L.embedding_free) {
          B.add(kCompute, compute_op(Work::backward, mb, ch, m.layers, m.layers + 1, c.hb, c.head.backward.flops,
                                     2 * c.head.model_flops_fwd, -static_cast<std::int64_t>(c.logits_bytes)));
          tp_comm(Work::backward, mb, ch, m.layers, m.layers + 1, 1);
        }
        const bool is_last_grad = !zb && i == last_grad_item[static_cast<std::size_t>(ch)];
        for (int l = cl.end - 1; l >= cl.begin; --l) {
          const auto g = gather_for(mb, ch, l);
          if (c.moe && layer_is_moe(m, l)) {
            // Mirror of the forward: gradients go to the expert owners and back.
            std::int64_t rc_mem = 0;
            if (L.recompute != Recompute::none) {
              rc_mem = L.recompute == Recompute::full ? static_cast<std::int64_t>(c.act_full_layer) : 0;
              layer_compute(compute_op(Work::recompute, mb, ch, l, l + 1, c.mrc, c.moe_dense.recompute.flops, 0, rc_mem), g);
              if (L.recompute == Recompute::full)
                expert_op(Work::recompute, mb, ch, l, c.xrc, c.moe_expert.recompute.flops, 0);
            }
            const Work bw = split ? Work::backward_input : Work::backward;
            tp_comm(bw, mb, ch, l, l + 1, 1);
            ep_a2a(bw, mb, ch, l, 0);
            expert_op(bw, mb, ch, l, split ? c.xbi : c.xb,
                      split ? c.moe_expert.backward_input.flops : c.moe_expert.backward.flops,
                      (split ? 1 : 2) * c.moe_expert.model_flops_fwd);
            ep_a2a(bw, mb, ch, l, 1);
            const std::int64_t free_mem = -rc_mem - (split ? 0 : static_cast<std::int64_t>(act));
            Op dn = compute_op(bw, mb, ch, l, l + 1, split ? c.mbi : c.mb,
                               split ? c.moe_dense.backward_input.flops : c.moe_dense.backward.flops,
                               (split ? 1 : 2) * c.moe_dense.model_flops_fwd, free_mem);
            if (L.recompute != Recompute::none) B.add(kCompute, dn);
            else layer_compute(dn, g);
            tp_comm(bw, mb, ch, l, l + 1, 1);
            if (is_last_grad) {
              dp_grad(B.last(kCompute), dense_dev_params(l) * sc.precision.gradients, l, l + 1, ch, false);
              edp_grad(l, ch);
            }
            continue;
          }
          // Full recompute re-runs the layer's forward (with its TP all-reduces) and
          // holds its complete activations until the backward ends: a separate op.
          // Selective recompute (the attention core) runs back to back with the
          // backward and no communication in between, so it is folded into the
          // backward op — one event instead of two, same time and FLOPs.
          const bool full_rc = L.recompute == Recompute::full;
          const bool sel_rc = L.recompute == Recompute::selective;
          std::int64_t rc_mem = 0;
          std::int64_t gather = g;
          if (full_rc) {
            rc_mem = static_cast<std::int64_t>(c.act_full_layer);
            layer_compute(compute_op(Work::recompute, mb, ch, l, l + 1, c.rc, c.layer.recompute.flops, 0, rc_mem), g);
            tp_comm(Work::recompute, mb, ch, l, l + 1, 2);
            gather = -1;  // consumed by the recompute
          }
          const sim::Time dur = (split ? c.bi : c.b) + (sel_rc ? c.rc : sim::Time::zero());
          const double hw = (split ? c.layer.backward_input.flops : c.layer.backward.flops) + (sel_rc ? c.layer.recompute.flops : 0.0);
          const double mf = split ? c.layer.model_flops_fwd : 2 * c.layer.model_flops_fwd;
          // Activations are freed by the op that last needs them: the full backward,
          // or (zb-h1) the weight-gradient half.
          const std::int64_t free_mem = -rc_mem - (split ? 0 : static_cast<std::int64_t>(act));
          const Op bop = compute_op(split ? Work::backward_input : Work::backward, mb, ch, l, l + 1, dur, hw, mf, free_mem);
          if (gather >= 0) layer_compute(bop, gather);
          else B.add(kCompute, bop);
          tp_comm(split ? Work::backward_input : Work::backward, mb, ch, l, l + 1, 2);
          if (is_last_grad) dp_grad(B.last(kCompute), dense_dev_params(l) * sc.precision.gradients, l, l + 1, ch, false);
        }
        if (mc == 0 && !L.embedding_free) {
          B.add(kCompute, compute_op(Work::backward, mb, ch, -1, 0, c.eb, c.embed.backward.flops, 0, 0));
        }
        if (is_last_grad) {
          const double extra = (mc == 0 ? emb_params : 0.0) + (mc == last_mc ? head_params : 0.0);
          dp_grad(B.last(kCompute), extra / t * sc.precision.gradients, cl.begin, cl.end, ch, true);
        }
        if (mc > 0) {
          const Op s = pp_op(OpKind::send, Work::backward, mb, ch, c.pp_bytes, (mc - 1) % p);
          // The gradient leaves after the chunk's first layer (input gradient).
          const auto idx = B.add(kPpSend, s, {sim::OpRef{static_cast<std::uint8_t>(kCompute), B.last(kCompute)}});
          sends.push_back(PendingSend{st, idx, (mc - 1) % p, 1, mb, (mc - 1) / p});
        }
        continue;
      }
      // zb-h1 weight-gradient work: no communication, fills the bubble.
      const bool is_last_grad = i == last_grad_item[static_cast<std::size_t>(ch)];
      for (int l = cl.end - 1; l >= cl.begin; --l) {
        if (c.moe && layer_is_moe(m, l)) {
          expert_op(Work::backward_weight, mb, ch, l, c.xbw, c.moe_expert.backward_weight.flops, c.moe_expert.model_flops_fwd);
          B.add(kCompute, compute_op(Work::backward_weight, mb, ch, l, l + 1, c.mbw, c.moe_dense.backward_weight.flops,
                                     c.moe_dense.model_flops_fwd, -static_cast<std::int64_t>(act)));
          if (is_last_grad) {
            dp_grad(B.last(kCompute), dense_dev_params(l) * sc.precision.gradients, l, l + 1, ch, false);
            edp_grad(l, ch);
          }
          continue;
        }
        B.add(kCompute, compute_op(Work::backward_weight, mb, ch, l, l + 1, c.bw, c.layer.backward_weight.flops,
                                   c.layer.model_flops_fwd, -static_cast<std::int64_t>(act)));
        if (is_last_grad) dp_grad(B.last(kCompute), dense_dev_params(l) * sc.precision.gradients, l, l + 1, ch, false);
      }
      if (is_last_grad) {
        const double extra = (mc == 0 ? emb_params : 0.0) + (mc == last_mc ? head_params : 0.0);
        dp_grad(B.last(kCompute), extra / t * sc.precision.gradients, cl.begin, cl.end, ch, true);
      }
    }

    // ---- optimizer step: memory-bound, after every gradient is reduced ----
    double params_dev = 0, expert_dev = 0;  // per device; expert_dev is the routed experts' share
    for (int ch = 0; ch < v; ++ch) {
      const auto cl = out.chunk_layers[static_cast<std::size_t>(st)][static_cast<std::size_t>(ch)];
      const int mc = ch * p + st;
      for (int l = cl.begin; l < cl.end; ++l) {
        params_dev += dense_dev_params(l);
        expert_dev += expert_dev_params(l);
      }
      if (mc == 0) params_dev += emb_params / t;
      if (mc == last_mc) params_dev += head_params / t;
    }
    // ZeRO shards dense state over dp and expert state over the expert-data-parallel group.
    const int edp_size = std::max(1, d / L.ep);
    const double opt_params = L.zero >= 1 ? params_dev / d + expert_dev / edp_size : params_dev + expert_dev;
    const auto& pr = sc.precision;
    // Adam reads and writes master, both moments and the weights, and reads the grads.
    const double opt_bytes = opt_params * (2.0 * (pr.master + pr.optimizer + pr.weights) + pr.gradients);
    // Adam's ~10 element-wise FLOP per parameter are not counted as hardware FLOPs
    // (Megatron's HFU counts matmul work only), so FLOPs are conserved across layouts.
    Op opt = compute_op(Work::optimizer, -1, 0, -1, -1, compute_time(sc.gpu, 0, opt_bytes, 1e9), 0, 0, 0);
    if (dp_any)
      B.add(kCompute, opt, {sim::OpRef{static_cast<std::uint8_t>(kDp), B.last(kDp)}});
    else
      B.add(kCompute, opt);
    // ---- static memory and per-stage analytic figures ----
    StateBytes sb = state_bytes(params_dev, pr, L.zero, d);
    if (expert_dev > 0) {
      const StateBytes se = state_bytes(expert_dev, pr, L.zero, edp_size);
      sb.weights += se.weights;
      sb.gradients += se.gradients;
      sb.master += se.master;
      sb.optimizer += se.optimizer;
    }
    MemoryTerms mt;
    mt.stage = st;
    mt.weights = sb.weights;
    mt.gradients = sb.gradients;
    mt.master = sb.master;
    mt.optimizer = sb.optimizer;
    double buffers = 0;
    if (zero3) {
      double widest = 0;  // two gathered layers (one-layer prefetch)
      for (const auto& cl : out.chunk_layers[static_cast<std::size_t>(st)])
        for (int l = cl.begin; l < cl.end; ++l) widest = std::max(widest, layer_w_bytes(l));
      buffers += 2 * widest;
    }
    if (d > 1) buffers += std::min(L.dp_bucket_bytes, params_dev * pr.gradients);  // bucket being reduced
    mt.buffers = buffers;
    out.static_memory[static_cast<std::size_t>(st)] = mt;
    B.sp.static_memory_bytes = static_cast<std::int64_t>(sb.weights + sb.gradients + sb.master + sb.optimizer + buffers);

    double act_mb = 0;
    sim::Time comp;
    for (int ch = 0; ch < v; ++ch) {
      const auto cl = out.chunk_layers[static_cast<std::size_t>(st)][static_cast<std::size_t>(ch)];
      const int mc = ch * p + st;
      for (int l = cl.begin; l < cl.end; ++l) {
        if (c.moe && layer_is_moe(m, l)) {
          const double x = routing ? *std::max_element(routing->device_factor.begin(), routing->device_factor.end()) : 1.0;
          comp += c.mf + c.mb + c.mrc + sim::Time::from_seconds((c.xf + c.xb + c.xrc).seconds() * x);
        } else {
          comp += c.f + c.b + c.rc;
        }
      }
      act_mb += c.act_layer * (cl.end - cl.begin);
      if (mc == 0) comp += c.ef + c.eb;
      if (mc == last_mc) { comp += c.hf + c.hb; act_mb += c.logits_bytes; }
    }
    out.activation_bytes_per_microbatch[static_cast<std::size_t>(st)] = act_mb;
    out.stage_compute_s[static_cast<std::size_t>(st)] = comp.seconds();
    prog.stages[static_cast<std::size_t>(st)] = std::move(B.sp);
  }

  for (const auto& s : sends) {
    auto& op = prog.stages[static_cast<std::size_t>(s.stage)].streams[kPpSend][s.op];
    op.peer_op = recv_idx[static_cast<std::size_t>(s.peer_stage)][rkey(s.dir, s.mb, s.chunk)];
  }

  // ---- analytic totals ----
  out.params_total = total_params(m);
  out.tokens_per_step = static_cast<double>(M) * L.microbatch_size * d * static_cast<double>(m.seq_len);
  double model_fwd_mb = m.layers * c.layer.model_flops_fwd * t + (c.embed.model_flops_fwd + c.head.model_flops_fwd) * t;
  out.model_flops_step = 3.0 * model_fwd_mb * M * d;
  double hw_mb = m.layers * (c.layer.forward.flops + c.layer.backward.flops + c.layer.recompute.flops) +
                 c.embed.forward.flops + c.embed.backward.flops + c.head.forward.flops + c.head.backward.flops;
  out.hardware_flops_step = hw_mb * t * M * d;
  out.matmul_rows = static_cast<double>(L.microbatch_size) * static_cast<double>(m.seq_len);
  out.matmul_efficiency = matmul_efficiency(sc.gpu, out.matmul_rows);
  return out;
}

}  // namespace ls::wl
