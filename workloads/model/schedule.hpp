// workloads/model/schedule.hpp — pipeline schedules as per-stage orders of work items, the
// analytic bubble, and the in-flight micro-batch count that sizes activation memory.
//
// A schedule is pure order: it says in which sequence a stage runs its forward and
// backward passes; timing and dependencies are the engine's. Every schedule here is
// deadlock-free under the pipeline's data dependencies (sends are buffered):
//   F(mb, c) on stage s needs F(mb, c) on s−1 (s > 0) or F(mb, c−1) on p−1 (s = 0, c > 0);
//   B(mb, c) on stage s needs B(mb, c) on s+1 (s < p−1) or B(mb, c+1) on stage 0
//   (s = p−1, c < v−1); W(mb, c) needs only B(mb, c) of its own stage.
// zb-v places its two chunks per stage in a V (place_model_chunk): chunk 0 runs down the
// stages, chunk 1 back up, so F(mb, 1) on stage s needs F(mb, 1) on s+1, or F(mb, 0) on
// the same stage p−1; B(mb, 1) on s needs B(mb, 1) on s−1 (stage 0: its own F, the loss);
// B(mb, 0) on s needs B(mb, 0) on s+1, or B(mb, 1) on the same stage p−1.
// dualpipe runs two copies of the model in opposite directions (place_model_chunk): chunk 0
// of stage s is model chunk s of the copy fed at stage 0, chunk 1 model chunk p−1−s of the
// copy fed at stage p−1, each a pipeline of its own; micro-batch k of chunk 1 is the k-th
// micro-batch fed from the far end. F(mb, 1) on s needs F(mb, 1) on s+1 (s < p−1); B(mb, 1)
// on s needs B(mb, 1) on s−1 (stage 0: its own F, the loss).
// tests/test_schedule.cpp executes every schedule against these rules.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

/// backward: the whole backward pass (input and weight gradients together);
/// backward_input / backward_weight: zb-h1's split (B and W in Qi et al. 2023).
enum class ItemKind { forward, backward, backward_input, backward_weight };

struct ScheduleItem {
  ItemKind kind = ItemKind::forward;
  int microbatch = 0;
  int chunk = 0;  // virtual stage index on this rank (0..v−1); model chunk: model_chunk_of
  /// A forward that runs overlapped with the backward after it (DualPipe's "F&B" chunk:
  /// each pass's communication beside the other's compute; the stage emitter interleaves them).
  bool overlapped = false;
  bool operator==(const ScheduleItem&) const = default;
};

/// Per stage (pp entries), the items in execution order. Every stage runs F and B
/// (or B-input and W) of every (micro-batch, chunk) exactly once.
///  * gpipe: all forwards 0..m−1, then all backwards in the same order 0..m−1
///    (Megatron-LM's non-pipelined order; the bubble is the same either way).
///  * 1f1b (PipeDream-Flush, Narayanan et al. 2021): min(p−s−1, m) warm-up forwards,
///    then F(w+i), B(i) pairs, then the cool-down backwards.
///  * interleaved-1f1b: Megatron-LM's forward_backward_pipelining_with_interleaving:
///    virtual micro-batch k (0..m·v−1) is micro-batch (k / (p·v))·p + k % p of
///    chunk (k / p) % v forward, v−1−(k / p) % v backward; warm-up
///    min(m·v, 2(p−s−1) + (v−1)·p) forwards (all of them when m == p), then 1F1B.
///    Requires m % p == 0.
///  * zb-h1 (Qi et al. 2023, "Zero Bubble Pipeline Parallelism", schedule ZB-H1):
///    1F1B's order with each backward split into B (input gradient, on the
///    critical path) and W (weight gradient, deferrable). Rule implemented: after
///    each B, stage s emits the oldest pending W while more than s Ws are pending
///    (stage 0 runs F B W in steady state, the last stage defers up to p−1 Ws, so
///    that its B for the last micro-batches reaches stage 0 sooner); in the
///    cool-down each B is followed by one pending W, which fills the wait for the
///    next B; the remaining Ws close the step. Warm-up is 1F1B's. Activations held
///    (F done, W not done) never exceed p on any stage — 1F1B's peak at stage 0,
///    Qi et al.'s memory budget for ZB-H1. With T_F = T_B = T_W and free
///    communication this reaches their bubble (p−1)·T exactly (test_schedule).
///  * zb-2p (Qi et al. 2023, §3 and §4: the zero-bubble schedules under a memory limit
///    of 2p micro-batches' activations, their ZB-2p): each backward split into B and W
///    as in zb-h1, the order found as their heuristic finds it, by replaying the
///    pipeline with T_F = T_B = T_W and free communication: at each step every stage
///    runs the oldest backward B whose gradient has arrived, else the next forward F
///    whose input has arrived while fewer than 2p micro-batches hold activations (F
///    done, W not), else the oldest pending W. The extra warm-up forwards fill the
///    bubble before the first B, the Ws the cool-down. With equal unit times only the
///    pipeline's fill and drain stay idle, (p−1)/(3m+p−1) as zb-h1 (a step here ends
///    with the optimizer, so they cannot overlap the next step: Qi et al.'s
///    post-validation, which removes them too, is not modelled); with W shorter than
///    B, or sends that take time, zb-2p keeps the bubble that zb-h1's Ws no longer fill.
///  * zb-v (Qi et al. 2023, §6, ZB-V; "Pipeline Parallelism with Controllable Memory",
///    Qi et al. 2024): two chunks per stage placed in a V (stage s holds model chunks s
///    and 2p−1−s), each backward split into B and W, the order found by the same
///    unit-time replay as zb-2p under 1F1B's activation budget (2p chunks, p
///    micro-batches of the whole stage): at each step a stage runs the ready B whose
///    micro-batch is oldest (chunk 1 before chunk 0: its gradient comes first), else
///    the next ready F (chunk 1 first, which finishes a micro-batch) while the budget
///    allows, else the oldest pending W. The V keeps the first forward's turn and the
///    loss on the same stages, so the pipeline fills and drains in about half 1F1B's
///    time at 1F1B's memory.
///  * dualpipe (DeepSeek-AI 2024, DeepSeek-V3 technical report §3.2.1, and the order of
///    its reference implementation, github.com/deepseek-ai/DualPipe): two copies of the
///    model in opposite directions (see above), m/2 micro-batches fed at each end. Stage s
///    with h = min(s, p−1−s) and H = p/2 calls its own half's direction "near" (chunk 0 in
///    the first half of the stages, chunk 1 in the second) and the other "far", and runs:
///    2(H−h−1) near F; h+1 × (near F, far F); H−h−1 × (far B split, the oldest W, far F);
///    m/2−p+h+1 × (near F & far B, far F & near B) — "&" an overlapped pair, except the
///    middle stages' first, run apart to shorten the bubble; H−h−1 × (far B, far F & near B);
///    h+1 × (far B, near B), the split ones from the middle of these on; H−h−1 × (the oldest
///    W, near B split); h+1 × the oldest W. A split B defers its W to the FIFO of Ws; any
///    other B is followed by its own W. Needs p even and m even with m >= 2p.
///    Micro-batch indices run 0..m/2−1 in each chunk.
/// Throws std::invalid_argument on pp < 1, m < 1, v < 1, v > 1 for a schedule other
/// than interleaved, zb-v or dualpipe, zb-v or dualpipe with v != 2, interleaved with
/// m % pp != 0, dualpipe with an odd pp, an odd m or m < 2·pp.
/// O(pp · m · v).
std::vector<std::vector<ScheduleItem>> build_schedule(Schedule schedule, int pp, int microbatches, int virtual_stages);

/// Pipeline bubble fraction with equal stages and free communication (share of the
/// pipeline window a stage is idle):
///  * gpipe, 1f1b: (p−1)/(m+p−1);
///  * interleaved-1f1b: (p−1)/(v·m+p−1) (Narayanan et al. 2021, §2.2.2);
///  * zb-h1: (p−1)/(3m+p−1): Qi et al.'s bubble (p−1)(T_F + T_B − T_W) with their
///    T_F = T_B = T_W, against 3m units of work per stage — a third of 1F1B's
///    bubble time, for m >= p. With m < p there are too few Ws to fill the
///    cool-down and the window is 2(m+p)−1 units: (2p−m−1)/(2m+2p−1).
///    Exact for this schedule when F, B-input and W take equal time.
///  * zb-2p: (T − 3m)/T for T the makespan of the unit-time replay that builds its
///    order (build_schedule): exact when F, B-input and W take equal time.
///  * zb-v: (T − 6m)/T, its replay's makespan T in chunk units (two chunks per stage).
///  * dualpipe: (p/2 − 1)(F&B + B − 3W) / (that + m(F + B)), the DualPipe README's
///    bubble over a stage's window, with its units: F, B (input and weight gradient) and W
///    per chunk of L/p layers; at F = W = 1, B = 2 and F&B = F + B (no overlap gain),
///    (p − 2)/(3m + p − 2). Exact for this order then (test_schedule).
double analytic_bubble(Schedule schedule, int pp, int microbatches, int virtual_stages);

/// The formula analytic_bubble() evaluates for this schedule (and, for zb-h1, for m ≥ p
/// or m < p), in p, m and v: "(p-1)/(m+p-1)" for gpipe and 1f1b.
std::string_view analytic_bubble_formula(Schedule schedule, int pp, int microbatches);

/// Most (micro-batch, chunk) forward passes whose activations a stage holds at once
/// (forwards done minus backwards done; for zb-h1 the B-input releases them, as in
/// Qi et al.'s memory accounting). Units: chunks of L/(p·v) layers' activations per
/// micro-batch — for v = 1, whole micro-batches of the stage.
///  * gpipe: m; 1f1b and zb-h1: min(m, p − stage); zb-2p: counted on its order (its
///    budget, at most 2p, counts on to the Ws);
///  * interleaved: min(m·v, 2(p−stage−1) + (v−1)·p + 1) (Megatron's warm-up + 1),
///    m·v when m == p;
///  * dualpipe: counted on its order, in chunks of L/p layers (the DualPipe README:
///    p + 1 on the busiest stages).
int max_inflight_microbatches(Schedule schedule, int pp, int stage, int microbatches, int virtual_stages);

/// The model chunk (0..model_chunk_count−1, in layer order) that chunk `chunk` of stage
/// `stage` runs: chunk·pp + stage (interleaved round robin), for zb-v's V stage (chunk 0)
/// and 2·pp − 1 − stage (chunk 1), for dualpipe's two copies stage (chunk 0) and
/// pp − 1 − stage (chunk 1). O(1).
int model_chunk_of(Schedule schedule, int pp, int stage, int chunk);
/// The inverse: {stage, chunk} of model chunk `mc`; for dualpipe in the copy that chunk
/// `copy` runs (every other schedule holds each model chunk once and ignores it). O(1).
std::pair<int, int> place_model_chunk(Schedule schedule, int pp, int mc, int copy = 0);
/// Model chunks one copy of the model is cut into: pp·v, or pp for dualpipe (two copies
/// of pp chunks, L/pp layers each).
int model_chunk_count(Schedule schedule, int pp, int virtual_stages);

/// "F", "B", "Bi", "W": short names for traces and messages.
const char* item_kind_name(ItemKind k);

/// Every schedule with its scenario spelling: the one place a schedule's name is
/// written (the loader, the key table, search's --vary and every report read it).
inline constexpr NameTable<Schedule, 7> kScheduleNames{{
    {Schedule::gpipe, "gpipe", "every forward, then every backward (Huang et al. 2019): m micro-batches' activations held"},
    {Schedule::one_f_one_b, "1f1b", "one forward, one backward in the steady state (PipeDream-Flush): at most pp micro-batches held"},
    {Schedule::interleaved_1f1b, "interleaved-1f1b",
     "1f1b over `virtual_stages` chunks per device (Narayanan et al. 2021): the bubble shrinks by v, pp-to-pp traffic grows by v"},
    {Schedule::zb_h1, "zb-h1",
     "zero-bubble H1 (Qi et al. 2023): the backward split into input and weight gradients, the weight half filling the bubble"},
    {Schedule::zb_2p, "zb-2p",
     "zero-bubble under a 2p-micro-batch activation budget (Qi et al. 2023, ZB-2p): more warm-up forwards, weight gradients "
     "fill the rest; only the pipeline's fill and drain stay idle, for up to twice 1f1b's activations"},
    {Schedule::zb_v, "zb-v",
     "zero-bubble V (Qi et al. 2023, ZB-V): two chunks per stage in a V (stage s holds chunks s and 2p-1-s), the "
     "backward split as zb-h1: about zb-2p's bubble at 1f1b's activation memory (virtual_stages 2)"},
    {Schedule::dualpipe, "dualpipe",
     "DualPipe (DeepSeek-V3): two copies of the model fed from both ends of the pipeline, a forward and a backward "
     "overlapped so that each one's all-to-alls hide behind the other's compute; twice the parameters per stage "
     "(virtual_stages 2; pp and micro-batches even, micro-batches >= 2·pp)"},
}};

/// True when the schedule splits each backward into input (B) and weight (W) gradients.
constexpr bool splits_backward(Schedule s) {
  return s == Schedule::zb_h1 || s == Schedule::zb_2p || s == Schedule::zb_v || s == Schedule::dualpipe;
}
/// True when the schedule holds two chunks per stage whatever virtual_stages says (zb-v, dualpipe).
constexpr bool two_chunks_per_stage(Schedule s) { return s == Schedule::zb_v || s == Schedule::dualpipe; }

/// The scenario spelling: "gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-2p", "zb-v", "dualpipe".
const char* schedule_name(Schedule s);
/// The schedule a scenario spelling names; nullopt for any other text.
std::optional<Schedule> schedule_from_name(std::string_view name);

/// Smallest micro-batch count ≥ m (a multiple of pp for interleaved) whose analytic
/// bubble is at most `target`; m itself when it already is.
int microbatches_for_bubble(Schedule s, int pp, int m, int v, double target);

}  // namespace ls::wl
