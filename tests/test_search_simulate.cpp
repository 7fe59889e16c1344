// tests/test_search_simulate.cpp — the search's simulation stage (tools/study/search.hpp,
// stage 3): candidates whose simulations are the same (equal but for a stage_layers
// choice that splits the layers alike) are simulated once, and every simulated
// candidate reports what its own simulation gives.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "search_fixtures.hpp"
#include "tools/scenario/scenario.hpp"
#include "tools/study/search.hpp"
#include "workloads/build/stage_layers.hpp"
#include "workloads/resolve.hpp"
#include "workloads/simulate.hpp"

using namespace ls;

namespace {

struct Checked {
  int twins = 0;       // simulated candidates equal but for stage_layers, splitting alike
  int split_pairs = 0; // ... splitting differently
};

/// Searches `yaml` (`narrow`: ZeRO-1, no recompute, micro-batches of 1, and every kept
/// candidate simulated) and checks every simulated candidate against its own simulation.
Checked check_simulated(const std::string& yaml, bool narrow) {
  const wl::ResolvedScenario base = tools::load_scenario_string(yaml, "tiny.yaml");
  tools::SearchOptions o;
  o.axes = tools::default_axes(*base);
  o.simulate_top = 48;
  if (narrow) {
    o.axes.zero = {1};
    o.axes.recompute = {wl::Recompute::none};
    o.axes.microbatch_size = {1};
    o.simulate_top = 400;
  }
  o.remedies = false;
  o.jobs = 1;
  std::size_t simulations = 0, reported = 0;
  o.on_simulated = [&](std::size_t, std::size_t total) { simulations = total; };
  const tools::SearchReport r = tools::run_search(base, o);
  std::map<std::string, std::set<std::string>> splits;  // layout less stage_layers -> chunk splits
  std::map<std::string, int> alike;                     // (layout less stage_layers, split) -> count
  Checked out;
  for (const auto& c : r.ranked) {
    if (!c.simulated) continue;
    ++reported;
    const wl::Scenario sc = tools::candidate_scenario(*base, 16, c.layout);
    tools::SearchLayout bare = c.layout;
    bare.stage_layers_mode = wl::StageLayersMode::auto_even;
    std::string split;
    for (const auto& stage : wl::stage_layers(sc).chunks)
      for (const auto& ch : stage) split += fmt::format("/{}-{}", ch.begin, ch.end);
    const std::string key = tools::compact_layout(bare);
    if (++alike[key + split] == 2) ++out.twins;
    if (splits[key].insert(split).second && splits[key].size() == 2) ++out.split_pairs;
    // Its own simulation, as the search runs it (no what-ifs).
    wl::SimOptions so;
    so.what_if = false;
    const wl::Result own = wl::simulate(wl::resolve(sc), so);
    CAPTURE(tools::compact_layout(c.layout));
    CHECK(c.step_time_s == own.step_time_s);
    CHECK(c.peak_memory_bytes == own.max_peak_bytes);
    CHECK(c.bubble_fraction == own.bubble_fraction);
  }
  CHECK(reported == r.simulated);
  // Each twin is one simulation fewer.
  CHECK(simulations + static_cast<std::size_t>(out.twins) <= reported);
  return out;
}

}  // namespace

TEST_CASE("twins (equal but for a stage_layers choice that splits alike) are simulated once, with the same outcome") {
  // 8 layers and a light head: balanced splits as auto does.
  CHECK(check_simulated(test::kTinySearch, false).twins > 0);
}

TEST_CASE("a stage_layers choice that splits differently is its own simulation") {
  // A vocabulary of 128k makes the head the weight of several layers: balanced moves
  // layers off the last stage, and those pairs must not share a simulation (6 GB GPUs,
  // so that the heavier head fits).
  std::string yaml = test::kTinySearch;
  yaml.replace(yaml.find("vocab: 32000"), 12, "vocab: 128000");
  yaml.replace(yaml.find("memory: 3 GB"), 12, "memory: 6 GB");
  CHECK(check_simulated(yaml, true).split_pairs > 0);
}
