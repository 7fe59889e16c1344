// workloads/model/schedule.cpp — pipeline schedule orders (see schedule.hpp for the rules).
#include "workloads/model/schedule.hpp"

#include <algorithm>
#include <array>
#include <deque>
#include <stdexcept>

#include <fmt/format.h>

namespace ls::wl {

namespace {

void check(Schedule sch, int pp, int m, int v) {
  if (pp < 1 || m < 1 || v < 1)
    throw std::invalid_argument(fmt::format("pipeline schedule: pp ({}), microbatches ({}) and virtual_stages ({}) must be >= 1", pp, m, v));
  if (sch == Schedule::interleaved_1f1b) {
    if (m % pp != 0)
      throw std::invalid_argument(fmt::format("interleaved-1f1b: microbatches ({}) must be a multiple of pp ({})", m, pp));
  } else if (two_chunks_per_stage(sch)) {
    if (v != 2)
      throw std::invalid_argument(fmt::format("{} runs two chunks per stage: virtual_stages must be 2, got {}", schedule_name(sch), v));
    if (sch == Schedule::dualpipe && (pp % 2 != 0 || m % 2 != 0 || m < 2 * pp))
      throw std::invalid_argument(
          fmt::format("dualpipe needs an even pp ({}) and an even number of micro-batches of at least 2·pp ({})", pp, m));
  } else if (v != 1) {
    throw std::invalid_argument(fmt::format("virtual_stages = {} needs the interleaved-1f1b, zb-v or dualpipe schedule", v));
  }
}

ScheduleItem F(int mb, int c = 0) { return {ItemKind::forward, mb, c}; }
ScheduleItem B(int mb, int c = 0) { return {ItemKind::backward, mb, c}; }

std::vector<ScheduleItem> gpipe_stage(int m) {
  std::vector<ScheduleItem> out;
  for (int i = 0; i < m; ++i) out.push_back(F(i));
  for (int i = 0; i < m; ++i) out.push_back(B(i));
  return out;
}

int one_f_one_b_warmup(int pp, int stage, int m) { return std::min(pp - stage - 1, m); }

std::vector<ScheduleItem> one_f_one_b_stage(int pp, int stage, int m) {
  const int w = one_f_one_b_warmup(pp, stage, m);
  std::vector<ScheduleItem> out;
  for (int i = 0; i < w; ++i) out.push_back(F(i));
  for (int i = 0; i < m - w; ++i) {
    out.push_back(F(w + i));
    out.push_back(B(i));
  }
  for (int i = m - w; i < m; ++i) out.push_back(B(i));
  return out;
}

int interleaved_warmup(int pp, int stage, int m, int v) {
  const int total = m * v;
  if (m == pp) return total;  // Megatron-LM: all-warm-up when m == p
  return std::min(total, 2 * (pp - stage - 1) + (v - 1) * pp);
}

std::vector<ScheduleItem> interleaved_stage(int pp, int stage, int m, int v) {
  const int total = m * v;
  // Virtual micro-batch k: groups of p micro-batches sweep the chunks in order
  // (forward) or in reverse (backward), as Megatron-LM's get_model_chunk_id.
  auto mb_of = [&](int k) { return (k / (pp * v)) * pp + k % pp; };
  auto fchunk = [&](int k) { return (k / pp) % v; };
  auto bchunk = [&](int k) { return v - 1 - (k / pp) % v; };
  const int w = interleaved_warmup(pp, stage, m, v);
  std::vector<ScheduleItem> out;
  for (int k = 0; k < w; ++k) out.push_back(F(mb_of(k), fchunk(k)));
  for (int k = 0; k < total - w; ++k) {
    out.push_back(F(mb_of(k + w), fchunk(k + w)));
    out.push_back(B(mb_of(k), bchunk(k)));
  }
  for (int k = total - w; k < total; ++k) out.push_back(B(mb_of(k), bchunk(k)));
  return out;
}

std::vector<ScheduleItem> zb_h1_stage(int pp, int stage, int m) {
  const int w = one_f_one_b_warmup(pp, stage, m);
  // Stage s may defer s Ws: with 1F1B's p−s warm-up activations that keeps every
  // stage at <= p held activations, and lets later stages run B back to back so the
  // last micro-batches' gradients reach stage 0 without waiting behind Ws.
  const std::size_t keep = static_cast<std::size_t>(stage);
  std::vector<ScheduleItem> out;
  std::deque<int> pending;  // micro-batches whose W is not yet emitted, oldest first
  auto emit_w = [&] {
    out.push_back({ItemKind::backward_weight, pending.front(), 0});
    pending.pop_front();
  };
  auto emit_b = [&](int mb) {
    out.push_back({ItemKind::backward_input, mb, 0});
    pending.push_back(mb);
  };
  for (int i = 0; i < w; ++i) out.push_back(F(i));
  for (int i = 0; i < m - w; ++i) {
    out.push_back(F(w + i));
    emit_b(i);
    while (pending.size() > keep) emit_w();
  }
  // Cool-down: the next B arrives one B-time after this one upstream would have
  // needed it; a W of the same length fills exactly that gap.
  for (int i = m - w; i < m; ++i) {
    emit_b(i);
    if (!pending.empty()) emit_w();
  }
  while (!pending.empty()) emit_w();
  return out;
}

/// The zb-2p replay (schedule.hpp): unit-time F, B and W, free communication, at most
/// `budget` micro-batches holding activations per stage. Returns each stage's order and
/// the makespan in units. O(T · p) for T ≤ 3m + 2p steps... plus the oldest-first scans,
/// O(p · m) per step at worst.
struct UnitReplay {
  std::vector<std::vector<ScheduleItem>> order;
  int makespan = 0;
};

UnitReplay zero_bubble_replay(int pp, int m, int budget) {
  constexpr int kNotYet = -1;
  // done[s][mb]: the step at whose end the item finished on stage s (kNotYet: not yet).
  std::vector<std::vector<int>> f_done(static_cast<std::size_t>(pp), std::vector<int>(static_cast<std::size_t>(m), kNotYet));
  auto b_done = f_done;
  std::vector<int> next_f(static_cast<std::size_t>(pp), 0), next_b(static_cast<std::size_t>(pp), 0), held(static_cast<std::size_t>(pp), 0);
  std::vector<std::deque<int>> pending_w(static_cast<std::size_t>(pp));
  std::vector<int> left(static_cast<std::size_t>(pp), 3 * m);
  UnitReplay r;
  r.order.resize(static_cast<std::size_t>(pp));
  int remaining = 3 * m * pp;
  const auto arrived = [](int done, int t) { return done != kNotYet && done < t; };
  for (int t = 0; remaining > 0; ++t) {
    if (t > 6 * (m + pp) + 16) throw std::logic_error("zb-2p replay made no progress (a bug)");
    for (int s = 0; s < pp; ++s) {
      const auto st = static_cast<std::size_t>(s);
      auto& order = r.order[st];
      // Backwards run in micro-batch order on every stage (the gradients arrive so).
      const int b = next_b[st];
      const bool b_ready = b < m && arrived(f_done[st][static_cast<std::size_t>(b)], t) &&
                           (s == pp - 1 || arrived(b_done[st + 1][static_cast<std::size_t>(b)], t));
      const int f = next_f[st];
      const bool f_ready = f < m && held[st] < budget && (s == 0 || arrived(f_done[st - 1][static_cast<std::size_t>(f)], t));
      if (b_ready) {
        order.push_back({ItemKind::backward_input, b, 0});
        b_done[st][static_cast<std::size_t>(b)] = t;
        pending_w[st].push_back(b);
        ++next_b[st];
      } else if (f_ready) {
        order.push_back({ItemKind::forward, f, 0});
        f_done[st][static_cast<std::size_t>(f)] = t;
        ++held[st];
        ++next_f[st];
      } else if (!pending_w[st].empty()) {
        order.push_back({ItemKind::backward_weight, pending_w[st].front(), 0});
        pending_w[st].pop_front();
        --held[st];
      } else {
        continue;  // idle
      }
      --remaining;
      r.makespan = t + 1;
    }
  }
  return r;
}

/// The zb-v replay (schedule.hpp): unit-time F, B and W per chunk, free communication,
/// V-placed chunks, at most `budget` micro-batches in flight per stage (chunk 0's
/// forward done, its W not). O(T · p) steps of O(1) choices plus the W queues.
UnitReplay zero_bubble_v_replay(int pp, int m, int budget) {
  constexpr int kNotYet = -1;
  const auto P = static_cast<std::size_t>(pp), M = static_cast<std::size_t>(m);
  // done[chunk][stage][mb]: the step at whose end the item finished (kNotYet: not yet).
  using Grid = std::vector<std::vector<int>>;
  std::array<Grid, 2> f_done{Grid(P, std::vector<int>(M, kNotYet)), Grid(P, std::vector<int>(M, kNotYet))};
  std::array<Grid, 2> b_done = f_done;
  std::array<std::vector<int>, 2> next_f{std::vector<int>(P, 0), std::vector<int>(P, 0)};
  std::array<std::vector<int>, 2> next_b = next_f;
  std::vector<int> in_flight(P, 0);
  std::vector<std::deque<std::pair<int, int>>> pending_w(P);  // (mb, chunk), in B order
  UnitReplay r;
  r.order.resize(P);
  int remaining = 6 * m * pp;
  const auto arrived = [](int done, int t) { return done != kNotYet && done < t; };
  for (int t = 0; remaining > 0; ++t) {
    if (t > 12 * (m + pp) + 16) throw std::logic_error("zb-v replay made no progress (a bug)");
    for (int s = 0; s < pp; ++s) {
      const auto st = static_cast<std::size_t>(s);
      auto& order = r.order[st];
      // What each chunk's next backward and forward wait for (the V's edges).
      const auto b_ready = [&](int c) {
        const int b = next_b[static_cast<std::size_t>(c)][st];
        if (b >= m || !arrived(f_done[static_cast<std::size_t>(c)][st][static_cast<std::size_t>(b)], t)) return false;
        const auto mb = static_cast<std::size_t>(b);
        if (c == 1) return s == 0 ? true : arrived(b_done[1][st - 1][mb], t);
        return s == pp - 1 ? arrived(b_done[1][st][mb], t) : arrived(b_done[0][st + 1][mb], t);
      };
      const auto f_ready = [&](int c) {
        const int f = next_f[static_cast<std::size_t>(c)][st];
        if (f >= m) return false;
        const auto mb = static_cast<std::size_t>(f);
        if (c == 1) return s == pp - 1 ? arrived(f_done[0][st][mb], t) : arrived(f_done[1][st + 1][mb], t);
        return in_flight[st] < budget && (s == 0 || arrived(f_done[0][st - 1][mb], t));
      };
      int kind = -1, chunk = 0;  // 0: B, 1: F, 2: W
      const bool b1 = b_ready(1), b0 = b_ready(0);
      if (b1 || b0) {
        kind = 0;
        chunk = b1 && (!b0 || next_b[1][st] <= next_b[0][st]) ? 1 : 0;
      } else if (f_ready(1)) {
        kind = 1, chunk = 1;
      } else if (f_ready(0)) {
        kind = 1, chunk = 0;
      } else if (!pending_w[st].empty()) {
        kind = 2;
      } else {
        continue;  // idle
      }
      const auto c = static_cast<std::size_t>(chunk);
      if (kind == 0) {
        const int mb = next_b[c][st]++;
        order.push_back({ItemKind::backward_input, mb, chunk});
        b_done[c][st][static_cast<std::size_t>(mb)] = t;
        pending_w[st].emplace_back(mb, chunk);
      } else if (kind == 1) {
        const int mb = next_f[c][st]++;
        order.push_back({ItemKind::forward, mb, chunk});
        f_done[c][st][static_cast<std::size_t>(mb)] = t;
        if (chunk == 0) ++in_flight[st];
      } else {
        const auto [mb, wc] = pending_w[st].front();
        pending_w[st].pop_front();
        order.push_back({ItemKind::backward_weight, mb, wc});
        if (wc == 0) --in_flight[st];
      }
      --remaining;
      r.makespan = t + 1;
    }
  }
  return r;
}

/// One stage's DualPipe order (schedule.hpp). "near" is the chunk whose pipeline this
/// stage sits in the first half of; every backward either defers its W to the FIFO
/// (split) or is followed by it.
std::vector<ScheduleItem> dualpipe_stage(int pp, int stage, int m) {
  const int half = pp / 2, h = std::min(stage, pp - 1 - stage), per_direction = m / 2;
  const int near = stage < half ? 0 : 1, far = 1 - near;
  const bool middle = h == half - 1;
  std::array<int, 2> next_f{0, 0}, next_b{0, 0};
  std::deque<std::pair<int, int>> deferred;  // (mb, chunk) of split backwards, oldest first
  std::vector<ScheduleItem> out;
  auto f = [&](int c, bool overlapped = false) {
    out.push_back({ItemKind::forward, next_f[static_cast<std::size_t>(c)]++, c, overlapped});
  };
  auto b = [&](int c, bool split) {
    const int mb = next_b[static_cast<std::size_t>(c)]++;
    out.push_back({ItemKind::backward_input, mb, c});
    if (split) deferred.emplace_back(mb, c);
    else out.push_back({ItemKind::backward_weight, mb, c});
  };
  auto w = [&] {
    out.push_back({ItemKind::backward_weight, deferred.front().first, deferred.front().second});
    deferred.pop_front();
  };
  for (int i = 0; i < 2 * (half - h - 1); ++i) f(near);
  for (int i = 0; i < h + 1; ++i) f(near), f(far);
  for (int i = 0; i < half - h - 1; ++i) b(far, true), w(), f(far);
  for (int i = 0; i < per_direction - pp + h + 1; ++i) {
    // The middle stages run their first pair apart: the far backward waits for the
    // forward that has just turned at the pipeline's end.
    f(near, !(i == 0 && middle)), b(far, false);
    f(far, true), b(near, false);
  }
  for (int i = 0; i < half - h - 1; ++i) b(far, false), f(far, true), b(near, false);
  bool split = false;
  for (int i = 0; i < h + 1; ++i) {
    // From the middle of these on, the backwards split (their Ws fill the drain).
    if (i == (h + 1) / 2 && h % 2 == 1) split = true;
    b(far, split);
    if (i == (h + 1) / 2 && h % 2 == 0) split = true;
    b(near, split);
  }
  for (int i = 0; i < half - h - 1; ++i) w(), b(near, true);
  while (!deferred.empty()) w();
  return out;
}

}  // namespace

int model_chunk_count(Schedule schedule, int pp, int virtual_stages) {
  return schedule == Schedule::dualpipe ? pp : pp * std::max(1, virtual_stages);
}

int model_chunk_of(Schedule schedule, int pp, int stage, int chunk) {
  if (schedule == Schedule::zb_v) return chunk == 0 ? stage : 2 * pp - 1 - stage;
  if (schedule == Schedule::dualpipe) return chunk == 0 ? stage : pp - 1 - stage;
  return chunk * pp + stage;
}

std::pair<int, int> place_model_chunk(Schedule schedule, int pp, int mc, int copy) {
  if (schedule == Schedule::zb_v) return mc < pp ? std::pair{mc, 0} : std::pair{2 * pp - 1 - mc, 1};
  if (schedule == Schedule::dualpipe) return copy == 0 ? std::pair{mc, 0} : std::pair{pp - 1 - mc, 1};
  return {mc % pp, mc / pp};
}

std::vector<std::vector<ScheduleItem>> build_schedule(Schedule schedule, int pp, int microbatches, int virtual_stages) {
  check(schedule, pp, microbatches, virtual_stages);
  if (schedule == Schedule::zb_2p) return zero_bubble_replay(pp, microbatches, 2 * pp).order;
  if (schedule == Schedule::zb_v) return zero_bubble_v_replay(pp, microbatches, pp).order;
  std::vector<std::vector<ScheduleItem>> out;
  if (schedule == Schedule::dualpipe) {
    for (int s = 0; s < pp; ++s) out.push_back(dualpipe_stage(pp, s, microbatches));
    return out;
  }
  out.reserve(static_cast<std::size_t>(pp));
  for (int s = 0; s < pp; ++s) {
    switch (schedule) {
      case Schedule::gpipe: out.push_back(gpipe_stage(microbatches)); break;
      case Schedule::one_f_one_b: out.push_back(one_f_one_b_stage(pp, s, microbatches)); break;
      case Schedule::interleaved_1f1b: out.push_back(interleaved_stage(pp, s, microbatches, virtual_stages)); break;
      case Schedule::zb_h1: out.push_back(zb_h1_stage(pp, s, microbatches)); break;
      case Schedule::zb_2p:
      case Schedule::zb_v:
      case Schedule::dualpipe: break;  // built above
    }
  }
  return out;
}

double analytic_bubble(Schedule schedule, int pp, int microbatches, int virtual_stages) {
  check(schedule, pp, microbatches, virtual_stages);
  const double p = pp, m = microbatches, v = virtual_stages;
  switch (schedule) {
    case Schedule::gpipe:
    case Schedule::one_f_one_b: return (p - 1) / (m + p - 1);
    case Schedule::interleaved_1f1b: return (p - 1) / (v * m + p - 1);
    case Schedule::zb_h1: {
      // m >= p: Qi et al.'s (p−1)·T over 3m + p − 1. m < p: too few Ws to fill the
      // cool-down; this schedule's window is then 2(m+p) − 1 (measured exactly by
      // test_schedule's executor), i.e. p − m more idle units.
      const double extra = std::max(0.0, p - m);
      return (p - 1 + extra) / (3 * m + p - 1 + extra);
    }
    case Schedule::zb_2p: {
      const double T = zero_bubble_replay(pp, microbatches, 2 * pp).makespan;
      return (T - 3 * m) / T;
    }
    case Schedule::zb_v: {
      const double T = zero_bubble_v_replay(pp, microbatches, pp).makespan;
      return (T - 6 * m) / T;
    }
    case Schedule::dualpipe: {
      // The README's (p/2 − 1)(F&B + B − 3W) with F = W = 1, B = 2, F&B = 3, over a
      // stage's m chunk passes of F + B = 3 units each plus that idle time.
      const double idle = (p / 2 - 1) * 2;
      return idle / (3 * m + idle);
    }
  }
  return 0;
}

std::string_view analytic_bubble_formula(Schedule schedule, int pp, int microbatches) {
  switch (schedule) {
    case Schedule::gpipe:
    case Schedule::one_f_one_b: return "(p-1)/(m+p-1)";
    case Schedule::interleaved_1f1b: return "(p-1)/(v*m+p-1)";
    case Schedule::zb_h1: return microbatches >= pp ? "(p-1)/(3m+p-1)" : "(2p-m-1)/(2m+2p-1)";
    case Schedule::zb_2p: return "(T-3m)/T, T the unit-time replay's makespan";
    case Schedule::zb_v: return "(T-6m)/T, T the unit-time replay's makespan in chunk passes";
    case Schedule::dualpipe: return "(p-2)/(3m+p-2)";
  }
  return "";
}

int max_inflight_microbatches(Schedule schedule, int pp, int stage, int microbatches, int virtual_stages) {
  check(schedule, pp, microbatches, virtual_stages);
  if (stage < 0 || stage >= pp) throw std::out_of_range(fmt::format("stage {} outside 0..{}", stage, pp - 1));
  switch (schedule) {
    case Schedule::gpipe: return microbatches;
    case Schedule::one_f_one_b:
    case Schedule::zb_h1: return std::min(microbatches, pp - stage);
    case Schedule::interleaved_1f1b: {
      const int total = microbatches * virtual_stages;
      const int w = interleaved_warmup(pp, stage, microbatches, virtual_stages);
      return w >= total ? total : w + 1;
    }
    case Schedule::zb_2p:
    case Schedule::zb_v:
    case Schedule::dualpipe: {
      // As for zb-h1, the B-input releases them (the budget of the replay counts to W).
      int held = 0, most = 0;
      const std::vector<ScheduleItem> order = schedule == Schedule::dualpipe ? dualpipe_stage(pp, stage, microbatches)
                                              : schedule == Schedule::zb_v
                                                  ? zero_bubble_v_replay(pp, microbatches, pp).order[static_cast<std::size_t>(stage)]
                                                  : zero_bubble_replay(pp, microbatches, 2 * pp).order[static_cast<std::size_t>(stage)];
      for (const ScheduleItem& it : order) {
        held += it.kind == ItemKind::forward ? 1 : it.kind == ItemKind::backward_input ? -1 : 0;
        most = std::max(most, held);
      }
      return most;
    }
  }
  return microbatches;
}

const char* item_kind_name(ItemKind k) {
  switch (k) {
    case ItemKind::forward: return "F";
    case ItemKind::backward: return "B";
    case ItemKind::backward_input: return "Bi";
    case ItemKind::backward_weight: return "W";
  }
  return "?";
}

const char* schedule_name(Schedule s) {
  return name_of(kScheduleNames, s).data();  // the table's literals are NUL-terminated
}

std::optional<Schedule> schedule_from_name(std::string_view name) { return from_name(kScheduleNames, name); }

int microbatches_for_bubble(Schedule s, int pp, int m, int v, double target) {
  const int step = s == Schedule::interleaved_1f1b ? pp : s == Schedule::dualpipe ? 2 : 1;
  // The bubble falls monotonically in m; 2^20 bounds the search for absurd targets.
  while (m < (1 << 20) && analytic_bubble(s, pp, m, v) > target) m += step;
  return m;
}

}  // namespace ls::wl
