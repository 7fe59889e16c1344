// tests/test_end_chunks.cpp — layout.stage_layers with an empty first or last entry: the
// first model chunk holding the embedding alone and the last the LM head and loss alone
// (Llama 3's pipeline), against the same layers placed otherwise.
//
// Moving a layer between stages moves its kernels and its optimizer work, nothing else:
// the stages' compute times add up to the same total, and the stage that lost a layer
// computes exactly one layer's share less (the share another stage gains with it).
#include <doctest/doctest.h>

#include <numeric>
#include <string>
#include <vector>

#include "tools/scenario/scenario.hpp"
#include "workloads/simulate.hpp"

using namespace ls;

namespace {

// One node of 8 H100s, pp 4 × tp 2, 6 layers, 8 micro-batches of one 2048-token sequence.
std::string yaml(const std::string& stage_layers, const std::string& schedule = "1f1b") {
  return "cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 8}\n"
         "model: {layers: 6, hidden: 4096, heads: 32, ffn_hidden: 14336, vocab: 128256, seq_len: 2048, activation: swiglu}\n"
         "layout: {tp: 2, pp: 4, dp: 1, microbatch_size: 1, microbatches: 8, schedule: " + schedule +
         (schedule == "interleaved-1f1b" ? ", virtual_stages: 2" : "") + ", stage_layers: " + stage_layers + "}\n";
}

std::vector<double> stage_compute(const std::string& text) {
  wl::SimOptions opt;
  opt.what_if = false;
  const wl::Result r = wl::simulate(tools::load_scenario_string(text, "<end-chunks>"), opt);
  std::vector<double> out;
  for (const auto& st : r.per_stage) out.push_back(st.compute_s);
  return out;
}

double total(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

}  // namespace

TEST_CASE("empty end stages: the same layers placed otherwise, the same total compute") {
  const auto ends = stage_compute(yaml("[0, 3, 3, 0]"));
  const auto even = stage_compute(yaml("[1, 2, 2, 1]"));
  REQUIRE(ends.size() == 4);
  REQUIRE(even.size() == 4);
  CHECK(total(ends) == doctest::Approx(total(even)).epsilon(1e-9));
  // One layer's share: stage 1 runs three layers in [0, 3, 3, 0] and two in [1, 2, 2, 1]
  // (a difference, so that what a stage costs once, such as its optimizer's launches,
  // cancels). Stage 0 of [1, 2, 2, 1] runs the embedding and one layer, stage 0 of
  // [0, 3, 3, 0] the embedding alone; likewise the LM head on stage 3.
  const double layer = ends[1] - even[1];
  CHECK(layer > 0);
  CHECK(even[0] - ends[0] == doctest::Approx(layer).epsilon(1e-9));
  CHECK(even[3] - ends[3] == doctest::Approx(layer).epsilon(1e-9));
  // The embedding alone (its lookup, and the optimizer of its table) costs less than a
  // layer; the LM head of a 128k vocabulary more.
  CHECK(ends[0] < layer);
  CHECK(ends[3] > layer);
}

TEST_CASE("empty end chunks under interleaving: each stage holds what the flat split gives it") {
  // 8 model chunks over 4 stages, chunk k on stage k mod 4: stage 0 holds chunk 0 (the
  // embedding alone) and chunk 4 (a layer), stage 3 chunk 3 (a layer) and chunk 7 (the LM
  // head alone), stages 1 and 2 two layers each: what [1, 2, 2, 1] puts on them.
  const auto ends = stage_compute(yaml("[0, 1, 1, 1, 1, 1, 1, 0]", "interleaved-1f1b"));
  const auto flat = stage_compute(yaml("[1, 2, 2, 1]"));
  REQUIRE(ends.size() == flat.size());
  for (std::size_t i = 0; i < ends.size(); ++i) CHECK(ends[i] == doctest::Approx(flat[i]).epsilon(1e-9));
}

TEST_CASE("an empty middle entry is refused, naming the entry and the ends that may be empty") {
  try {
    tools::load_scenario_string(yaml("[2, 0, 2, 2]"), "<end-chunks>");
    FAIL("an empty middle stage was accepted");
  } catch (const std::exception& e) {
    const std::string what = e.what();
    CHECK(what.find("layout.stage_layers") != std::string::npos);
    CHECK(what.find("stage_layers[1] = 0") != std::string::npos);
    CHECK(what.find("only the first and the last entry") != std::string::npos);
  }
}
