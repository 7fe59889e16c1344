// tests/test_schedule.cpp — pipeline schedules: completeness, order, in-flight counts,
// and a symbolic executor that runs every schedule against the pipeline's data
// dependencies (no deadlock) and measures the bubble with unit-time work.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "workloads/model/schedule.hpp"

using namespace ls::wl;

namespace {

const Schedule kAll[] = {Schedule::gpipe, Schedule::one_f_one_b, Schedule::interleaved_1f1b, Schedule::zb_h1, Schedule::zb_2p,
                         Schedule::zb_v};

// Loops copy p and m into plain locals: Clang 14 (the fuzz/sanitizer build) cannot
// capture a structured binding in CAPTURE's lambda.
struct Grid { int p, m; };
const Grid kGrid[] = {{2, 8}, {4, 8}, {4, 32}, {8, 8}, {8, 64}};

int v_for(Schedule s) { return s == Schedule::interleaved_1f1b || s == Schedule::zb_v ? 2 : 1; }

bool is_backward(ItemKind k) { return k == ItemKind::backward || k == ItemKind::backward_input; }

/// Result of executing a schedule with integer unit times and free communication.
struct Run {
  bool deadlock = false;
  long long window = 0;                 // first start to last finish, whole pipeline
  std::vector<long long> busy;          // per stage
};

/// Where each chunk's data goes next (schedule.hpp): down the stages chunk after chunk,
/// in zb-v's V, or in dualpipe's two directions.
enum class Shape { chain, v, dual };

/// As-soon-as-possible execution: a stage runs its items in order; an item starts
/// when the stage is free and its cross-stage dependency (schedule.hpp) has finished.
/// Durations: F = tf, B = tb (whole backward) or B-input = tbi, W = tw. An overlapped
/// forward runs with the backward and W after it as one block of their summed time whose
/// outputs leave when the block ends (as DualPipe's reference implementation sends them).
Run execute(const std::vector<std::vector<ScheduleItem>>& sched, int v, long long tf, long long tb, long long tbi, long long tw,
            Shape shape = Shape::chain) {
  const int p = static_cast<int>(sched.size());
  // finish[(stage, kind class, mb, chunk)]; kind class 0 = F, 1 = B/Bi, 2 = W
  std::map<std::tuple<int, int, int, int>, long long> finish;
  std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
  std::vector<long long> free_at(static_cast<std::size_t>(p), 0);
  Run r;
  r.busy.assign(static_cast<std::size_t>(p), 0);
  long long first = -1, last = 0;
  std::size_t remaining = 0;
  for (auto& s : sched) remaining += s.size();
  while (remaining > 0) {
    bool progress = false;
    for (int s = 0; s < p; ++s) {
      auto& n = next[static_cast<std::size_t>(s)];
      if (n >= sched[static_cast<std::size_t>(s)].size()) continue;
      const ScheduleItem it = sched[static_cast<std::size_t>(s)][n];
      // The dependency, if any: (stage, class, mb, chunk).
      std::tuple<int, int, int, int> dep{-1, 0, 0, 0};
      long long dur = 0;
      int cls = 0;
      if (shape == Shape::dual && it.kind != ItemKind::backward_weight) {
        // Chunk 0 runs down the stages, chunk 1 up; the loss at each one's far end.
        const int c = it.chunk, mb = it.microbatch;
        if (it.kind == ItemKind::forward) {
          dur = tf;
          if (c == 0 && s > 0) dep = {s - 1, 0, mb, 0};
          if (c == 1 && s < p - 1) dep = {s + 1, 0, mb, 1};
        } else {
          cls = 1;
          dur = tbi;
          const bool loss = (c == 0 && s == p - 1) || (c == 1 && s == 0);
          dep = loss ? std::tuple{s, 0, mb, c} : std::tuple{c == 0 ? s + 1 : s - 1, 1, mb, c};
        }
      } else if (shape == Shape::v && it.kind != ItemKind::backward_weight) {
        // zb-v's V (schedule.hpp): chunk 0 runs down the stages, chunk 1 back up.
        const int c = it.chunk;
        if (it.kind == ItemKind::forward) {
          dur = tf;
          if (c == 0 && s > 0) dep = {s - 1, 0, it.microbatch, 0};
          else if (c == 1) dep = s == p - 1 ? std::tuple{s, 0, it.microbatch, 0} : std::tuple{s + 1, 0, it.microbatch, 1};
        } else {
          cls = 1;
          dur = tbi;
          if (c == 1) dep = s == 0 ? std::tuple{s, 0, it.microbatch, 1} : std::tuple{s - 1, 1, it.microbatch, 1};
          else dep = s == p - 1 ? std::tuple{s, 1, it.microbatch, 1} : std::tuple{s + 1, 1, it.microbatch, 0};
        }
      } else if (it.kind == ItemKind::forward) {
        dur = tf;
        if (s > 0) dep = {s - 1, 0, it.microbatch, it.chunk};
        else if (it.chunk > 0) dep = {p - 1, 0, it.microbatch, it.chunk - 1};
      } else if (is_backward(it.kind)) {
        cls = 1;
        dur = it.kind == ItemKind::backward ? tb : tbi;
        if (s < p - 1) dep = {s + 1, 1, it.microbatch, it.chunk};
        else if (it.chunk < v - 1) dep = {0, 1, it.microbatch, it.chunk + 1};
        else dep = {s, 0, it.microbatch, it.chunk};  // own forward (loss)
      } else {
        cls = 2;
        dur = tw;
        dep = {s, 1, it.microbatch, it.chunk};
      }
      long long ready = free_at[static_cast<std::size_t>(s)];
      if (std::get<0>(dep) >= 0) {
        auto f = finish.find(dep);
        if (f == finish.end()) continue;  // not yet produced
        ready = std::max(ready, f->second);
      }
      if (it.overlapped) {
        // The pair: its backward's input gradient must have arrived too (dualpipe's rule).
        const ScheduleItem bi = sched[static_cast<std::size_t>(s)][n + 1];
        const bool loss = (bi.chunk == 0 && s == p - 1) || (bi.chunk == 1 && s == 0);
        const auto bdep = loss ? std::tuple{s, 0, bi.microbatch, bi.chunk}
                               : std::tuple{bi.chunk == 0 ? s + 1 : s - 1, 1, bi.microbatch, bi.chunk};
        const auto f = finish.find(bdep);
        if (f == finish.end()) continue;
        ready = std::max(ready, f->second);
        const long long end = ready + tf + tbi + tw;
        for (int k = 0; k < 3; ++k) {
          const ScheduleItem x = sched[static_cast<std::size_t>(s)][n + static_cast<std::size_t>(k)];
          finish[{s, k, x.microbatch, x.chunk}] = end;
        }
        free_at[static_cast<std::size_t>(s)] = end;
        r.busy[static_cast<std::size_t>(s)] += tf + tbi + tw;
        if (first < 0 || ready < first) first = ready;
        last = std::max(last, end);
        n += 3;
        remaining -= 3;
        progress = true;
        continue;
      }
      const long long end = ready + dur;
      finish[{s, cls, it.microbatch, it.chunk}] = end;
      free_at[static_cast<std::size_t>(s)] = end;
      r.busy[static_cast<std::size_t>(s)] += dur;
      if (first < 0 || ready < first) first = ready;
      last = std::max(last, end);
      ++n;
      --remaining;
      progress = true;
    }
    if (!progress) {
      r.deadlock = true;
      return r;
    }
  }
  r.window = last - first;
  return r;
}

}  // namespace

TEST_CASE("every schedule runs F and B of every (micro-batch, chunk) exactly once per stage, F before B") {
  for (Schedule sch : kAll) {
    for (const Grid& grid : kGrid) {
      const int p = grid.p, m = grid.m;
      const int v = v_for(sch);
      CAPTURE(static_cast<int>(sch));
      CAPTURE(p);
      CAPTURE(m);
      const auto sched = build_schedule(sch, p, m, v);
      REQUIRE(sched.size() == static_cast<std::size_t>(p));
      for (int s = 0; s < p; ++s) {
        std::map<std::tuple<int, int, int>, int> pos;  // (kind, mb, chunk) -> index
        const auto& items = sched[static_cast<std::size_t>(s)];
        for (std::size_t i = 0; i < items.size(); ++i) {
          const auto key = std::tuple{static_cast<int>(items[i].kind), items[i].microbatch, items[i].chunk};
          CHECK(pos.count(key) == 0);
          pos[key] = static_cast<int>(i);
        }
        const bool zb = splits_backward(sch);
        CHECK(items.size() == static_cast<std::size_t>(m * v * (zb ? 3 : 2)));
        for (int mb = 0; mb < m; ++mb) {
          for (int c = 0; c < v; ++c) {
            const auto f = pos.find({static_cast<int>(ItemKind::forward), mb, c});
            REQUIRE(f != pos.end());
            if (zb) {
              const auto bi = pos.find({static_cast<int>(ItemKind::backward_input), mb, c});
              const auto w = pos.find({static_cast<int>(ItemKind::backward_weight), mb, c});
              REQUIRE(bi != pos.end());
              REQUIRE(w != pos.end());
              CHECK(f->second < bi->second);
              CHECK(bi->second < w->second);
            } else {
              const auto b = pos.find({static_cast<int>(ItemKind::backward), mb, c});
              REQUIRE(b != pos.end());
              CHECK(f->second < b->second);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("in-flight micro-batches follow the closed forms (1F1B never above p - stage)") {
  for (Schedule sch : kAll) {
    for (const Grid& grid : kGrid) {
      const int p = grid.p, m = grid.m;
      const int v = v_for(sch);
      const auto sched = build_schedule(sch, p, m, v);
      for (int s = 0; s < p; ++s) {
        int inflight = 0, peak = 0;
        for (const auto& it : sched[static_cast<std::size_t>(s)]) {
          if (it.kind == ItemKind::forward) peak = std::max(peak, ++inflight);
          else if (is_backward(it.kind)) --inflight;
        }
        CAPTURE(static_cast<int>(sch));
        CAPTURE(p);
        CAPTURE(m);
        CAPTURE(s);
        CHECK(inflight == 0);
        CHECK(peak == max_inflight_microbatches(sch, p, s, m, v));
        if (sch == Schedule::one_f_one_b || sch == Schedule::zb_h1) CHECK(peak <= p - s);
        if (sch == Schedule::gpipe) CHECK(peak == m);
        if (splits_backward(sch)) {
          // Activations are held until W: never more than p (1F1B's stage-0 peak) under
          // zb-h1, never more than its 2p budget under zb-2p.
          int held = 0, held_peak = 0;
          for (const auto& it : sched[static_cast<std::size_t>(s)]) {
            if (it.kind == ItemKind::forward) held_peak = std::max(held_peak, ++held);
            else if (it.kind == ItemKind::backward_weight) --held;
          }
          CHECK(held_peak <= (sch == Schedule::zb_h1 ? p : 2 * p));
        }
      }
    }
  }
  // Megatron-LM interleaving, stage 0 of p = 4, v = 2, m = 8: warm-up 2·3 + 1·4 = 10, +1.
  CHECK(max_inflight_microbatches(Schedule::interleaved_1f1b, 4, 0, 8, 2) == 11);
  CHECK(max_inflight_microbatches(Schedule::interleaved_1f1b, 4, 3, 8, 2) == 5);
  // m == p: Megatron runs every forward first.
  CHECK(max_inflight_microbatches(Schedule::interleaved_1f1b, 4, 3, 4, 2) == 8);
}

TEST_CASE("1F1B order is warm-up, steady 1F1B, cool-down (PipeDream-Flush)") {
  const auto s = build_schedule(Schedule::one_f_one_b, 4, 6, 1);
  // Stage 1 of 4: warm-up 2 forwards.
  const std::vector<ScheduleItem> want{
      {ItemKind::forward, 0, 0},  {ItemKind::forward, 1, 0},  {ItemKind::forward, 2, 0},  {ItemKind::backward, 0, 0},
      {ItemKind::forward, 3, 0},  {ItemKind::backward, 1, 0}, {ItemKind::forward, 4, 0},  {ItemKind::backward, 2, 0},
      {ItemKind::forward, 5, 0},  {ItemKind::backward, 3, 0}, {ItemKind::backward, 4, 0}, {ItemKind::backward, 5, 0}};
  CHECK(s[1] == want);
}

TEST_CASE("interleaved order follows Megatron-LM's chunk sweep") {
  // p = 2, v = 2, m = 4: virtual micro-batch k -> mb (k/4)·2 + k%2, forward chunk (k/2)%2.
  const auto s = build_schedule(Schedule::interleaved_1f1b, 2, 4, 2);
  // Stage 1: warm-up 2·0 + 1·2 = 2 forwards: F(0,c0) F(1,c0); then F(0,c1) B(0,c1) ...
  const auto& st = s[1];
  REQUIRE(st.size() == 16);
  CHECK(st[0] == ScheduleItem{ItemKind::forward, 0, 0});
  CHECK(st[1] == ScheduleItem{ItemKind::forward, 1, 0});
  CHECK(st[2] == ScheduleItem{ItemKind::forward, 0, 1});
  CHECK(st[3] == ScheduleItem{ItemKind::backward, 0, 1});
  CHECK(st[4] == ScheduleItem{ItemKind::forward, 1, 1});
  CHECK(st[5] == ScheduleItem{ItemKind::backward, 1, 1});
  CHECK(st[6] == ScheduleItem{ItemKind::forward, 2, 0});
  CHECK(st[7] == ScheduleItem{ItemKind::backward, 0, 0});
}

TEST_CASE("no schedule deadlocks, and unit-time execution reproduces the analytic bubble") {
  // Equal stages, free communication. F = 1, B = 2 (backward is 2× forward): every
  // stage is idle (p−1)(F+B) of a window (m+p−1)(F+B) under GPipe and 1F1B, so the
  // bubble is (p−1)/(m+p−1) exactly; interleaving with per-chunk F = 1, B = 2 shrinks
  // the idle time v-fold: (p−1)/(v·m+p−1). zb-h1 with F = B-input = W = 1 (Qi et
  // al.'s T_F = T_B = T_W) idles (p−1) of 3m + p − 1. Integer times: exact equality.
  for (Schedule sch : kAll) {
    for (const Grid& grid : kGrid) {
      const int p = grid.p, m = grid.m;
      for (int v : sch == Schedule::interleaved_1f1b ? std::vector<int>{2, 4} : std::vector<int>{v_for(sch)}) {
        CAPTURE(static_cast<int>(sch));
        CAPTURE(p);
        CAPTURE(m);
        CAPTURE(v);
        const auto sched = build_schedule(sch, p, m, v);
        const Run r = splits_backward(sch) ? execute(sched, v, 1, 0, 1, 1, sch == Schedule::zb_v ? Shape::v : Shape::chain) : execute(sched, v, 1, 2, 0, 0);
        REQUIRE_FALSE(r.deadlock);
        const double want = analytic_bubble(sch, p, m, v);
        for (int s = 0; s < p; ++s) {
          CAPTURE(s);
          const double bubble = 1.0 - static_cast<double>(r.busy[static_cast<std::size_t>(s)]) / static_cast<double>(r.window);
          CHECK(bubble == doctest::Approx(want).epsilon(1e-12));
        }
      }
    }
  }
}

TEST_CASE("fewer micro-batches than stages still runs, with the same closed forms") {
  // m < p: 1F1B's warm-up is capped at m; the window is still (m+p−1)(F+B).
  for (Schedule sch : {Schedule::gpipe, Schedule::one_f_one_b, Schedule::zb_h1, Schedule::zb_2p}) {
    for (const Grid& grid : {Grid{8, 4}, Grid{4, 1}, Grid{1, 4}}) {
      const int p = grid.p, m = grid.m;
      CAPTURE(static_cast<int>(sch));
      CAPTURE(p);
      CAPTURE(m);
      const auto sched = build_schedule(sch, p, m, 1);
      const Run r = splits_backward(sch) ? execute(sched, 1, 1, 0, 1, 1) : execute(sched, 1, 1, 2, 0, 0);
      REQUIRE_FALSE(r.deadlock);
      for (int s = 0; s < p; ++s)
        CHECK(1.0 - static_cast<double>(r.busy[static_cast<std::size_t>(s)]) / static_cast<double>(r.window) ==
              doctest::Approx(analytic_bubble(sch, p, m, 1)).epsilon(1e-12));
    }
  }
}

TEST_CASE("zb-2p: never behind zb-h1, ahead of it when W is shorter than B, with up to 2p activations") {
  // With F = B-input = W = 1 both zero-bubble schedules leave only the pipeline's fill
  // and drain, (p − 1) of 3m + p − 1 units: the step here ends with the optimizer, so
  // the fill cannot overlap the previous step (Qi et al.'s post-validation, which lets
  // it, is not modelled). With W shorter than B (F = B-input = 2, W = 1), zb-h1's Ws
  // no longer fill its bubbles and zb-2p's extra warm-up forwards do.
  for (const Grid& grid : {Grid{4, 8}, Grid{4, 32}, Grid{8, 16}, Grid{8, 64}}) {
    const int p = grid.p, m = grid.m;
    CAPTURE(p);
    CAPTURE(m);
    CHECK(analytic_bubble(Schedule::zb_2p, p, m, 1) == doctest::Approx((p - 1.0) / (3.0 * m + p - 1)).epsilon(1e-12));
    const Run h1 = execute(build_schedule(Schedule::zb_h1, p, m, 1), 1, 2, 0, 2, 1);
    const Run two = execute(build_schedule(Schedule::zb_2p, p, m, 1), 1, 2, 0, 2, 1);
    REQUIRE_FALSE(two.deadlock);
    CHECK(two.window < h1.window);
    int most = 0;
    for (int s = 0; s < p; ++s) most = std::max(most, max_inflight_microbatches(Schedule::zb_2p, p, s, m, 1));
    CHECK(most > p);  // it spends the extra activations zb-h1 does not
    CHECK(most <= 2 * p);
  }
}

TEST_CASE("zb-v: below zb-h1's bubble at zb-h1's activation memory, the V's turns on the same stages") {
  // Per chunk F = B-input = W = 1 (a stage's whole F, B, W = 2 each): zb-h1 idles (p − 1)
  // whole-stage units, i.e. 2(p − 1) chunk units of a 6m + 2(p − 1) window; the V turns
  // the forward at stage p − 1 and takes the loss on stage 0, so its fill and drain
  // idle less. Activations (chunk units) never exceed 1F1B's 2p on any stage.
  for (const Grid& grid : {Grid{4, 8}, Grid{4, 32}, Grid{8, 16}, Grid{8, 64}}) {
    const int p = grid.p, m = grid.m;
    CAPTURE(p);
    CAPTURE(m);
    const auto sched = build_schedule(Schedule::zb_v, p, m, 2);
    const Run r = execute(sched, 2, 1, 0, 1, 1, Shape::v);
    REQUIRE_FALSE(r.deadlock);
    CHECK(analytic_bubble(Schedule::zb_v, p, m, 2) < analytic_bubble(Schedule::zb_h1, p, m, 1));
    for (int s = 0; s < p; ++s) {
      int held = 0, peak = 0;
      for (const auto& it : sched[static_cast<std::size_t>(s)]) {
        if (it.kind == ItemKind::forward) peak = std::max(peak, ++held);
        else if (it.kind == ItemKind::backward_weight) --held;
      }
      CHECK(peak <= 2 * p);
    }
  }
  CHECK(model_chunk_of(Schedule::zb_v, 4, 0, 1) == 7);  // stage 0 holds the first and the last chunk
  CHECK(model_chunk_of(Schedule::zb_v, 4, 3, 1) == 4);
  CHECK(place_model_chunk(Schedule::zb_v, 4, 4) == std::pair{3, 1});
  CHECK(place_model_chunk(Schedule::interleaved_1f1b, 4, 5) == std::pair{1, 1});
  CHECK_THROWS_AS(build_schedule(Schedule::zb_v, 4, 8, 1), std::invalid_argument);
}

TEST_CASE("analytic bubble closed forms") {
  CHECK(analytic_bubble(Schedule::gpipe, 4, 8, 1) == doctest::Approx(3.0 / 11));
  CHECK(analytic_bubble(Schedule::one_f_one_b, 8, 64, 1) == doctest::Approx(7.0 / 71));
  CHECK(analytic_bubble(Schedule::interleaved_1f1b, 8, 64, 4) == doctest::Approx(7.0 / 263));
  CHECK(analytic_bubble(Schedule::zb_h1, 4, 8, 1) == doctest::Approx(3.0 / 27));
  CHECK(analytic_bubble(Schedule::one_f_one_b, 1, 8, 1) == 0.0);
}

TEST_CASE("the formula printed beside the analytic bubble is the one evaluated") {
  CHECK(analytic_bubble_formula(Schedule::gpipe, 4, 8) == "(p-1)/(m+p-1)");
  CHECK(analytic_bubble_formula(Schedule::one_f_one_b, 4, 8) == "(p-1)/(m+p-1)");
  CHECK(analytic_bubble_formula(Schedule::interleaved_1f1b, 4, 8) == "(p-1)/(v*m+p-1)");
  // zb-h1 with m >= p: (p-1)/(3m+p-1) = 3/27 at p 4, m 8; with m < p the window grows:
  // (2p-m-1)/(2m+2p-1) = 5/11 at p 4, m 2.
  CHECK(analytic_bubble_formula(Schedule::zb_h1, 4, 8) == "(p-1)/(3m+p-1)");
  CHECK(analytic_bubble(Schedule::zb_h1, 4, 8, 1) == doctest::Approx(3.0 / 27));
  CHECK(analytic_bubble_formula(Schedule::zb_h1, 4, 2) == "(2p-m-1)/(2m+2p-1)");
  CHECK(analytic_bubble(Schedule::zb_h1, 4, 2, 1) == doctest::Approx(5.0 / 11));
}

TEST_CASE("bad arguments throw") {
  CHECK_THROWS_AS(build_schedule(Schedule::one_f_one_b, 0, 8, 1), std::invalid_argument);
  CHECK_THROWS_AS(build_schedule(Schedule::one_f_one_b, 4, 8, 2), std::invalid_argument);
  CHECK_THROWS_AS(build_schedule(Schedule::interleaved_1f1b, 4, 6, 2), std::invalid_argument);
  CHECK_THROWS_AS(max_inflight_microbatches(Schedule::gpipe, 4, 4, 8, 1), std::out_of_range);
  CHECK(std::string(item_kind_name(ItemKind::backward_weight)) == "W");
}


TEST_CASE("dualpipe: every pass once, no deadlock, and the README's bubble (p/2-1)(F&B+B-3W) at unit times") {
  for (const Grid& grid : {Grid{2, 4}, Grid{4, 8}, Grid{4, 20}, Grid{8, 16}, Grid{8, 20}, Grid{8, 64}, Grid{16, 60}}) {
    const int p = grid.p, m = grid.m;
    CAPTURE(p);
    CAPTURE(m);
    const auto sched = build_schedule(Schedule::dualpipe, p, m, 2);
    REQUIRE(sched.size() == static_cast<std::size_t>(p));
    for (int s = 0; s < p; ++s) {
      // m/2 micro-batches per chunk, each F, Bi and W once, F before Bi before W.
      std::map<std::tuple<int, int, int>, int> pos;
      const auto& items = sched[static_cast<std::size_t>(s)];
      CHECK(items.size() == static_cast<std::size_t>(3 * m));
      for (std::size_t i = 0; i < items.size(); ++i)
        CHECK(pos.emplace(std::tuple{static_cast<int>(items[i].kind), items[i].microbatch, items[i].chunk}, static_cast<int>(i)).second);
      for (int mb = 0; mb < m / 2; ++mb)
        for (int c = 0; c < 2; ++c) {
          const int f = pos.at({static_cast<int>(ItemKind::forward), mb, c});
          const int bi = pos.at({static_cast<int>(ItemKind::backward_input), mb, c});
          CHECK(f < bi);
          CHECK(bi < pos.at({static_cast<int>(ItemKind::backward_weight), mb, c}));
        }
      // An overlapped forward is followed by its partner, a whole backward (Bi, its W).
      for (std::size_t i = 0; i < items.size(); ++i)
        if (items[i].overlapped) {
          REQUIRE(i + 2 < items.size());
          CHECK(items[i].kind == ItemKind::forward);
          CHECK(items[i + 1].kind == ItemKind::backward_input);
          CHECK(items[i + 2].kind == ItemKind::backward_weight);
          CHECK(items[i + 2].microbatch == items[i + 1].microbatch);
          CHECK(items[i + 2].chunk == items[i + 1].chunk);
        }
      // Mirror stages run mirrored orders (chunks swapped).
      const auto& mirror = sched[static_cast<std::size_t>(p - 1 - s)];
      for (std::size_t i = 0; i < items.size(); ++i) {
        CHECK(mirror[i].kind == items[i].kind);
        CHECK(mirror[i].microbatch == items[i].microbatch);
        CHECK(mirror[i].chunk == 1 - items[i].chunk);
      }
    }
    // Unit times: the window is 3m + (p/2 − 1)·2 = 3m + p − 2, the README's bubble.
    const Run r = execute(sched, 2, 1, 0, 1, 1, Shape::dual);
    REQUIRE_FALSE(r.deadlock);
    CHECK(r.window == 3LL * m + p - 2);
    CHECK(analytic_bubble(Schedule::dualpipe, p, m, 2) == doctest::Approx((p - 2.0) / (3.0 * m + p - 2)).epsilon(1e-12));
  }
  // The activations held: the README's p + 1 on the busiest stage (chunks of L/p layers).
  for (int p : {4, 8, 16}) {
    int most = 0;
    for (int s = 0; s < p; ++s) most = std::max(most, max_inflight_microbatches(Schedule::dualpipe, p, s, 4 * p, 2));
    CHECK(most == p + 1);
  }
  CHECK(model_chunk_of(Schedule::dualpipe, 4, 0, 1) == 3);
  CHECK(place_model_chunk(Schedule::dualpipe, 4, 3, 1) == std::pair{0, 1});
  CHECK(place_model_chunk(Schedule::dualpipe, 4, 3, 0) == std::pair{3, 0});
  CHECK(model_chunk_count(Schedule::dualpipe, 4, 2) == 4);
  CHECK_THROWS_AS(build_schedule(Schedule::dualpipe, 3, 12, 2), std::invalid_argument);  // odd pp
  CHECK_THROWS_AS(build_schedule(Schedule::dualpipe, 4, 6, 2), std::invalid_argument);   // m < 2p
  CHECK_THROWS_AS(build_schedule(Schedule::dualpipe, 4, 9, 2), std::invalid_argument);   // odd m
  CHECK_THROWS_AS(build_schedule(Schedule::dualpipe, 4, 8, 1), std::invalid_argument);   // v != 2
}
