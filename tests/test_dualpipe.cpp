// tests/test_dualpipe.cpp — the dualpipe schedule built and simulated (schedule.hpp,
// workloads/build/pair_overlap.hpp): the pair re-threading on a hand-made program, the
// all-to-alls of every overlapped pair beside the other pass's compute, the two copies'
// parameters, the mirror-gradient exchange's bytes, and the layout rules.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fixtures.hpp"
#include "sim/stage_program_builder.hpp"
#include "workloads/advice/cp_advice.hpp"
#include "workloads/build/pair_overlap.hpp"
#include "workloads/build/program_builder.hpp"
#include "workloads/build/stage_memory.hpp"
#include "workloads/model/layout.hpp"
#include "workloads/model/schedule.hpp"
#include "workloads/resolve.hpp"
#include "workloads/simulate.hpp"
#include "workloads/spec/vocabulary.hpp"

using namespace ls;
using namespace ls::wl;

namespace {

constexpr auto kCompute = static_cast<std::uint8_t>(stream::compute);
constexpr auto kSide = static_cast<std::uint8_t>(stream::overlap);

sim::Op tagged(int label, bool moved) {
  sim::Op op;
  op.kind = moved ? sim::OpKind::collective : sim::OpKind::compute;
  op.group_slot = moved ? slot(Axis::ep) : sim::kNoGroup;
  op.labels[0] = label;
  return op;
}

bool is_ep_all_to_all(const sim::Op& op) { return op.kind == sim::OpKind::collective && axis_of(op) == Axis::ep; }

/// An MoE slice of DeepSeek-V3 on 4 × 8 H800s (ideal network off: real links), pp 4.
Scenario moe_pipeline(Schedule sch, int microbatches = 8) {
  Scenario s = test::preset_slice("deepseek-v3", 8, 4, microbatches);
  s.cluster.nodes = 4;
  s.cluster.ideal_network = false;
  s.layout.dp = 8;
  s.layout.ep = 8;
  s.layout.schedule = sch;
  return s;
}

}  // namespace

TEST_CASE("interleave_pair: segments alternate, all-to-alls move beside, every dependency follows its op") {
  // Compute stream: x | F: f0 f1 [A] f2 [B] f3 | Bw: b0 [C] b1 b2 [D]   ([..] moved)
  sim::StageProgramBuilder b;
  b.add(stream::compute, tagged(100, false));  // x, before the pair
  const std::uint32_t begin = b.count(stream::compute);
  for (auto [label, moved] : std::vector<std::pair<int, bool>>{{0, false}, {1, false}, {10, true}, {2, false}, {11, true}, {3, false}})
    b.add(stream::compute, tagged(label, moved));
  const std::uint32_t split = b.count(stream::compute);
  for (auto [label, moved] : std::vector<std::pair<int, bool>>{{20, false}, {30, true}, {21, false}, {22, false}, {31, true}})
    b.add(stream::compute, tagged(label, moved));
  // A send after f3 (on another stream) and one after the backward's last op (D).
  b.add(stream::pp_send, tagged(200, false), {sim::OpRef{kCompute, begin + 5}});
  b.add(stream::pp_send, tagged(201, false), {b.last(stream::compute)});
  sim::StageProgram p = b.take();
  const auto where = interleave_pair(p, stream::compute, stream::overlap, begin, split, begin + 11, is_ep_all_to_all);

  // F segments {f0 f1 | A}, {f2 | B}, {f3}; B segments {b0 | C}, {b1 b2 | D}: compute in
  // the order f0 f1 b0 f2 b1 b2 f3, the side stream A C B D.
  std::vector<int> comp, side;
  for (const auto& op : p.streams[kCompute]) comp.push_back(op.labels[0]);
  for (const auto& op : p.streams[kSide]) side.push_back(op.labels[0]);
  CHECK(comp == std::vector<int>{100, 0, 1, 20, 2, 21, 22, 3});
  CHECK(side == std::vector<int>{10, 30, 11, 31});
  auto deps_of = [&](const sim::Op& op) { return std::vector<sim::OpRef>(p.deps.begin() + op.dep_begin, p.deps.begin() + op.dep_begin + op.dep_count); };
  auto has = [](const std::vector<sim::OpRef>& d, std::uint8_t st, std::uint32_t i) {
    return std::any_of(d.begin(), d.end(), [&](const sim::OpRef& r) { return r.stream == st && r.index == i; });
  };
  // A follows f1 (compute 2); f2 (compute 4) waits for A (side 0); b1 waits for C (side 1).
  CHECK(has(deps_of(p.streams[kSide][0]), kCompute, 2));
  CHECK(has(deps_of(p.streams[kCompute][4]), kSide, 0));
  CHECK(has(deps_of(p.streams[kCompute][5]), kSide, 1));
  CHECK(has(deps_of(p.streams[kCompute][7]), kSide, 2));  // f3 waits for B
  // The sends follow their ops: f3 is compute 7 now, D side 3.
  CHECK(has(deps_of(p.streams[static_cast<std::size_t>(stream::pp_send)][0]), kCompute, 7));
  CHECK(has(deps_of(p.streams[static_cast<std::size_t>(stream::pp_send)][1]), kSide, 3));
  CHECK(where[5].stream == kCompute);
  CHECK(where[5].index == 7);
  CHECK(where[10].stream == kSide);
  CHECK(where[10].index == 3);
}

TEST_CASE("dualpipe program: the all-to-alls of every overlapped pair, and only those, run beside compute") {
  const Scenario s = resolve(moe_pipeline(Schedule::dualpipe));
  const BuiltProgram built = build_program(s);
  const auto sched = build_schedule(Schedule::dualpipe, 4, 8, 2);
  for (int st = 0; st < 4; ++st) {
    CAPTURE(st);
    const auto& prog = built.program.stages[static_cast<std::size_t>(st)];
    std::size_t beside = 0, inline_ = 0;
    for (const auto& op : prog.streams[kSide]) beside += is_ep_all_to_all(op);
    for (const auto& op : prog.streams[kCompute]) inline_ += is_ep_all_to_all(op);
    // Per forward or whole backward of a chunk: 2 all-to-alls per MoE layer it holds.
    auto per_pass = [&](int chunk) {
      int n = 0;
      const int mc = model_chunk_of(Schedule::dualpipe, 4, st, chunk);
      for (int l = 2 * mc; l < 2 * mc + 2; ++l) n += layer_is_moe(s.model, l) ? 2 : 0;
      return n;
    };
    std::size_t want_beside = 0, want_inline = 0;
    const auto& items = sched[static_cast<std::size_t>(st)];
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (items[i].kind == ItemKind::backward_weight) continue;
      const bool paired = items[i].overlapped || (i > 0 && items[i - 1].overlapped);
      (paired ? want_beside : want_inline) += static_cast<std::size_t>(per_pass(items[i].chunk));
    }
    CHECK(beside == want_beside);
    CHECK(inline_ == want_inline);
    CHECK(want_beside > 0);
  }
}

TEST_CASE("dualpipe: two copies of the model's parameters per stage, and the mirror stage's gradients before the optimizer") {
  // Equal dense stages, no embedding or head: a stage holds 2L/p layers, twice 1F1B's.
  Scenario a = test::uniform_pipeline(4, 8, Schedule::one_f_one_b);
  a.model.layers = 8;
  a.layout.stage_layers_mode = StageLayersMode::auto_even;
  a.layout.stage_layers.clear();
  Scenario d = a;
  d.layout.schedule = Schedule::dualpipe;
  const BuiltProgram pa = build_program(resolve(a)), pd = build_program(resolve(d));
  for (int st = 0; st < 4; ++st) {
    CHECK(pd.stage_layers[static_cast<std::size_t>(st)] == 2 * pa.stage_layers[static_cast<std::size_t>(st)]);
    CHECK(pd.static_memory[static_cast<std::size_t>(st)].weights == doctest::Approx(2 * pa.static_memory[static_cast<std::size_t>(st)].weights));
  }
  // The exchange: one send to stage p−1−s of the shard it updates (zero 0, dp 1: every
  // trained parameter of its 2L/p layers) in gradient bytes, and a recv right before the optimizer.
  const Scenario rd = resolve(d);
  const DeviceParams params(rd);
  for (int st = 0; st < 4; ++st) {
    const auto& prog = pd.program.stages[static_cast<std::size_t>(st)];
    const auto& sends = prog.streams[static_cast<std::size_t>(stream::pp_send)];
    const auto mirror = std::count_if(sends.begin(), sends.end(), [&](const sim::Op& op) { return work_of(op) == Work::grad_sync; });
    REQUIRE(mirror == 1);
    const auto it = std::find_if(sends.begin(), sends.end(), [&](const sim::Op& op) { return work_of(op) == Work::grad_sync; });
    CHECK(it->peer_stage == 3 - st);
    double trained = 0;
    for (int l = 0; l < 8; ++l)
      if (l / 2 == st || l / 2 == 3 - st) trained += params.trained_dense(l);
    CHECK(it->bytes == doctest::Approx(trained * rd.precision.gradients));
    const auto& comp = prog.streams[kCompute];
    REQUIRE(comp.size() >= 2);
    CHECK(comp[comp.size() - 2].kind == sim::OpKind::recv);
    CHECK(work_of(comp.back()) == Work::optimizer);
  }
  // It simulates, on the symmetric path and off it alike.
  Scenario off = d;
  off.simulation.symmetry = false;
  CHECK(simulate(resolve(off)).step_time_s == simulate(resolve(d)).step_time_s);
}

TEST_CASE("dualpipe hides the pair's all-to-alls: less exposed expert-parallel time than zb-v's order, and a shorter step") {
  // Not a closed form: with 16 micro-batches on 4 stages, 22 of a stage's 32 passes run in
  // pairs, so a good part of the all-to-all time hides behind the partner's compute.
  const Result dual = simulate(resolve(moe_pipeline(Schedule::dualpipe, 16)));
  const Result zbv = simulate(resolve(moe_pipeline(Schedule::zb_v, 16)));
  CHECK(dual.comm[static_cast<int>(Axis::ep)].exposed_s < 0.8 * zbv.comm[static_cast<int>(Axis::ep)].exposed_s);
  CHECK(dual.step_time_s < zbv.step_time_s);
}

TEST_CASE("dualpipe layout rules: even pp, an even number of at least 2·pp micro-batches, no cp, no ZeRO-3, no TP comm overlap") {
  auto message = [](Scenario s) {
    try {
      resolve(s);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  Scenario s = moe_pipeline(Schedule::dualpipe);
  CHECK(message(s).empty());
  Scenario odd = s;
  odd.layout.microbatches = 9;
  CHECK(message(odd).find("even number of at least 2·pp = 8") != std::string::npos);
  Scenario few = s;
  few.layout.microbatches = 6;
  CHECK(message(few).find("layout.microbatches") != std::string::npos);
  Scenario three = test::uniform_pipeline(3, 12, Schedule::dualpipe);
  CHECK(message(three).find("even pp") != std::string::npos);
  Scenario z3 = s;
  z3.layout.zero = 3;
  CHECK(message(z3).find("layout.zero") != std::string::npos);
  Scenario tpo = s;
  tpo.layout.tp = 2;
  tpo.layout.dp = 4;
  tpo.layout.ep = 4;
  tpo.implementation.tp_comm_overlap = true;
  CHECK(message(tpo).find("implementation.tp_comm_overlap") != std::string::npos);
}

TEST_CASE("the out-of-memory advice offers no context parallelism with dualpipe (the layout rules refuse it)") {
  // A long-sequence dense model whose largest term is activations: cp would be offered.
  Scenario s = test::preset_slice("llama3-8b", 8, 2, 8);
  s.model.seq_len = 32768;
  s.layout.dp = 4;
  s.layout.ep = 1;
  MemoryTerms mt;
  mt.activations = 100e9;
  mt.peak = 120e9;
  CHECK(cp_remedy(resolve(s), mt).has_value());
  s.layout.schedule = Schedule::dualpipe;
  CHECK_FALSE(cp_remedy(resolve(s), mt).has_value());
}
