// tests/test_api.cpp — the public C++ API (tools/api/layoutsim.hpp): each entry point returns what
// the pieces it forwards to return (the command-line equivalence is checked end to end
// by the example_check_and_run_* tests and python_layoutsim).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "tools/api/layoutsim.hpp"
#include "tools/report/report_json.hpp"

using namespace ls;

namespace {
// 8 GPUs of one node, a small preset: milliseconds to simulate.
const char* const kSmall =
    "model: {preset: llama3-8b}\n"
    "cluster: {nodes: 1, gpus_per_node: 8}\n"
    "layout: {tp: 2, pp: 2, dp: 2, microbatches: 4}\n";
}  // namespace

TEST_CASE("overrides become --set strings in order") {
  CHECK(api::override_sets({{"layout.tp", "4"}, {"layout.tp", "2"}}) ==
        std::vector<std::string>{"layout.tp=4", "layout.tp=2"});
}

TEST_CASE("a text source resolves with its overrides, as the loader does") {
  const auto source = api::ScenarioSource::text(kSmall, "small.yaml");
  CHECK(source.name() == "small.yaml");
  const api::ResolvedScenario plain = source.resolve();
  const api::ResolvedScenario overridden = source.resolve({{"layout.microbatches", "8"}});
  CHECK(plain->name == tools::load_scenario_string(kSmall, "small.yaml")->name);
  const api::Result a = api::simulate(overridden);
  const api::Result b = wl::simulate(tools::load_scenario_string(kSmall, "small.yaml", {"layout.microbatches=8"}));
  CHECK(api::summary_json_text(a) == tools::to_json_string(b));  // same scenario, same bytes
  CHECK(api::summary_json(a) == tools::to_json(b));
}

TEST_CASE("an invalid override throws a located ScenarioError") {
  const auto source = api::ScenarioSource::text(kSmall, "small.yaml");
  try {
    (void)source.resolve({{"layout.tp", "3"}});
    FAIL("expected ScenarioError");
  } catch (const api::ScenarioError& e) {
    CHECK(std::string(e.what()).find("--set:1:") == 0);
  }
  CHECK_THROWS_AS((void)api::ScenarioSource::file("no/such/file.yaml").resolve(), api::ScenarioError);
}

TEST_CASE("plan_json holds the plan's numbers") {
  const api::ResolvedScenario s = api::ScenarioSource::text(kSmall, "small.yaml").resolve();
  const api::LayoutReport plan = api::check(s);
  const auto j = api::check_json(s, plan);
  CHECK(j["devices"] == 8);
  CHECK(j["stage_layers"].size() == 2);
  CHECK(j["memory_per_stage"].size() == plan.memory_per_stage.size());
  CHECK(j["model_flops_per_step"].get<double>() == plan.model_flops_per_step);
  const std::string text = api::check_text(s, plan);  // `layoutsim check`
  CHECK(text.find("Memory budget per GPU") != std::string::npos);
  CHECK(j["fits"].get<bool>() == (text.find("DOES NOT FIT") == std::string::npos));
}

TEST_CASE("sweep rows: one per point in order, failed points keep their keys and an error") {
  const auto source = api::ScenarioSource::text(kSmall, "small.yaml");
  const api::SweepRun run = api::sweep(source, {{"layout.microbatches", {"4", "8"}}, {"layout.tp", {"2", "3"}}}, 2);
  REQUIRE(run.outcomes.size() == 4);
  CHECK(run.keys == std::vector<std::string>{"layout.microbatches", "layout.tp"});
  const auto rows = api::sweep_rows(run);
  REQUIRE(rows.size() == 4);
  CHECK(rows[0]["layout.microbatches"] == 4);  // the first axis varies slowest
  CHECK(rows[1]["layout.tp"] == 3);
  CHECK(rows[0]["error"].is_null());
  CHECK(rows[0]["step_time_s"].get<double>() == run.outcomes[0].result->step_time_s);
  CHECK(rows[0]["global_batch"] == run.outcomes[0].result->setup.global_batch);
  CHECK(rows[1]["step_time_s"].is_null());  // tp 3 does not divide the heads
  CHECK(rows[1]["global_batch"].is_null());
  CHECK(rows[1]["error"].get<std::string>().find("layout.tp") != std::string::npos);
  // a fixed override applies to every point
  const api::SweepRun fixed = api::sweep(source, {{"layout.microbatches", {"8"}}}, 1, {{"layout.tp", "2"}});
  CHECK(fixed.outcomes[0].result->step_time_s == run.outcomes[2].result->step_time_s);
  CHECK(api::sweep_json(run).size() == 4);
  CHECK(api::sweep_csv(run).find("layout.microbatches,layout.tp,global_batch,step_time_s") == 0);
}

TEST_CASE("the studies go through the API: validate, diff") {
  // The corpus subset: 11 rows from 8 held-out sources (validation/corpus/subset.yaml).
  std::vector<api::RunRow> rows = api::read_runs({std::string(VALIDATION_DIR) + "/corpus/subset.yaml"});
  CHECK(rows.size() == 11);
  rows.resize(2);
  const api::ValidationReport rep = api::validate(rows, 1);
  REQUIRE(rep.rows.size() == 2);
  CHECK(rep.failed == 0);
  CHECK(api::validation_json(rep)["rows"].size() == 2);
  CHECK(api::validation_text(rep).find(rows.front().name) != std::string::npos);
  const auto files = api::default_runs_files(VALIDATION_DIR);
  CHECK(files.front() == std::string(VALIDATION_DIR) + "/llm_foundry.yaml");
  CHECK(std::none_of(files.begin(), files.end(), [](const std::string& f) { return f.ends_with("subset.yaml"); }));

  // A summary against itself: every headline row is there, unchanged.
  const std::string text = api::summary_json_text(api::simulate(api::ScenarioSource::text(kSmall, "small.yaml").resolve()));
  const api::DiffReport d = api::diff(api::read_summary(text, "a.json"), "a.json", api::read_summary(text, "b.json"), "b.json");
  REQUIRE(!d.rows.empty());
  CHECK(d.rows.front().path == "step_time_s");
  for (const auto& row : d.rows)
    if (row.has_a && row.has_b && row.unit != "text") CHECK(row.a == row.b);
  CHECK(d.other_total == 0);
  CHECK_THROWS_AS((void)api::read_summary("{}", "empty.json"), ls::UserError);
}
