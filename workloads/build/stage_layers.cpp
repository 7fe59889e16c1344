// workloads/build/stage_layers.cpp — see stage_layers.hpp.
#include "workloads/build/stage_layers.hpp"

#include <algorithm>
#include <cstddef>
#include <optional>

#include "workloads/model/layout.hpp"
#include "workloads/model/schedule.hpp"
#include "workloads/cost/pass_costs.hpp"
#include "workloads/model/model.hpp"

namespace ls::wl {

std::vector<int> balanced_stage_layers(const Scenario& s, const PassCosts* priced) {
  const int p = s.layout.pp;
  std::optional<KernelPassCosts> own;
  if (!priced) priced = &own.emplace(s);
  const PassCosts& costs = *priced;
  // Embedding and LM head in layer-equivalents of one micro-batch's F+B(+recompute);
  // under layout.recompute.layers every layer carries the recomputed share's mean.
  const double layer = (costs.layer(LayerKind::dense, Pass::forward).time + costs.layer(LayerKind::dense, Pass::backward).time)
                           .seconds() +
                       recomputed_layer_share(s.layout, s.model.layers) * costs.layer(LayerKind::dense, Pass::recompute).time.seconds();
  std::vector<double> extra(static_cast<std::size_t>(p), 0.0);
  if (layer > 0) {
    extra.front() += (costs.embedding(Pass::forward).time + costs.embedding(Pass::backward).time).seconds() / layer;
    extra.back() += (costs.head(Pass::forward).time + costs.head(Pass::backward).time).seconds() / layer;
    // Each MTP module: a block, its entry and the head again, on the last stage.
    extra.back() += s.model.mtp_depth * (1 + (costs.head(Pass::forward).time + costs.head(Pass::backward).time +
                                              costs.mtp_entry(Pass::forward).time + costs.mtp_entry(Pass::backward).time)
                                                     .seconds() / layer);
  }
  return balanced_stage_layers(s.model.layers, p, extra);
}

std::vector<int> resolve_stage_layers(const Scenario& s, const PassCosts* costs) {
  switch (s.layout.stage_layers_mode) {
    case StageLayersMode::explicit_list: return s.layout.stage_layers;
    case StageLayersMode::balanced: return balanced_stage_layers(s, costs);
    case StageLayersMode::auto_even: break;
  }
  return even_stage_layers(s.model.layers, s.layout.pp);
}

namespace {

/// dualpipe: each copy of the model is a pipeline of pp model chunks, sized as any
/// pipeline's stages; stage s holds model chunk s of one copy (chunk 0) and p−1−s of the
/// other (chunk 1), the MTP modules with the last model chunk in both.
StageLayers dualpipe_stage_layers(const Scenario& s, const PassCosts* costs) {
  const int p = s.layout.pp;
  const std::vector<int> per_mc = resolve_stage_layers(s, costs);
  std::vector<ChunkLayers> ranges(static_cast<std::size_t>(p));
  int begin = 0;
  for (int mc = 0; mc < p; ++mc) {
    ranges[static_cast<std::size_t>(mc)] = {begin, begin + per_mc[static_cast<std::size_t>(mc)]};
    begin += per_mc[static_cast<std::size_t>(mc)];
  }
  ranges.back().end += s.model.mtp_depth;
  StageLayers out;
  for (int st = 0; st < p; ++st) {
    const ChunkLayers down = ranges[static_cast<std::size_t>(st)], up = ranges[static_cast<std::size_t>(p - 1 - st)];
    out.chunks.push_back({down, up});
    out.per_stage.push_back((down.end - down.begin) + (up.end - up.begin));
  }
  return out;
}

}  // namespace

StageLayers stage_layers(const Scenario& s, const PassCosts* costs) {
  if (s.layout.schedule == Schedule::dualpipe) return dualpipe_stage_layers(s, costs);
  const int p = s.layout.pp, v = std::max(1, s.layout.virtual_stages);
  StageLayers out;
  out.per_stage = resolve_stage_layers(s, costs);
  out.chunks.assign(static_cast<std::size_t>(p), std::vector<ChunkLayers>(static_cast<std::size_t>(v)));
  // Layer counts per model chunk, in model order.
  std::vector<int> per_mc(static_cast<std::size_t>(p * v));
  if (static_cast<int>(out.per_stage.size()) == p * v && v > 1) {
    per_mc = out.per_stage;
    out.per_stage.assign(static_cast<std::size_t>(p), 0);
    for (int mc = 0; mc < p * v; ++mc)
      out.per_stage[static_cast<std::size_t>(place_model_chunk(s.layout.schedule, p, mc).first)] += per_mc[static_cast<std::size_t>(mc)];
  } else {
    for (int st = 0; st < p; ++st) {
      const int n = out.per_stage[static_cast<std::size_t>(st)];
      for (int ch = 0; ch < v; ++ch)
        per_mc[static_cast<std::size_t>(model_chunk_of(s.layout.schedule, p, st, ch))] = n / v + (ch < n % v ? 1 : 0);
    }
  }
  int begin = 0;
  for (int mc = 0; mc < p * v; ++mc) {
    const auto [stage, chunk] = place_model_chunk(s.layout.schedule, p, mc);
    auto& cl = out.chunks[static_cast<std::size_t>(stage)][static_cast<std::size_t>(chunk)];
    cl.begin = begin;
    cl.end = begin + per_mc[static_cast<std::size_t>(mc)];
    begin = cl.end;
  }
  // The MTP modules' blocks follow the model's last layer in the last model chunk.
  if (const int d = s.model.mtp_depth; d > 0) {
    const auto [stage, chunk] = place_model_chunk(s.layout.schedule, p, p * v - 1);
    out.chunks[static_cast<std::size_t>(stage)][static_cast<std::size_t>(chunk)].end += d;
    out.per_stage[static_cast<std::size_t>(stage)] += d;
  }
  return out;
}

}  // namespace ls::wl
