// workloads/advice/bubble_advice.cpp — see bubble_advice.hpp.
#include "workloads/advice/bubble_advice.hpp"

#include <algorithm>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "workloads/model/headroom.hpp"
#include "workloads/model/layout.hpp"
#include "workloads/model/schedule.hpp"

namespace ls::wl {

namespace {

double bubble_of(const LayoutSpec& l) { return analytic_bubble(l.schedule, l.pp, l.microbatches, std::max(1, l.virtual_stages)); }

// A candidate is offered only if the layout rules accept it (layers divisible by
// pp·v, m a multiple of pp for interleaving, ...). Explicit stage_layers are reset
// to the even split, since their length depends on pp and v.
bool acceptable(Scenario c) {
  if (c.layout.stage_layers_mode == StageLayersMode::explicit_list) {
    c.layout.stage_layers_mode = StageLayersMode::auto_even;
    c.layout.stage_layers.clear();
  }
  return validate(c).empty();
}

struct Pick {
  std::string text;
  double bubble = 1;
};

// The first candidate under `target`, else the one with the least bubble that beats `now`.
void consider(std::optional<Pick>& best, double now, double target, Pick cand) {
  if (cand.bubble >= now) return;
  if (best && best->bubble < target) return;  // already have one under target
  if (!best || cand.bubble < target || cand.bubble < best->bubble) best = std::move(cand);
}

}  // namespace

std::string bubble_remedies(const Scenario& s, double target, const std::vector<MemoryTerms>& memory) {
  const auto& L = s.layout;
  const double now = bubble_of(L);
  std::vector<std::string> keep;

  // Interleaving: more virtual stages (Megatron's interleaved 1F1B).
  if (L.pp > 1 && L.schedule != Schedule::gpipe && !splits_backward(L.schedule)) {
    std::optional<Pick> best;
    const int v0 = L.schedule == Schedule::interleaved_1f1b ? std::max(1, L.virtual_stages) : 1;
    for (int v = v0 + 1; v <= 16; ++v) {
      Scenario c = s;
      c.layout.schedule = Schedule::interleaved_1f1b;
      c.layout.virtual_stages = v;
      if (!acceptable(c)) continue;
      const double b = bubble_of(c.layout);
      consider(best, now, target, {fmt::format("schedule: interleaved-1f1b with virtual_stages: {} ({:.1f}%)", v, b * 100), b});
    }
    if (best) keep.push_back(best->text);
  }
  // A smaller micro-batch size: more micro-batches of fewer sequences, same batch.
  {
    std::optional<Pick> best;
    for (int b = L.microbatch_size - 1; b >= 1; --b) {
      if (L.microbatch_size % b != 0) continue;
      Scenario c = s;
      c.layout.microbatch_size = b;
      c.layout.microbatches = L.microbatches * (L.microbatch_size / b);
      if (!acceptable(c)) continue;
      const double bb = bubble_of(c.layout);
      consider(best, now, target, {fmt::format("microbatch_size: {} (m = {}, {:.1f}%)", b, c.layout.microbatches, bb * 100), bb});
    }
    if (best) keep.push_back(best->text);
  }
  // Fewer stages on the same GPUs: dp grows by pp/pp', m shrinks by the same factor.
  {
    std::optional<Pick> best;
    for (int p = L.pp - 1; p >= 1; --p) {
      if (L.pp % p != 0 || (L.microbatches * p) % L.pp != 0) continue;
      Scenario c = s;
      c.layout.pp = p;
      c.layout.dp = L.dp * (L.pp / p);
      c.layout.microbatches = L.microbatches * p / L.pp;
      if (c.layout.schedule == Schedule::interleaved_1f1b && p == 1) {
        c.layout.schedule = Schedule::one_f_one_b;
        c.layout.virtual_stages = 1;
      }
      if (c.layout.microbatches < 1 || !acceptable(c)) continue;
      double peak = 0;
      for (const auto& m : memory)
        peak = std::max(peak, (m.weights + m.gradients + m.master + m.optimizer) * L.pp / p + m.activations + m.buffers);
      if (s.gpu.memory_bytes > 0 && peak > usable_memory_bytes(s)) continue;  // the state would not fit (headroom.hpp)
      const double b = bubble_of(c.layout);
      // Fewer stages: the first (largest pp) under target is the least change.
      consider(best, now, target,
               {fmt::format("pp: {} (dp {}, m = {}, {:.1f}%; about {:.1f} GB per GPU)", p, c.layout.dp, c.layout.microbatches, b * 100,
                            peak / 1e9),
                b});
    }
    if (best) keep.push_back(best->text);
  }

  const long long batch = static_cast<long long>(L.microbatches) * L.microbatch_size * L.dp;
  std::string out;
  if (!keep.empty())
    out = fmt::format("keeping the global batch of {} sequences: {}", batch, fmt::join(keep, "; or "));
  if (L.global_batch == 0) {
    // The user chose micro-batches, not the batch: more of them is an option too.
    const int m = microbatches_for_bubble(L.schedule, L.pp, L.microbatches, std::max(1, L.virtual_stages), target);
    if (m > L.microbatches)
      out += fmt::format("{}microbatches: {} ({:.1f}%; a global batch of {} sequences instead of {})", out.empty() ? "" : "; or ", m,
                         analytic_bubble(L.schedule, L.pp, m, std::max(1, L.virtual_stages)) * 100,
                         static_cast<long long>(m) * L.microbatch_size * L.dp, batch);
  }
  return out;
}

}  // namespace ls::wl
