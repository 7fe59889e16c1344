// tests/test_simulate.cpp — workloads/simulate.hpp: the engine replaying whole layouts.
//
// Each case states the closed form it checks. Tolerances: bubble fractions are
// ratios of integer-picosecond sums, so 1e-6 absorbs the rounding of one op's
// duration to the picosecond many times over.
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>

#include "workloads/hardware.hpp"
#include "workloads/model.hpp"
#include "workloads/program_builder.hpp"
#include "workloads/schedule.hpp"
#include "workloads/simulate.hpp"

using namespace ls;
using namespace ls::wl;

namespace {

ModelSpec small_model(int layers) {
  ModelSpec m;
  m.name = "small";
  m.layers = layers;
  m.hidden = 1024;
  m.heads = 16;
  m.kv_heads = 16;
  m.ffn_hidden = 4096;
  m.vocab = 32000;
  m.seq_len = 1024;
  return m;
}

/// p equal stages on one node, free communication, embedding and head made free.
Scenario uniform_pipeline(int p, int m, Schedule sch, int v = 1) {
  Scenario s;
  s.name = "uniform";
  s.cluster.nodes = 1;
  s.cluster.gpus_per_node = p;
  s.cluster.ideal_network = true;
  s.gpu = *gpu_preset("h100-sxm");
  s.model = small_model(2 * p * v);
  s.layout.pp = p;
  s.layout.microbatches = m;
  s.layout.schedule = sch;
  s.layout.virtual_stages = v;
  s.layout.embedding_free = true;
  s.layout.stage_layers_mode = StageLayersMode::explicit_list;
  // One entry per model chunk (pp·v of them), 2 layers each.
  s.layout.stage_layers.assign(static_cast<std::size_t>(p * v), 2);
  return s;
}

}  // namespace

TEST_CASE("bubble of gpipe and 1f1b equals (p-1)/(m+p-1) on every stage") {
  // Equal stages, free communication: the pipeline takes (m+p-1)(F+B) and each
  // stage works m(F+B) of it, so its bubble is (p-1)/(m+p-1) exactly.
  const int grid[][2] = {{2, 8}, {4, 8}, {4, 32}, {8, 8}, {8, 64}};
  for (Schedule sch : {Schedule::gpipe, Schedule::one_f_one_b}) {
    for (const auto& pm : grid) {
      const int p = pm[0], m = pm[1];
      CAPTURE(p);
      CAPTURE(m);
      CAPTURE(static_cast<int>(sch));
      const Result r = simulate(uniform_pipeline(p, m, sch));
      const double expect = double(p - 1) / double(m + p - 1);
      CHECK(r.bubble_fraction_analytic == doctest::Approx(expect).epsilon(1e-12));
      REQUIRE(r.per_stage.size() == static_cast<std::size_t>(p));
      for (const auto& st : r.per_stage) CHECK(std::fabs(st.bubble_fraction - expect) < 1e-6);
    }
  }
}

TEST_CASE("interleaved 1f1b bubble equals (p-1)/(v*m+p-1)") {
  // Megatron-LM (Narayanan et al. 2021, §2.2): v chunks per device cut the bubble by v.
  const int grid[][3] = {{2, 8, 2}, {4, 8, 2}, {4, 16, 4}};
  for (const auto& g : grid) {
    const int p = g[0], m = g[1], v = g[2];
    CAPTURE(p);
    CAPTURE(m);
    CAPTURE(v);
    const Result r = simulate(uniform_pipeline(p, m, Schedule::interleaved_1f1b, v));
    const double expect = double(p - 1) / double(v * m + p - 1);
    for (const auto& st : r.per_stage) CHECK(std::fabs(st.bubble_fraction - expect) < 1e-6);
  }
}

TEST_CASE("step time of a uniform 1f1b pipeline is (m+p-1)(F+B) plus the optimizer") {
  // Stage 0 starts first and ends last: its last backward finishes after
  // (m+p-1) slots of one micro-batch's F+B, then it runs its optimizer step.
  const int p = 4, m = 8;
  Scenario s = uniform_pipeline(p, m, Schedule::one_f_one_b);
  const Result r = simulate(s);
  const BuiltProgram bp = build_program(s);
  const double fb = bp.stage_compute_s[0];
  const double opt = bp.program.stages[0].streams[0].back().duration.seconds();
  CHECK(r.step_time_s == doctest::Approx((m + p - 1) * fb + opt).epsilon(1e-9));
}

TEST_CASE("same scenario twice gives identical results") {
  Scenario s = uniform_pipeline(4, 8, Schedule::one_f_one_b);
  s.cluster.ideal_network = false;
  SimOptions o;
  o.trace = true;
  const Result a = simulate(s, o), b = simulate(s, o);
  CHECK(a.step_time_s == b.step_time_s);
  CHECK(a.events == b.events);
  REQUIRE(a.spans.size() == b.spans.size());
  for (std::size_t i = 0; i < a.spans.size(); ++i) {
    CHECK(a.spans[i].start == b.spans[i].start);
    CHECK(a.spans[i].end == b.spans[i].end);
  }
}

TEST_CASE("critical-path shares sum to one") {
  Scenario s = uniform_pipeline(4, 8, Schedule::one_f_one_b);
  s.cluster.ideal_network = false;
  const Result r = simulate(s);
  const auto& c = r.critical_path;
  // Every picosecond of the step is attributed to exactly one bucket.
  CHECK(std::fabs(c.share_compute + c.share_comm + c.share_wait - 1.0) < 1e-9);
  CHECK(std::fabs(c.compute_s + c.comm_tp_s + c.comm_pp_s + c.comm_dp_s + c.comm_ep_s + c.wait_s - r.step_time_s) <
        1e-9 * r.step_time_s);
}
