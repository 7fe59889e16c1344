// tests/test_step_split.cpp — workloads/analysis/step_split.hpp: the line through two
// steps (closed form), the probe's micro-batches, and `run --split` on the textbook
// pipeline, whose step is (m + p − 1)·(F + B) plus once-per-step work.
#include <doctest/doctest.h>

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "fixtures.hpp"
#include "tools/report/output_check.hpp"
#include "tools/report/report_json.hpp"
#include "workloads/analysis/step_split.hpp"
#include "workloads/simulate.hpp"

using namespace ls;

namespace {

double step_at(wl::Scenario s, int m) {
  s.layout.microbatches = m;
  wl::SimOptions o;
  o.what_if = false;
  return wl::simulate(wl::resolve(s), o).step_time_s;
}

}  // namespace

TEST_CASE("split_step: the line through two steps") {
  // 8 micro-batches in 10 s, 12 in 14 s: 1 s each, 2 s once.
  const auto s = wl::split_step(8, 10.0, 12, 14.0);
  CHECK(s.present);
  CHECK(s.per_microbatch_s == doctest::Approx(1.0));
  CHECK(s.fixed_s == doctest::Approx(2.0));
  CHECK(s.probe_microbatches == 12);
  CHECK(s.probe_step_s == 14.0);
  CHECK_THROWS_AS(wl::split_step(8, 10.0, 8, 11.0), std::invalid_argument);
  wl::LayoutSpec l;
  l.microbatches = 16;
  l.pp = 4;
  CHECK(wl::split_probe_microbatches(l) == 20);  // one period of every schedule
  l.pp = 1;
  CHECK(wl::split_probe_microbatches(l) == 17);
}

TEST_CASE("run --split on a uniform 1F1B pipeline: the slot per micro-batch, the fill and drain once") {
  constexpr int p = 4, m = 8;
  const wl::Scenario s = test::uniform_pipeline(p, m);
  wl::SimOptions o;
  o.what_if = false;
  o.step_split = true;
  const wl::Result r = wl::simulate(wl::resolve(s), o);
  REQUIRE(r.step_split.present);
  CHECK(r.step_split.microbatches == m);
  CHECK(r.step_split.probe_microbatches == m + p);
  // The probe is the same scenario at m + p micro-batches, simulated on its own.
  CHECK(r.step_split.probe_step_s == doctest::Approx(step_at(s, m + p)).epsilon(1e-12));
  // (m + p − 1)·slot + c: the line predicts a third count exactly (picosecond rounding aside).
  const double slot = r.step_split.per_microbatch_s;
  CHECK(slot > 0);
  CHECK(step_at(s, m + 3 * p) == doctest::Approx(r.step_split.fixed_s + (m + 3 * p) * slot).epsilon(1e-9));
  // What the step pays once is the fill and drain, p − 1 slots, and the optimizer: a
  // little more than (p − 1)·slot, far less than a slot more.
  CHECK(r.step_split.fixed_s >= (p - 1) * slot * (1 - 1e-9));
  CHECK(r.step_split.fixed_s < p * slot);
  // Without the option, no split and no second run.
  o.step_split = false;
  CHECK_FALSE(wl::simulate(wl::resolve(s), o).step_split.present);
}

TEST_CASE("step split in the JSON: present only when asked, a negative fixed part allowed there alone") {
  wl::Scenario s = test::uniform_pipeline(2, 4);
  wl::SimOptions o;
  o.what_if = false;
  o.step_split = true;
  const auto j = nlohmann::json::parse(tools::to_json_string(wl::simulate(wl::resolve(s), o)));
  REQUIRE(j.contains("step_split"));
  CHECK(j["step_split"]["probe_microbatches"] == 6);
  CHECK(j["step_split"]["per_microbatch_s"].get<double>() > 0);
  nlohmann::json neg = {{"step_time_s", 3.0}, {"step_split", {{"fixed_s", -0.5}, {"per_microbatch_s", 1.0}}}};
  CHECK_NOTHROW(tools::check_summary_numbers(neg));
  neg["step_split"]["per_microbatch_s"] = -1.0;
  CHECK_THROWS_AS(tools::check_summary_numbers(neg), tools::OutputInvariantError);
  o.step_split = false;
  CHECK_FALSE(nlohmann::json::parse(tools::to_json_string(wl::simulate(wl::resolve(s), o))).contains("step_split"));
}

TEST_CASE("a split whose second simulation breaks a rule says so, as a user error on layout.microbatches") {
  // 64 alike replicas of a one-layer model: the symmetric fast path simulates one, so the
  // first run is quick, while the work bound counts every device: 64 × m × (1 + 1) layer
  // passes, m = 131,072 at the 16,777,216 limit, the probe's m + 1 over it.
  wl::Scenario s;
  s.name = "bound";
  s.cluster.nodes = 8;
  s.cluster.gpus_per_node = 8;
  s.gpu = *wl::gpu_preset("h100-sxm");
  s.model = test::small_model(1);
  s.layout.dp = 64;
  s.layout.microbatches = 131072;
  wl::SimOptions o;
  o.what_if = false;
  o.step_split = true;
  try {
    wl::simulate(wl::resolve(s), o);
    FAIL("expected the probe to break the work bound");
  } catch (const wl::InvalidScenario& e) {
    REQUIRE(e.issues().size() == 1);
    CHECK(e.issues()[0].key_path == "layout.microbatches");
    CHECK(e.issues()[0].message.find("second simulation, at 131073 micro-batches") != std::string::npos);
    CHECK(e.issues()[0].hint.find("leave the split out") != std::string::npos);
  }
}
