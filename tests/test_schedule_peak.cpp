// tests/test_schedule_peak.cpp — each stage's activation peak at M micro-batches walked
// over the items of a program built at fewer (workloads/build/schedule_peak.hpp).
//
// The peaks are sums of the same integer byte counts as the program's own running
// total (program_totals), so they are compared exactly.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "tools/scenario/scenario.hpp"
#include "workloads/build/program_builder.hpp"
#include "workloads/build/program_totals.hpp"
#include "workloads/build/schedule_peak.hpp"
#include "workloads/spec/vocabulary.hpp"

using namespace ls;

namespace {

/// 32 GPUs (tp 2 · pp 4 · dp 4), an 8-layer model, micro-batches of 1, the layout lines given.
wl::Scenario scenario(const std::string& layout, int microbatches) {
  const std::string yaml = fmt::format(R"(name: schedule-peak
cluster: {{gpu: h100-sxm, nodes: 4, gpus_per_node: 8}}
model: {{name: small, layers: 8, hidden: 1024, heads: 16, kv_heads: 8, ffn_hidden: 4096, vocab: 32000, seq_len: 2048,
        activation: swiglu}}
layout:
  tp: 2
  pp: 4
  microbatch_size: 1
  global_batch: {}
{}
)",
                                       4 * microbatches, layout);
  return tools::load_scenario_string(yaml, "schedule-peak.yaml").scenario();
}

std::vector<double> own_peaks(const std::string& layout, int microbatches) {
  return wl::program_totals(wl::build_program(scenario(layout, microbatches)).program).activation_peak_bytes;
}

/// The items of the program at `built_at`, walked at M.
std::vector<double> walked_peaks(const std::string& layout, int built_at, int microbatches) {
  const wl::Scenario sc = scenario(layout, built_at);
  const auto items = wl::ItemMemory::read(wl::build_program(sc).program, sc.layout);
  REQUIRE(items.has_value());
  return items->peaks(microbatches, built_at / 2);
}

}  // namespace

TEST_CASE("1F1B: stage s holds min(p − s, M) micro-batches' activations") {
  // Narayanan et al. 2021 §2.2.1: 1F1B's warm-up keeps p − s forwards in flight on stage
  // s. Stages 0..2 hold no transient working memory (the loss head is on stage 3), so
  // their peak is that many times one forward's activations, read off the M = 1 program.
  const std::string layout = "  schedule: 1f1b";
  const sim::Program one = wl::build_program(scenario(layout, 1)).program;
  for (int m : {3, 4, 5, 9}) {
    CAPTURE(m);
    const std::vector<double> peaks = walked_peaks(layout, 3, m);
    for (int s = 0; s < 3; ++s) {
      CAPTURE(s);
      double forward = 0;  // one forward's activations on stage s
      for (const sim::Op& op : one.stages[static_cast<std::size_t>(s)].streams[static_cast<std::size_t>(wl::stream::compute)])
        if (wl::work_of(op) == wl::Work::forward) forward += static_cast<double>(op.mem_delta_bytes);
      CHECK(forward > 0);
      CHECK(peaks[static_cast<std::size_t>(s)] == std::min(4 - s, m) * forward);
    }
  }
}

TEST_CASE("every schedule that walks: the peak at M equals the program built at M") {
  struct Case {
    const char* layout;
    int built_at;
  };
  const Case cases[] = {
      {"  schedule: 1f1b", 3},
      {"  schedule: 1f1b\n  recompute: full", 3},
      {"  schedule: 1f1b\n  recompute: selective\n  sequence_parallel: true", 3},
      {"  schedule: interleaved-1f1b\n  virtual_stages: 2", 4},
      {"  schedule: zb-h1", 3},
      {"  schedule: zb-h1\n  recompute: full", 3},
      {"  schedule: zb-2p", 3},
      {"  schedule: zb-v", 3},
  };
  for (const Case& c : cases) {
    CAPTURE(c.layout);
    // M inside the warm-up and past it, on the schedule's grid.
    const int step = std::string(c.layout).find("interleaved") != std::string::npos ? 4 : 1;
    for (int m = c.built_at + step; m <= 16; m += step) {
      CAPTURE(m);
      CHECK(walked_peaks(c.layout, c.built_at, m) == own_peaks(c.layout, m));
    }
  }
}

TEST_CASE("a program whose memory does not come in the schedule's items is not read") {
  // Too few micro-batches for a first, a middle and a last.
  const wl::Scenario two = scenario("  schedule: 1f1b", 2);
  CHECK_FALSE(wl::ItemMemory::read(wl::build_program(two).program, two.layout).has_value());
  // A 1F1B program read as GPipe's: its items run in another order.
  const wl::Scenario sc = scenario("  schedule: 1f1b", 6);
  wl::LayoutSpec gpipe = sc.layout;
  gpipe.schedule = wl::Schedule::gpipe;
  CHECK_FALSE(wl::ItemMemory::read(wl::build_program(sc).program, gpipe).has_value());
  // Read as its own schedule, the same program is.
  CHECK(wl::ItemMemory::read(wl::build_program(sc).program, sc.layout).has_value());
}
