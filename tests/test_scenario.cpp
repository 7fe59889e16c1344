// tests/test_scenario.cpp — tools/scenario/scenario.hpp: the built-in default, preset merging,
// --set composition, defaults, and a table of bad scenarios whose compiler-style
// messages must name the file, the right line and the key path.
//
// The numbers checked here are unit conversions (exact products, compared with a
// 1e-9 relative tolerance for doubles) and integer fields (compared exactly).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tools/scenario/scenario.hpp"
#include "workloads/cost/hardware.hpp"
#include "workloads/model/model.hpp"
#include "tools/scenario/scenario_keys.hpp"
#include "workloads/simulate.hpp"

using namespace ls;
using namespace ls::tools;

namespace {

bool close(double got, double want) { return std::abs(got - want) <= 1e-9 * std::abs(want); }

// A small valid scenario; the table below edits single lines of it, so the line
// numbers in the comments matter.
const char* const kBase =
    "name: t\n"                                                  // 1
    "cluster:\n"                                                 // 2
    "  gpu: h100-sxm\n"                                          // 3
    "  nodes: 2\n"                                               // 4
    "  gpus_per_node: 8\n"                                       // 5
    "  intra_node: {bandwidth: 450 GB/s, latency: 1 us}\n"       // 6
    "  inter_node: {bandwidth: 400 Gb/s, latency: 3 us}\n"       // 7
    "model:\n"                                                   // 8
    "  preset: llama3-8b\n"                                      // 9
    "layout:\n"                                                  // 10
    "  dp: 1\n"                                                  // 11
    "  tp: 8\n"                                                  // 12
    "  pp: 2\n"                                                  // 13
    "  microbatches: 4\n"                                        // 14
    "  schedule: 1f1b\n"                                         // 15
    "perturbations:\n"                                           // 16
    "  devices: [{device: node1.gpu7, compute_slowdown: 1.5}]\n";  // 17

/// kBase with line `line` (1-based) replaced by `text` (which may hold several lines).
std::string edit(int line, const std::string& text) {
  std::istringstream in(kBase);
  std::string out, l;
  for (int i = 1; std::getline(in, l); ++i) out += (i == line ? text : l) + "\n";
  return out;
}

/// kBase with `text` appended.
std::string append(const std::string& text) { return std::string(kBase) + text; }

std::string error_of(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  try {
    load_scenario_string(yaml, "bad.yaml", sets);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

TEST_CASE("the built-in default scenario: 70B on 64 H100s, t8·p4·d2") {
  const wl::Scenario s = load_default_scenario();
  CHECK(s.source == "<default>");
  CHECK(s.name == "llama3-70b-64xh100");
  CHECK(s.cluster.nodes == 8);
  CHECK(s.cluster.gpus_per_node == 8);
  CHECK(s.gpu.name == "h100-sxm");
  CHECK(s.cluster.intra.kind == "nvswitch");
  CHECK(close(s.cluster.intra.bandwidth_Bps, 450e9));
  CHECK(s.cluster.inter.kind == "infiniband");
  CHECK(close(s.cluster.inter.bandwidth_Bps, 400e9 / 8));  // 400 Gb/s = 50 GB/s
  CHECK(s.cluster.inter.latency == sim::us(3));
  CHECK(s.cluster.inter.fabric == "rail-optimized");
  CHECK(s.model.layers == 80);
  CHECK(s.model.hidden == 8192);
  CHECK(s.layout.dp == 2);
  CHECK(s.layout.tp == 8);
  CHECK(s.layout.pp == 4);
  CHECK(s.layout.zero == 1);
  CHECK(s.layout.sequence_parallel);
  CHECK(s.layout.recompute == wl::Recompute::selective);
  CHECK(s.layout.microbatch_size == 1);
  CHECK(s.layout.microbatches == 16);
  CHECK(s.layout.schedule == wl::Schedule::one_f_one_b);
  CHECK(s.precision.weights == 2);
  CHECK(s.precision.optimizer == 8);
  CHECK(s.simulation.steps == 1);
  CHECK(default_scenario_yaml().find("preset: llama3-70b") != std::string_view::npos);
}

TEST_CASE("the base scenario loads, with the documented defaults") {
  const wl::Scenario s = load_scenario_string(kBase, "base.yaml");
  CHECK(s.source == "base.yaml");
  CHECK(s.layout.ep == 1);
  CHECK(s.layout.zero == 0);
  CHECK(s.layout.virtual_stages == 1);
  CHECK(s.layout.stage_layers_mode == wl::StageLayersMode::auto_even);
  CHECK(s.layout.placement == std::vector<std::string>{"tp", "dp", "pp"});
  CHECK(s.cluster.inter.fabric == "rail-optimized");
  CHECK(s.cluster.inter.oversubscription == 1.0);
  CHECK(!s.cluster.ideal_network);
  REQUIRE(s.perturbations.devices.size() == 1);
  CHECK(s.perturbations.devices[0].device == "node1.gpu7");
  CHECK(s.perturbations.devices[0].compute_slowdown == 1.5);
}

TEST_CASE("link defaults follow the GPU preset; dp defaults to what tp·pp leave") {
  const wl::Scenario s = load_scenario_string(
      "cluster: {gpu: h100-sxm, nodes: 4}\nmodel: llama3-8b\nlayout: {tp: 8, pp: 2}\n", "d.yaml");
  const wl::GpuSpec h100 = *wl::gpu_preset("h100-sxm");
  CHECK(s.name == "d");  // the file name without extension
  CHECK(s.cluster.intra.kind == "nvswitch");
  CHECK(s.cluster.intra.bandwidth_Bps == h100.nvlink_bandwidth_Bps);
  CHECK(s.cluster.intra.latency == sim::us(1));
  CHECK(s.cluster.inter.kind == "infiniband");
  CHECK(s.cluster.inter.bandwidth_Bps == h100.nic_bandwidth_Bps);
  CHECK(s.cluster.inter.latency == sim::us(3));
  CHECK(s.layout.dp == 2);  // 32 GPUs / (8·2)
}

TEST_CASE("presets merge with explicit keys") {
  const wl::Scenario s = load_scenario_string(
      "cluster:\n"
      "  gpu: {preset: a100-80gb, memory: 40 GiB, matmul_efficiency: 0.5, kernel_overhead: 2 us}\n"
      "  gpus_per_node: 8\n"
      "model: {preset: llama3-8b, layers: 16, seq_len: 4096}\n"
      "layout: {tp: 8}\n",
      "m.yaml");
  const wl::GpuSpec a100 = *wl::gpu_preset("a100-80gb");
  CHECK(s.gpu.peak_flops == a100.peak_flops);            // inherited
  CHECK(s.gpu.hbm_bandwidth_Bps == a100.hbm_bandwidth_Bps);
  CHECK(close(s.gpu.memory_bytes, 40.0 * 1073741824.0));  // overridden
  CHECK(s.gpu.matmul_efficiency == 0.5);
  CHECK(s.gpu.kernel_overhead == sim::us(2));
  const wl::ModelSpec l8 = *wl::model_preset("llama3-8b");
  CHECK(s.model.layers == 16);
  CHECK(s.model.seq_len == 4096);
  CHECK(s.model.hidden == l8.hidden);
  CHECK(s.model.kv_heads == l8.kv_heads);
  CHECK(s.model.ffn_hidden == l8.ffn_hidden);
}

TEST_CASE("an MHA preset's kv_heads follows an overridden heads; a custom GPU and model need no preset") {
  const wl::Scenario s = load_scenario_string(
      "cluster:\n"
      "  gpu: {peak_tflops: 100, memory: 32 GB, hbm_bandwidth: 1 TB/s, nvlink_bandwidth: 100 GB/s, "
      "nic_bandwidth: 100 Gb/s}\n"
      "  gpus_per_node: 4\n"
      "model: {layers: 4, hidden: 1024, heads: 16, vocab: 32000, seq_len: 1024}\n"
      "layout: {tp: 4}\n",
      "c.yaml");
  CHECK(s.gpu.name == "custom");
  CHECK(close(s.gpu.peak_flops, 100e12));  // peak_tflops is a bare number in TFLOP/s
  CHECK(close(s.cluster.intra.bandwidth_Bps, 100e9));
  CHECK(close(s.cluster.inter.bandwidth_Bps, 12.5e9));
  CHECK(s.model.kv_heads == 16);          // default: MHA
  CHECK(s.model.ffn_hidden == 4 * 1024);  // default: 4·hidden
  CHECK(s.model.activation == wl::Activation::gelu);

  const wl::Scenario g = load_scenario_string(
      "cluster: {gpus_per_node: 8}\nmodel: {preset: gpt3-175b, heads: 64}\nlayout: {tp: 8}\n", "g.yaml");
  CHECK(g.model.heads == 64);
  CHECK(g.model.kv_heads == 64);
}

TEST_CASE("--set overrides compose, in order, creating keys as needed") {
  const wl::Scenario s = load_scenario_string(
      kBase, "base.yaml",
      {"layout.tp=2", "layout.tp=4", "layout.dp=2", "cluster.inter_node.bandwidth=100 Gb/s",
       "layout.stage_layers=[20, 12]", "perturbations.jitter.seed=7", "cluster.gpu.memory=40 GiB",
       "perturbations.devices[0].compute_slowdown=2", "name=renamed", "layout.sequence_parallel=true"});
  CHECK(s.name == "renamed");
  CHECK(s.layout.tp == 4);  // the later --set wins
  CHECK(s.layout.dp == 2);
  CHECK(close(s.cluster.inter.bandwidth_Bps, 12.5e9));
  CHECK(s.layout.stage_layers_mode == wl::StageLayersMode::explicit_list);
  CHECK(s.layout.stage_layers == std::vector<int>{20, 12});
  CHECK(s.perturbations.jitter.seed == 7);
  // `gpu: h100-sxm` became {preset: h100-sxm, memory: 40 GiB}.
  CHECK(s.gpu.peak_flops == wl::gpu_preset("h100-sxm")->peak_flops);
  CHECK(close(s.gpu.memory_bytes, 40.0 * 1073741824.0));
  CHECK(s.perturbations.devices[0].compute_slowdown == 2.0);
  CHECK(s.layout.sequence_parallel);
}

TEST_CASE("a --set under a preset named by its shorthand merges over that preset") {
  // `model: llama3-8b` + model.layers=16 is {preset: llama3-8b, layers: 16}: the other
  // fields stay the preset's, and an MHA/GQA preset keeps its kv_heads.
  const wl::Scenario s = load_scenario_string("model: llama3-8b\n", "m.yaml", {"model.layers=16"});
  const auto preset = wl::model_preset("llama3-8b");
  REQUIRE(preset);
  CHECK(s.model.layers == 16);
  CHECK(s.model.hidden == preset->hidden);
  CHECK(s.model.kv_heads == preset->kv_heads);
  CHECK(s.model.name == preset->name);
}

TEST_CASE("global_batch = microbatches · microbatch_size · dp; a --set microbatches replaces it") {
  const std::string y = edit(14, "  global_batch: 32\n  microbatch_size: 2");
  const wl::Scenario s = load_scenario_string(y, "g.yaml", {"layout.dp=2", "layout.tp=4"});
  CHECK(s.layout.microbatches == 8);  // 32 / (2·2)
  const wl::Scenario t = load_scenario_string(y, "g.yaml", {"layout.microbatches=3"});
  CHECK(t.layout.microbatches == 3);
}

TEST_CASE("precision names map to bytes per parameter") {
  const wl::Scenario s = load_scenario_string(
      append("precision: {weights: bf16, gradients: bf16, master: fp32, optimizer: adam-fp32}\n"), "p.yaml");
  // 16 B/param: 2 + 2 + 4 + 8.
  CHECK(s.precision.weights + s.precision.gradients + s.precision.master + s.precision.optimizer == 16);
  const wl::Scenario f = load_scenario_string(append("precision: {weights: fp32, optimizer: sgd}\n"), "p.yaml");
  CHECK(f.precision.weights == 4);
  CHECK(f.precision.master == 0);  // fp32 weights are their own master copy
  CHECK(f.precision.optimizer == 0);
}

TEST_CASE("MoE keys and routing forms") {
  const std::string moe =
      "cluster: {gpus_per_node: 8}\n"
      "model: {preset: llama3-8b, moe: {experts: 8, top_k: 2, routing: ROUTING}}\n"
      "layout: {dp: 8, ep: 4}\n";
  const auto with = [&](const std::string& r) {
    std::string y = moe;
    y.replace(y.find("ROUTING"), 7, r);
    return load_scenario_string(y, "moe.yaml");
  };
  const wl::Scenario b = with("balanced");
  CHECK(b.model.moe.experts == 8);
  CHECK(b.model.moe.top_k == 2);
  CHECK(b.model.moe.expert_ffn_hidden == b.model.ffn_hidden);
  CHECK(b.model.moe.routing == wl::RoutingKind::balanced);
  const wl::Scenario z = with("{skew: zipf, alpha: 1.2, seed: 9}");
  CHECK(z.model.moe.routing == wl::RoutingKind::zipf);
  CHECK(z.model.moe.zipf_alpha == 1.2);
  CHECK(z.model.moe.routing_seed == 9);
  const wl::Scenario l = with("{load: [4, 1, 1, 1, 1, 1, 1, 2]}");
  CHECK(l.model.moe.routing == wl::RoutingKind::load);
  CHECK(l.model.moe.load.size() == 8);
}

TEST_CASE("an explicit graph replaces the generator keys") {
  const wl::Scenario s = load_scenario_string(
      "cluster:\n"
      "  graph:\n"
      "    vertices: [{name: node0.gpu0, kind: gpu}, {name: node0.gpu1, kind: gpu}, {name: sw, kind: nvswitch}]\n"
      "    links:\n"
      "      - {from: node0.gpu0, to: sw, kind: nvlink, bandwidth: 100 GB/s}\n"
      "      - {from: node0.gpu1, to: sw, kind: nvlink, bandwidth: 100 GB/s, latency: 2 us, duplex: false}\n"
      "      - {from: sw, to: node0.gpu1, kind: nvlink, bandwidth: 100 GB/s, duplex: false}\n"  // gpu0 must reach gpu1
      "  network: ideal\n"
      "model: {preset: llama3-8b}\n"
      "layout: {tp: 2}\n"
      "perturbations: {devices: [{device: node0.gpu1, compute_slowdown: 2}]}\n",
      "graph.yaml");
  REQUIRE(s.cluster.graph.has_value());
  CHECK(s.cluster.graph->vertices.size() == 3);
  REQUIRE(s.cluster.graph->links.size() == 3);
  CHECK(s.cluster.graph->links[0].latency == sim::us(1));  // nvlink default
  CHECK(s.cluster.graph->links[1].latency == sim::us(2));
  CHECK(!s.cluster.graph->links[1].duplex);
  CHECK(s.cluster.ideal_network);
  CHECK(s.cluster.nodes == 1);
  CHECK(s.cluster.gpus_per_node == 2);
}

TEST_CASE("files: loaded by path; a missing file is a located error") {
  const std::string path = "test_scenario_tmp.yaml";
  {
    std::ofstream out(path);
    out << kBase;
  }
  const wl::Scenario s = load_scenario_file(path, {"layout.pp=1", "layout.dp=2"});
  CHECK(s.source == path);
  CHECK(s.layout.pp == 1);
  std::remove(path.c_str());
  try {
    load_scenario_file("no/such/file.yaml");
    FAIL("expected an error");
  } catch (const ScenarioError& e) {
    CHECK(std::string(e.what()).find("no/such/file.yaml:1:1: error:") == 0);
  }
}

TEST_CASE("every unknown key is reported, one line each") {
  const std::string msg = error_of(edit(12, "  tpp: 8\n  sequence_paralel: true"));
  CHECK(msg.find("bad.yaml:12:3: error: layout.tpp: unknown key (did you mean 'tp'?)") != std::string::npos);
  CHECK(msg.find("bad.yaml:13:3: error: layout.sequence_paralel: unknown key (did you mean 'sequence_parallel'?)") !=
        std::string::npos);
  CHECK(std::count(msg.begin(), msg.end(), '\n') == 1);
}

// ─── The table of bad scenarios ───
struct Bad {
  const char* what;
  std::string yaml;
  std::vector<std::string> sets;
  std::string file;  // expected source in the message
  int line;
  std::string key;      // key path that must appear ("" for file-level errors)
  std::string snippet;  // another substring the message must contain
};

TEST_CASE("bad scenarios: compiler-style message with file, line and key path") {
  const std::vector<Bad> table = {
      // yaml-cpp notices the unclosed flow list where the next key appears (line 13).
      {"YAML syntax: unclosed [", edit(12, "  tp: [8, 2"), {}, "bad.yaml", 13, "", "YAML syntax error"},
      {"YAML syntax: bad indentation", edit(13, " pp: 2"), {}, "bad.yaml", 13, "", "YAML syntax error"},
      {"YAML syntax: tab indentation", edit(13, "\tpp: 2"), {}, "bad.yaml", 13, "", "YAML syntax error"},
      {"unknown top-level key", edit(16, "perturbation:"), {}, "bad.yaml", 16, "perturbation",
       "did you mean 'perturbations'?"},
      {"unknown nested key", edit(12, "  tpp: 8"), {}, "bad.yaml", 12, "layout.tpp", "did you mean 'tp'?"},
      {"misspelled gpu preset", edit(3, "  gpu: h100-sxn"), {}, "bad.yaml", 3, "cluster.gpu",
       "did you mean 'h100-sxm'?"},
      {"misspelled model preset", edit(9, "  preset: llama3-8c"), {}, "bad.yaml", 9, "model.preset",
       "did you mean 'llama3-8b'?"},
      {"bandwidth without unit", edit(6, "  intra_node: {bandwidth: 450, latency: 1 us}"), {}, "bad.yaml", 6,
       "cluster.intra_node.bandwidth", "expected a quantity with a unit, like \"300 GB/s\""},
      {"latency without unit", edit(7, "  inter_node: {bandwidth: 400 Gb/s, latency: 3}"), {}, "bad.yaml", 7,
       "cluster.inter_node.latency", "expected a quantity with a unit"},
      {"memory with a bandwidth unit", edit(3, "  gpu: {preset: h100-sxm, memory: 80 GB/s}"), {}, "bad.yaml", 3,
       "cluster.gpu.memory", "is a bandwidth, expected a size"},
      {"string where an int belongs", edit(4, "  nodes: two"), {}, "bad.yaml", 4, "cluster.nodes",
       "expected an integer"},
      {"negative nodes", edit(4, "  nodes: -2"), {}, "bad.yaml", 4, "cluster.nodes", "at least 1"},
      {"zero gpus_per_node", edit(5, "  gpus_per_node: 0"), {}, "bad.yaml", 5, "cluster.gpus_per_node",
       "at least 1"},
      {"float tp", edit(12, "  tp: 2.5"), {}, "bad.yaml", 12, "layout.tp", "expected an integer, got 2.5"},
      {"huge float layers", edit(9, "  preset: llama3-8b\n  layers: 1e30"), {}, "bad.yaml", 10, "model.layers",
       "out of range"},
      {"huge integer nodes", edit(4, "  nodes: 99999999999999"), {}, "bad.yaml", 4, "cluster.nodes", "too large"},
      {"int64 overflow", edit(14, "  microbatches: 99999999999999999999999"), {}, "bad.yaml", 14,
       "layout.microbatches", "out of range"},
      {"dp·tp·pp != devices", edit(11, "  dp: 3"), {}, "bad.yaml", 10, "layout", "must equal the cluster's 16 GPUs"},
      {"tp not dividing heads", edit(5, "  gpus_per_node: 3") + "", {"layout.tp=3", "layout.pp=1", "cluster.nodes=1", "perturbations.devices=[]"},
       "--set", 1, "layout.tp", "must divide heads"},
      {"layers not divisible by pp", edit(13, "  pp: 3"), {"layout.tp=1", "cluster.nodes=1", "cluster.gpus_per_node=3", "perturbations.devices=[]"},
       "bad.yaml", 13, "layout.pp", "32"},
      {"stage_layers wrong sum", edit(15, "  stage_layers: [10, 10]"), {}, "bad.yaml", 15, "layout.stage_layers",
       "sums to 20"},
      {"unknown schedule", edit(15, "  schedule: 1f2b"), {}, "bad.yaml", 15, "layout.schedule",
       "did you mean '1f1b'?"},
      {"bad recompute", edit(15, "  recompute: partial"), {}, "bad.yaml", 15, "layout.recompute",
       "none, selective, every-second-matmul, full"},
      {"bad recompute ops", edit(15, "  recompute: {ops: half}"), {}, "bad.yaml", 15, "layout.recompute.ops",
       "expected one of none, selective, every-second-matmul, full"},
      {"bad recompute layers", edit(15, "  recompute: {ops: full, layers: every-zero}"), {}, "bad.yaml", 15,
       "layout.recompute.layers", "expected all, every-K or a list of layers"},
      {"recompute layer out of the model", edit(15, "  recompute: {ops: full, layers: [0, 99]}"), {}, "bad.yaml", 15,
       "layout.recompute.layers", "layers[1] = 99 is not a layer of the model"},
      {"recompute layers without ops", edit(15, "  recompute: {layers: every-2}"), {}, "bad.yaml", 15,
       "layout.recompute.layers", "but layout.recompute.ops is none"},
      {"unknown recompute key", edit(15, "  recompute: {ops: full, every: 2}"), {}, "bad.yaml", 15,
       "layout.recompute.every", "unknown key"},
      {"zero out of range", edit(15, "  zero: 5"), {}, "bad.yaml", 15, "layout.zero", "too large (at most 3)"},
      {"empty file", "", {}, "bad.yaml", 1, "", ":1:1: error: the scenario is empty"},
      {"comments only", "# nothing here\n", {}, "bad.yaml", 1, "", "the scenario is empty"},
      {"interleaved, m not a multiple of pp", edit(15, "  schedule: interleaved-1f1b\n  virtual_stages: 2"),
       {"layout.microbatches=3"}, "--set", 1, "layout.microbatches", "multiple of pp"},
      {"bad placement", edit(15, "  placement: [tp, dp, dp]"), {}, "bad.yaml", 15, "layout.placement",
       "not a permutation"},
      {"bad placement axis", edit(15, "  placement: [tp, dp, ep]"), {}, "bad.yaml", 15, "layout.placement[2]",
       "unknown value \"ep\""},
      {"ep not folding into tp·cp·dp", edit(9, "  preset: llama3-8b\n  moe: {experts: 8, top_k: 2}") + "",
       {"layout.ep=2", "layout.dp=1"}, "--set", 1, "layout.ep", "expert_tp·ep = 8·2 = 16 must divide tp·cp·dp = 8·1·1 = 8"},
      {"expert_tp not dividing the expert width", edit(9, "  preset: llama3-8b\n  moe: {experts: 8, top_k: 2}") + "",
       {"layout.expert_tp=3"}, "--set", 1, "layout.expert_tp", "must divide the experts' ffn width (14336)"},
      {"expert_tp on a dense model", kBase, {"layout.expert_tp=2"}, "--set", 1, "layout.expert_tp", "needs an MoE model"},
      {"unknown perturbed link", append("  links: [{link: node1.nic3->leaf4, bandwidth_factor: 0.5}]\n"), {}, "bad.yaml", 18,
       "perturbations.links[0].link", "did you mean 'node1.nic3->leaf3'?"},
      {"bad perturbation device", edit(17, "  devices: [{device: node2.gpu0}]"), {}, "bad.yaml", 17,
       "perturbations.devices[0].device", "no device \"node2.gpu0\""},
      {"malformed perturbation device", edit(17, "  devices: [{device: gpu3}]"), {}, "bad.yaml", 17,
       "perturbations.devices[0].device", "not a device name"},
      {"bad --set key", kBase, {"layout.tpp=4"}, "--set", 1, "layout.tpp", "did you mean 'tp'?"},
      {"bad --set value unit", kBase, {"layout.tp=8", "cluster.inter_node.bandwidth=100"}, "--set", 2,
       "cluster.inter_node.bandwidth", "expected a quantity with a unit"},
      {"--set without =", kBase, {"layout.tp"}, "--set", 1, "", "expected KEY=VALUE"},
      {"--set into a scalar", kBase, {"name.x=1"}, "--set", 1, "name.x", "cannot set a key inside a scalar"},
      {"--set bad YAML", kBase, {"layout.stage_layers=[1, 2"}, "--set", 1, "layout.stage_layers", "not valid YAML"},
      {"list where a map belongs", "cluster: {nodes: 2}\nmodel: {preset: llama3-8b}\nlayout: [1, 2]\n", {}, "bad.yaml", 3,
       "layout",
       "expected a map of keys, got a list"},
      {"duplicate key", edit(12, "  tp: 8\n  tp: 4"), {}, "bad.yaml", 13, "layout.tp", "duplicate key"},
      {"global_batch not a multiple", edit(14, "  global_batch: 7\n  microbatch_size: 2"), {}, "bad.yaml", 14,
       "layout.global_batch", "not a multiple of microbatch_size·dp"},
      {"global_batch and microbatches", edit(14, "  microbatches: 4\n  global_batch: 8"), {}, "bad.yaml", 15,
       "layout.global_batch", "cannot be combined"},
      {"bad fabric", edit(7, "  inter_node: {bandwidth: 400 Gb/s, fabric: fat-three}"), {}, "bad.yaml", 7,
       "cluster.inter_node.fabric", "did you mean 'fat-tree'?"},
      {"custom gpu missing keys", edit(3, "  gpu: {peak_tflops: 100}"), {}, "bad.yaml", 3, "cluster.gpu.memory",
       "missing required key"},
      {"empty gpu", edit(3, "  gpu:"), {}, "bad.yaml", 3, "cluster.gpu", "expected a GPU preset name or a map"},
      {"power limit above the TDP", edit(3, "  gpu: {preset: h100-sxm, power_limit: 900}"), {}, "bad.yaml", 3,
       "cluster.gpu.power_limit", "must be within [tdp / 4, tdp] = [175, 700] W"},
      {"power limit under a quarter of the TDP", edit(3, "  gpu: {preset: h100-sxm, power_limit: 100}"), {}, "bad.yaml", 3,
       "cluster.gpu.power_limit", "state the part's own peak_tflops"},
      {"power limit without a TDP",
       edit(3, "  gpu: {peak_tflops: 100, memory: 80 GB, hbm_bandwidth: 2 TB/s, nvlink_bandwidth: 100 GB/s, "
               "nic_bandwidth: 50 GB/s, power_limit: 300}"),
       {}, "bad.yaml", 3, "cluster.gpu.power_limit", "needs the GPU's TDP"},
      {"misspelled model shorthand", edit(8, "model: llama-70b\nx:"), {}, "bad.yaml", 8, "model.preset",
       "did you mean 'llama3-70b'?"},
      {"stray comma (yaml-cpp#1040 would hang)", "# c\n,# x\nb: 1\n", {}, "bad.yaml", 2, "", "unexpected ','"},
      {"missing model", "cluster: {nodes: 1}\n", {}, "bad.yaml", 1, "model", "missing required key"},
      {"two documents", std::string(kBase) + "---\nname: u\n", {}, "bad.yaml", 18, "", "more than one YAML document"},
      {"top level is a list", "- a\n- b\n", {}, "bad.yaml", 1, "", "expected a map of keys"},
      {"bool expected", edit(15, "  sequence_parallel: maybe"), {}, "bad.yaml", 15, "layout.sequence_parallel",
       "expected true or false"},
      {"slowdown zero", edit(17, "  devices: [{device: node1.gpu1, compute_slowdown: 0}]"), {}, "bad.yaml", 17,
       "perturbations.devices[0].compute_slowdown", "out of range"},
      {"zero bandwidth", edit(6, "  intra_node: {bandwidth: 0 GB/s}"), {}, "bad.yaml", 6,
       "cluster.intra_node.bandwidth", "greater than zero"},
      {"graph with generator keys", edit(5, "  gpus_per_node: 8\n  graph: {vertices: [{name: node0.gpu0, kind: gpu}]}"),
       {}, "bad.yaml", 4, "cluster.nodes", "cannot be combined with cluster.graph"},
      {"alias expansion bomb",
       "a: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
       "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
       "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\n",
       {}, "bad.yaml", 0, "", "expands to more than"},
  };
  CHECK(table.size() >= 25);
  for (const Bad& b : table) {
    const std::string what = b.what;
    CAPTURE(what);
    const std::string msg = error_of(b.yaml, b.sets);
    CAPTURE(msg);
    CHECK(msg.rfind(b.file + ":", 0) == 0);  // the first message names the file
    if (b.line > 0) CHECK(msg.find(fmt::format("{}:{}:", b.file, b.line)) != std::string::npos);
    CHECK(msg.find(": error: ") != std::string::npos);
    if (!b.key.empty()) CHECK(msg.find(" " + b.key + ": ") != std::string::npos);
    if (!b.snippet.empty()) CHECK(msg.find(b.snippet) != std::string::npos);
  }
}

TEST_CASE("a graph that cannot be built is a located error at load time") {
  // gpu1 -> sw only: nothing reaches gpu1. Found by wl::resolve (which builds the
  // topology), so it is an invalid scenario (exit 1), never an internal error later.
  const std::string err = error_of(
      "cluster:\n"
      "  graph:\n"
      "    vertices: [{name: node0.gpu0, kind: gpu}, {name: node0.gpu1, kind: gpu}, {name: sw, kind: nvswitch}]\n"
      "    links:\n"
      "      - {from: node0.gpu0, to: sw, kind: nvlink, bandwidth: 100 GB/s}\n"
      "      - {from: node0.gpu1, to: sw, kind: nvlink, bandwidth: 100 GB/s, duplex: false}\n"
      "model: {preset: llama3-8b}\n"
      "layout: {tp: 2}\n");
  CHECK(err.rfind("bad.yaml:2:3: error: cluster.graph: GPU node0.gpu0 cannot reach GPU node0.gpu1", 0) == 0);
}

TEST_CASE("every key of the key table is read by the loader (none is silently ignored)") {
  // Give each key a value no key accepts ([[1]]): the loader must report it under
  // the key's own path (or its first entry's, for a list). List entries start from a valid entry; keys whose siblings
  // are required get those siblings first.
  struct Entry { std::string list, valid; };
  const std::vector<std::pair<std::string, Entry>> lists{
      {"cluster.graph.vertices[]", {"cluster.graph.vertices", "name: node0.gpu0, kind: gpu"}},
      {"cluster.graph.links[]", {"cluster.graph.links", "from: node0.gpu0, to: node0.gpu0, kind: nvlink, bandwidth: 1 GB/s"}},
      {"perturbations.devices[]", {"perturbations.devices", "device: node0.gpu0"}},
      {"perturbations.links[]", {"perturbations.links", "link: x"}},
  };
  for (const auto& k : tools::scenario_keys()) {
    const std::string path(k.path);
    CAPTURE(path);
    std::vector<std::string> sets;
    std::string shown = path;
    if (const auto b = path.find("[]."); b != std::string::npos) {
      const std::string parent = path.substr(0, b + 2), leaf = path.substr(b + 3);
      const auto it = std::find_if(lists.begin(), lists.end(), [&](const auto& l) { return l.first == parent; });
      REQUIRE(it != lists.end());
      std::string entry;
      for (const std::string field : {"name", "kind", "from", "to", "bandwidth", "device", "link"}) {
        const auto at = it->second.valid.find(field + ": ");
        if (at == std::string::npos || field == leaf) continue;
        const auto end = it->second.valid.find(',', at);
        entry += (entry.empty() ? "" : ", ") + it->second.valid.substr(at, end == std::string::npos ? end : end - at);
      }
      entry += (entry.empty() ? "" : ", ") + leaf + ": [[1]]";
      if (parent == "cluster.graph.links[]") sets.push_back("cluster.graph.vertices=[{name: node0.gpu0, kind: gpu}]");
      sets.push_back(fmt::format("{}=[{{{}}}]", it->second.list, entry));
      shown = fmt::format("{}[0].{}", it->second.list, leaf);
    } else {
      if (path.rfind("model.moe.routing.", 0) == 0)
        sets = {"model.moe.experts=8", "model.moe.top_k=2", "model.moe.routing.skew=zipf"};
      if (path == "model.moe.routing.skew" || path == "model.moe.routing.load") sets.resize(2);  // no skew
      sets.push_back(path + "=[[1]]");
    }
    std::string err = "<no error>";
    try {
      load_scenario_string("model: {preset: llama3-8b}\n", "keys.yaml", sets);
    } catch (const ScenarioError& e) {
      err = e.what();
    }
    CAPTURE(err);
    // A list's own entries carry the error when the list is given one.
    CHECK((err.find(shown + ": ") != std::string::npos || err.find(shown + "[0]: ") != std::string::npos));
  }
}

TEST_CASE("implementation: a preset's bundle, explicit keys override it; model.dropout; defaults megatron-core") {
  const wl::Scenario plain = load_scenario_string(kBase, "p.yaml");
  CHECK(plain.implementation.preset == "megatron-core");
  CHECK(plain.implementation.attention == wl::AttentionKind::flash);
  CHECK(plain.implementation.fused_elementwise);
  CHECK(plain.model.dropout == 0);

  const wl::Scenario fsdp = load_scenario_string(append("implementation: {preset: pytorch-fsdp}\n"), "f.yaml");
  const auto bundle = *wl::implementation_preset("pytorch-fsdp");
  CHECK(fsdp.implementation.preset == "pytorch-fsdp");
  CHECK_FALSE(fsdp.implementation.fused_elementwise);
  CHECK(fsdp.implementation.profile.dispatch_overhead_s == bundle.profile.dispatch_overhead_s);
  CHECK(fsdp.implementation.profile.module_overhead_s == bundle.profile.module_overhead_s);

  const wl::Scenario over = load_scenario_string(
      append("implementation: {preset: pytorch-fsdp, attention: triton, fused_elementwise: true}\n"), "o.yaml");
  CHECK(over.implementation.attention == wl::AttentionKind::triton);
  CHECK(over.implementation.fused_elementwise);
  CHECK(over.implementation.profile.name == "pytorch-fsdp");

  const wl::Scenario old = load_scenario_string(append("implementation: {preset: megatron-lm-2021}\n"), "m.yaml");
  CHECK(old.implementation.attention == wl::AttentionKind::unfused);

  const wl::Scenario drop = load_scenario_string(edit(9, "  preset: llama3-8b\n  dropout: 0.1"), "d.yaml");
  CHECK(drop.model.dropout == 0.1);

  CHECK(error_of(append("implementation: {preset: jax}\n")).find("implementation.preset") != std::string::npos);
  CHECK(error_of(append("implementation: {attention: sdpa}\n")).find("implementation.attention") != std::string::npos);
  CHECK(error_of(edit(9, "  preset: llama3-8b\n  dropout: 1")).find("model.dropout") != std::string::npos);
}

TEST_CASE("cluster.gpu.profile: a calibrate profile over the preset; another GPU's profile is an error") {
  const std::string prof = "test_scenario_profile_tmp.yaml";
  std::ofstream(prof) << "gpu: h100-sxm\nconstants:\n  gemm_sustained_fraction: 0.61\n";
  const wl::Scenario s = load_scenario_string(edit(3, "  gpu: {preset: h100-sxm, profile: " + prof + "}"), "g.yaml");
  CHECK(s.gpu.compute.gemm_sustained_fraction == 0.61);
  CHECK(s.gpu.compute.flash_fwd_efficiency == wl::gpu_preset("h100-sxm")->compute.flash_fwd_efficiency);
  CHECK(error_of(edit(3, "  gpu: {preset: a100-80gb, profile: " + prof + "}")).find("cluster.gpu.profile") !=
        std::string::npos);
  std::remove(prof.c_str());
}

// cluster.gpu.kernel_overhead and matmul_efficiency on a preset GPU reach the compute
// profile that prices the step (they used to be read and then ignored).
TEST_CASE("GPU compute overrides on a preset reach its compute profile") {
  const wl::Scenario base = load_default_scenario();
  CHECK(base.gpu.compute.launch_overhead_s == doctest::Approx(4e-6));
  const wl::Scenario slow_launch = load_default_scenario({"cluster.gpu.kernel_overhead=1 ms"});
  CHECK(slow_launch.gpu.compute.launch_overhead_s == doctest::Approx(1e-3));
  CHECK(wl::compute_profile_of(slow_launch.gpu).launch_overhead_s == doctest::Approx(1e-3));
  const wl::Scenario weak = load_default_scenario({"cluster.gpu.matmul_efficiency=0.3"});
  CHECK(wl::compute_profile_of(weak.gpu).gemm_sustained_fraction == doctest::Approx(0.3));
  // Untouched keys keep the preset's profile.
  CHECK(wl::compute_profile_of(weak.gpu).launch_overhead_s == doctest::Approx(4e-6));
  // A GPU map without a preset: kernel_overhead is its launch overhead too.
  const wl::Scenario custom = load_default_scenario(
      {"cluster.gpu={peak_tflops: 400, memory: 80 GB, hbm_bandwidth: 2 TB/s, nvlink_bandwidth: 450 GB/s, "
       "nic_bandwidth: 50 GB/s, kernel_overhead: 7 us}"});
  CHECK(wl::compute_profile_of(custom.gpu).launch_overhead_s == doctest::Approx(7e-6));
}

// The small-microbatch warning quotes the kernel model's own GEMM efficiencies: thin
// GEMMs on H100 lose whole waves of tiles, so the step really is slower by about what
// it says (the scenarios/small-microbatch.yaml pair: 512 vs 2048 rows).
static const wl::Warning* find_warning(const wl::Result& r, const std::string& code) {
  for (const auto& w : r.warnings)
    if (w.code == code) return &w;
  return nullptr;
}

TEST_CASE("small-microbatch: the warning's loss matches the kernel model, and it is silent at the floor") {
  const ls::wl::ResolvedScenario thin = ls::tools::load_scenario_file(SCENARIOS_DIR "/small-microbatch.yaml", {});
  const ls::wl::ResolvedScenario full =
      ls::tools::load_scenario_file(SCENARIOS_DIR "/small-microbatch.yaml", {"layout.microbatch_size=4"});
  wl::SimOptions o;
  o.what_if = false;
  const wl::Result thin_r = simulate(thin, o);
  const wl::Result full_r = simulate(full, o);
  const wl::Warning* w = find_warning(thin_r, "small-microbatch");
  REQUIRE(w != nullptr);
  CHECK(find_warning(full_r, "small-microbatch") == nullptr);
  // "(N% of its throughput lost)": the GEMM loss bounds the compute's loss from above
  // (attention and element-wise work do not change per row) and is within 2x of it. The
  // step loses more than its compute: a thinner last backward hides less of the gradient
  // reduction behind it.
  const auto at = w->message.find("% of its throughput lost");
  REQUIRE(at != std::string::npos);
  const auto open = w->message.rfind('(', at);
  const double gemm_loss = std::stod(w->message.substr(open + 1, at - open - 1)) / 100;
  const double compute_loss = 1 - full_r.per_stage[0].compute_s / thin_r.per_stage[0].compute_s;
  CHECK(compute_loss > 0);
  CHECK(gemm_loss >= compute_loss * 0.9);
  CHECK(gemm_loss <= compute_loss * 2);
  CHECK(full_r.step_time_s < thin_r.step_time_s);
}
