// tests/test_json_report.cpp — the report library on hand-built Results (no simulation):
// JSON summary keys/order/determinism, Chrome trace writer (checked by the trace
// checker), unit formatters, summary text, sweep expansion/CSV/JSON, SVG plot.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "tools/report/plot.hpp"
#include "tools/report/report_json.hpp"
#include "tools/report/human_units.hpp"
#include "tools/report/summary.hpp"
#include "tools/study/sweep.hpp"
#include "tools/scenario/scenario.hpp"
#include "tools/study/sweep_shard.hpp"
#include "tools/report/trace.hpp"
#include "tools/report/trace_check.hpp"

using namespace ls;
using nlohmann::json;

namespace {

// Two-stage pipeline, one micro-batch, a TP all-reduce nested in a forward, a
// pipeline send/recv pair joined by a flow, a critical span and two counter tracks.
wl::Result sample_result() {
  wl::Result r;
  r.scenario = "unit-test";
  r.devices = 2;
  r.steps = 1;
  r.gpus_per_node = 1;  // two nodes → two processes in the trace
  r.step_time_s = 1.5;
  r.tokens_per_s = 2048 / 1.5;
  r.model_flops_per_step = 3e15;
  r.hardware_flops_per_step = 4e15;
  r.tflops_per_gpu = 4e15 / 1.5 / 2 / 1e12;
  r.mfu = 0.4;
  r.hfu = 0.5;
  r.stages = 2;
  r.microbatches = 1;
  r.schedule = "1f1b";
  r.bubble_fraction_analytic = 0.5;  // (p-1)/(m+p-1) = 1/2
  r.bubble_fraction = 0.5;
  r.per_stage = {{0, 6, 0.6, 0.5, 0.5, 0.6}, {1, 6, 0.6, 0.5, 0.5, 0.6}};
  r.comm[static_cast<int>(wl::Axis::tp)].bytes_per_device = 1e9;
  r.comm[static_cast<int>(wl::Axis::tp)].exposed_s = 0.01;
  r.comm[static_cast<int>(wl::Axis::pp)].bytes_per_device = 2e6;
  r.comm[static_cast<int>(wl::Axis::pp)].exposed_s = 0.002;
  r.links_by_kind = {{"nvlink", 4, 2e9, 0.1, 0.2}, {"infiniband", 2, 4e6, 0.01, 0.02}};
  r.busiest_links = {{"node0.gpu0->nvswitch0", "nvlink", 1e9, 0.2}};
  wl::LinkGroup g;
  g.pattern = "node0.gpu*->nvswitch0";
  g.link_class = "nvlink node*.gpu*->nvswitch*";
  g.kind = "nvlink";
  g.example = "node0.gpu0->nvswitch0";
  g.count = 2;
  g.bytes = 1e9;
  g.utilization = 0.2;
  g.busy_fraction = 0.4;
  g.busy_utilization = 0.5;
  g.bottleneck_s = 0.3;
  g.bottleneck_fraction = 0.2;
  g.busiest_of_class = true;
  r.link_groups = {g};
  r.link_group_count = 3;
  r.memory_capacity_bytes = 80e9;
  r.memory_fits = true;
  r.max_peak_bytes = 40e9;
  wl::MemoryTerms m0;
  m0.stage = 0; m0.weights = 1e9; m0.gradients = 2e9; m0.master = 2e9; m0.optimizer = 4e9; m0.activations = 30e9; m0.buffers = 1e9; m0.peak = 40e9;
  wl::MemoryTerms m1 = m0;
  m1.stage = 1; m1.activations = 20e9; m1.peak = 30e9;
  r.memory_per_stage = {m0, m1};
  r.critical_path.device = 1;
  r.critical_path.share_compute = 0.8;
  r.critical_path.share_comm = 0.15;
  r.critical_path.share_wait = 0.05;
  r.warnings = {{"small-microbatch", "only 1 micro-batch for 2 stages"}};
  r.step_stats = {1.5, 1.5, 1.5, 1.5, {1.5}};
  r.events = 1234;
  r.wall_s = 0.25;
  r.device_names = {"node0.gpu0", "node1.gpu0"};

  auto span = [](int dev, int track, wl::Work w, sim::OpKind k, int mb, int lb, int le, std::int64_t a_ps, std::int64_t b_ps) {
    wl::Span s;
    s.device = dev;
    s.track = static_cast<std::uint8_t>(track);
    s.work = w;
    s.kind = k;
    s.microbatch = mb;
    s.layer_begin = lb;
    s.layer_end = le;
    s.start = sim::ps(a_ps);
    s.end = sim::ps(b_ps);
    return s;
  };
  // stage 0: F mb0 L0-5 on [0, 100us), TP all-reduce nested inside on the tp track
  r.spans.push_back(span(0, 0, wl::Work::forward, sim::OpKind::compute, 0, 0, 6, 0, 100'000'000));
  r.spans.push_back(span(0, 1, wl::Work::forward, sim::OpKind::collective, 0, -1, -1, 40'000'000, 50'000'001));
  auto send = span(0, 2, wl::Work::forward, sim::OpKind::send, 0, -1, -1, 100'000'000, 110'000'000);
  send.flow_id = 7;
  send.flow_out = true;
  r.spans.push_back(send);
  auto recv = span(1, 2, wl::Work::forward, sim::OpKind::recv, 0, -1, -1, 0, 110'000'000);
  recv.flow_id = 7;
  r.spans.push_back(recv);
  auto f1 = span(1, 0, wl::Work::forward, sim::OpKind::compute, 0, 6, 12, 110'000'000, 210'000'000);
  f1.critical = true;
  r.spans.push_back(f1);
  r.spans.push_back(span(1, 0, wl::Work::optimizer, sim::OpKind::compute, -1, -1, -1, 300'000'000, 300'000'123));

  wl::CounterTrack mem;
  mem.name = "mem node0.gpu0";
  mem.device = 0;
  mem.node = 0;
  mem.samples = {{sim::ps(0), 1e9}, {sim::ps(100'000'000), 2.5e9}, {sim::ps(300'000'000), 1e9}};
  wl::CounterTrack util;
  util.name = "util node0.gpu0->node1.gpu0";
  util.device = -1;
  util.node = 0;
  util.samples = {{sim::ps(100'000'000), 0.75}, {sim::ps(110'000'000), 0}};
  r.counters = {mem, util};
  return r;
}

}  // namespace

TEST_CASE("JSON summary has every contract key, in contract order") {
  const auto j = tools::to_json(sample_result());
  const std::vector<std::string> top = {"scenario", "devices", "steps", "step_time_s", "tokens_per_s", "model_flops_per_step",
                                        "hardware_flops_per_step", "tflops_per_gpu", "mfu", "hfu", "pipeline", "comm", "links",
                                        "memory", "critical_path", "warnings"};
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  REQUIRE(keys.size() >= top.size());
  for (std::size_t i = 0; i < top.size(); ++i) CHECK(keys[i] == top[i]);  // contract keys first, in order

  for (const char* k : {"stages", "microbatches", "schedule", "virtual_stages", "bubble_fraction_analytic", "bubble_fraction", "per_stage"})
    CHECK(j["pipeline"].contains(k));
  for (const char* k : {"stage", "layers", "compute_s", "bubble_fraction", "idle_fraction"}) CHECK(j["pipeline"]["per_stage"][0].contains(k));
  for (const char* a : {"tp", "pp", "dp", "ep"}) {
    CHECK(j["comm"][a].contains("bytes_per_device"));
    CHECK(j["comm"][a].contains("exposed_s"));
  }
  for (const char* k : {"count", "bytes", "mean_utilization", "max_utilization"}) CHECK(j["links"]["by_kind"]["nvlink"].contains(k));
  for (const char* k : {"name", "kind", "bytes", "utilization"}) CHECK(j["links"]["busiest"][0].contains(k));
  for (const char* k : {"capacity_bytes", "fits", "max_peak_bytes", "per_stage"}) CHECK(j["memory"].contains(k));
  for (const char* k : {"stage", "weights", "gradients", "optimizer", "activations", "peak"}) CHECK(j["memory"]["per_stage"][0].contains(k));
  for (const char* k : {"device", "share_compute", "share_comm", "share_wait"}) CHECK(j["critical_path"].contains(k));
  CHECK(j["warnings"][0]["code"] == "small-microbatch");
  CHECK(j["warnings"][0].contains("message"));
  // extras
  for (const char* k : {"model", "gpu", "implementation", "layout", "seq_len", "microbatch_size", "microbatches", "global_batch",
                        "compute_precision"})
    CHECK(j["scenario_resolved"].contains(k));
  for (const char* k : {"tp", "pp", "dp", "cp", "ep", "zero", "sequence_parallel", "recompute", "schedule", "virtual_stages"})
    CHECK(j["scenario_resolved"]["layout"].contains(k));
  CHECK(j["step_stats"]["p99_s"] == 1.5);
  CHECK(j["memory"]["per_stage"][0]["master"] == 2e9);
  CHECK(j["engine"]["events"] == 1234);
  CHECK_FALSE(j["engine"].contains("wall_s"));  // wall time is opt-in: it breaks byte-identity
  CHECK(tools::to_json(sample_result(), {.include_wall_time = true})["engine"]["wall_s"] == 0.25);
}

TEST_CASE("JSON summary values are the Result's, exactly") {
  const auto j = tools::to_json(sample_result());
  // Shortest round-trip doubles: parsing the text gives back the same bits.
  const json back = json::parse(tools::to_json_string(sample_result()));
  CHECK(back["tokens_per_s"].get<double>() == 2048 / 1.5);
  CHECK(back["pipeline"]["bubble_fraction_analytic"].get<double>() == 0.5);
  CHECK(back["memory"]["fits"] == true);
  CHECK(j["comm"]["tp"]["bytes_per_device"] == 1e9);
  CHECK(j["links"]["by_kind"]["infiniband"]["count"] == 2);
}

TEST_CASE("JSON summary is deterministic and NaN-safe") {
  CHECK(tools::to_json_string(sample_result()) == tools::to_json_string(sample_result()));
  auto r = sample_result();
  r.mfu = std::numeric_limits<double>::quiet_NaN();
  r.hfu = std::numeric_limits<double>::infinity();
  const json back = json::parse(tools::to_json_string(r));
  CHECK(back["mfu"].is_null());
  CHECK(back["hfu"].is_null());
}

TEST_CASE("span names follow the contract") {
  wl::Span s;
  s.work = wl::Work::forward;
  s.microbatch = 3;
  s.layer_begin = 12;
  s.layer_end = 18;
  CHECK(tools::span_name(s) == "F mb3 L12-17");
  s.work = wl::Work::backward;
  CHECK(tools::span_name(s) == "B mb3 L12-17");
  s.work = wl::Work::recompute;
  CHECK(tools::span_name(s) == "R mb3 L12-17");
  s.work = wl::Work::backward_weight;
  s.layer_begin = s.layer_end = -1;
  CHECK(tools::span_name(s) == "W mb3");
  s.work = wl::Work::optimizer;
  s.microbatch = -1;
  CHECK(tools::span_name(s) == "opt");
  s.kind = sim::OpKind::collective;
  s.track = wl::track::tp;
  s.coll = sim::CollOp::all_reduce;
  CHECK(tools::span_name(s) == "AR tp");
  s.track = wl::track::dp;
  s.coll = sim::CollOp::reduce_scatter;
  CHECK(tools::span_name(s) == "RS dp");
  s.kind = sim::OpKind::send;
  s.work = wl::Work::forward;
  s.microbatch = 2;
  CHECK(tools::span_name(s) == "send F mb2");
}

TEST_CASE("Chrome trace: structure, exact timestamps, flows, and it passes the checker") {
  const auto r = sample_result();
  const std::string text = tools::chrome_trace_json(r);
  CHECK(text == tools::chrome_trace_json(r));  // deterministic

  const auto rep = tools::check_trace_text(text);
  for (const auto& v : rep.violations) MESSAGE(v);
  CHECK(rep.ok());
  CHECK(rep.unordered_tracks == 0);  // each track in start order: checked with stacks, in one read
  CHECK(rep.slices == 6);
  CHECK(rep.flows == 1);
  CHECK(rep.counters == 5);

  const json j = json::parse(text);
  CHECK(j["displayTimeUnit"] == "ns");
  CHECK(j["metadata"]["scenario"] == "unit-test");
  int x = 0;
  bool saw_crit = false, saw_out = false, saw_in = false;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    ++x;
    // tid = device * 8 + track; pid = node
    if (e["name"] == "AR tp") {
      CHECK(e["tid"] == 1);
      CHECK(e["pid"] == 0);
    }
    if (e["name"] == "opt") {
      CHECK(e["tid"] == 8);
      CHECK(e["pid"] == 1);
    }
    if (e.contains("flow_out")) { saw_out = true; CHECK(e["bind_id"] == 7); CHECK(e["flow_out"] == true); }
    if (e.contains("flow_in")) { saw_in = true; CHECK(e["bind_id"] == 7); CHECK(e["flow_in"] == true); }
    if (e["name"].get<std::string>().find("[crit]") != std::string::npos) {
      saw_crit = true;
      CHECK(e["cat"] == "compute,critical");
    }
  }
  CHECK(x == 6);
  CHECK(saw_out);
  CHECK(saw_in);
  CHECK(saw_crit);
  // Slice times on the 1/64 us grid (15625 ps): 10'000'001 ps → 10.000000 us, 123 ps → 0;
  // the exact durations stay in args.dur_ps.
  CHECK(text.find("\"ts\":40.000000,\"dur\":10.000000") != std::string::npos);
  CHECK(text.find("\"dur_ps\":10000001") != std::string::npos);
  CHECK(text.find("\"ts\":300.000000,\"dur\":0.000000") != std::string::npos);
  CHECK(text.find("\"dur_ps\":123") != std::string::npos);
  CHECK(text.find("process_name") != std::string::npos);
  CHECK(text.find("thread_sort_index") != std::string::npos);
}

TEST_CASE("Chrome trace: a perturbed device's tracks are marked in their thread names") {
  auto r = sample_result();
  wl::PerturbedDevice pd;
  pd.device = 1;
  pd.compute_slowdown = 1.5;
  r.perturbed_devices.push_back(pd);
  const std::string text = tools::chrome_trace_json(r);
  CHECK(tools::check_trace_text(text).ok());
  int marked = 0, plain = 0;
  const json j = json::parse(text);
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "M" || e["name"] != "thread_name") continue;
    const std::string name = e["args"]["name"];
    if (name.find(" [perturbed 1.50x]") != std::string::npos) {
      ++marked;
      CHECK(e["tid"].get<int>() / 8 == 1);  // device 1's tracks only
    } else {
      ++plain;
    }
  }
  CHECK(marked > 0);
  CHECK(plain > 0);
}

TEST_CASE("Chrome trace: a flow with one end outside the traced devices is dropped") {
  auto r = sample_result();
  for (auto& s : r.spans)
    if (s.flow_id == 7 && !s.flow_out) s.flow_id = 0;  // receiver not traced
  const std::string text = tools::chrome_trace_json(r);
  CHECK(text.find("bind_id") == std::string::npos);
  CHECK(tools::check_trace_text(text).ok());
}

TEST_CASE("Chrome trace: .gz is written compressed and reads back identically") {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string gz = (dir / "ls_test_trace.json.gz").string();
  const std::string plain = (dir / "ls_test_trace.json").string();
  const auto r = sample_result();
  tools::write_chrome_trace(r, gz);
  tools::write_chrome_trace(r, plain);
  std::FILE* f = std::fopen(gz.c_str(), "rb");
  REQUIRE(f);
  unsigned char magic[2] = {0, 0};
  CHECK(std::fread(magic, 1, 2, f) == 2);
  std::fclose(f);
  CHECK(magic[0] == 0x1f);  // gzip magic (RFC 1952)
  CHECK(magic[1] == 0x8b);
  CHECK(tools::read_text_file(gz) == tools::chrome_trace_json(r));
  CHECK(tools::read_text_file(plain) == tools::chrome_trace_json(r));
  CHECK(tools::check_trace_file(gz).ok());
  std::filesystem::remove(gz);
  std::filesystem::remove(plain);
}

TEST_CASE("unit formatters") {
  CHECK(tools::human_seconds(1.234) == "1.234 s");
  CHECK(tools::human_seconds(0.01234) == "12.34 ms");
  CHECK(tools::human_seconds(3e-7) == "300.0 ns");
  CHECK(tools::human_seconds(0) == "0 s");
  CHECK(tools::human_bytes(19.69e9) == "19.69 GB");
  CHECK(tools::human_bytes(512) == "512 B");
  CHECK(tools::human_bytes(1.5e12) == "1.500 TB");
  CHECK(tools::human_flops(312e12) == "312.0 TFLOP/s");
  CHECK(tools::human_count(1234567) == "1.235 M");
  CHECK(tools::percent(0.1234) == "12.34%");
  CHECK(tools::human_seconds(std::numeric_limits<double>::quiet_NaN()) == "n/a");
}

TEST_CASE("summary table shows the headline numbers, stages, memory and warnings") {
  const std::string s = tools::format_summary(sample_result());
  CHECK(s.find("1.500 s") != std::string::npos);         // step time
  CHECK(s.find("40.00%") != std::string::npos);          // MFU
  CHECK(s.find("50.00% measured, 50.00% analytic") != std::string::npos);
  CHECK(s.find("80.00 GB") != std::string::npos);        // capacity
  CHECK(s.find("fits, peak 40.00 GB") != std::string::npos);
  CHECK(s.find("node0.gpu*->nvswitch0 x2") != std::string::npos);  // the link group row
  CHECK(s.find("Link groups (of 3;") != std::string::npos);
  CHECK(s.find("warning [small-microbatch]") != std::string::npos);
  auto r = sample_result();
  r.memory_fits = false;
  r.max_peak_bytes = 90e9;
  CHECK(tools::format_summary(r).find("DOES NOT FIT") != std::string::npos);
  // Offload's PCIe traffic gets a line only where the scenario offloads.
  CHECK(s.find("over PCIe") == std::string::npos);
  r.offload.present = true;
  r.offload.pcie_bytes_per_device = 12e9;
  r.offload.pcie_utilization = 0.25;
  CHECK(tools::format_summary(r).find("offload                12.00 GB over PCIe per GPU per step (busiest stage), 25.00% of the link's rate") !=
        std::string::npos);
}

TEST_CASE("sweep: list parsing, cartesian product in input order") {
  auto a = tools::parse_sweep_set("layout.microbatches=1,2, 4,8");
  CHECK(a.key == "layout.microbatches");
  CHECK(a.values == std::vector<std::string>{"1", "2", "4", "8"});
  auto b = tools::parse_sweep_set("layout.stage_layers=[4,4],[2,6]");
  CHECK(b.values == std::vector<std::string>{"[4,4]", "[2,6]"});
  CHECK_THROWS_AS(tools::parse_sweep_set("layout.tp"), std::invalid_argument);
  CHECK_THROWS_AS(tools::parse_sweep_set("=1,2"), std::invalid_argument);
  CHECK_THROWS_AS(tools::parse_sweep_set("layout.tp=1,,2"), std::invalid_argument);

  auto tp = tools::parse_sweep_set("layout.tp=1,2");
  const auto pts = tools::expand_sweep({a, tp});
  REQUIRE(pts.size() == 8);  // 4 × 2
  CHECK(pts[0] == tools::SweepPoint{{"layout.microbatches", "1"}, {"layout.tp", "1"}});
  CHECK(pts[1] == tools::SweepPoint{{"layout.microbatches", "1"}, {"layout.tp", "2"}});
  CHECK(pts[7] == tools::SweepPoint{{"layout.microbatches", "8"}, {"layout.tp", "2"}});
  CHECK(tools::point_sets(pts[7]) == std::vector<std::string>{"layout.microbatches=8", "layout.tp=2"});
  CHECK(tools::expand_sweep({}).size() == 1);
}

TEST_CASE("sweep: parallel runner keeps input order and captures errors") {
  auto axis = tools::parse_sweep_set("x=1,2,3,4,5,6,7,8,9,10,11,12");
  const auto pts = tools::expand_sweep({axis});
  std::size_t calls = 0;
  const auto out = tools::run_sweep(
      pts,
      [](const tools::SweepPoint& p) {
        const int v = std::stoi(p[0].second);
        if (v == 5) throw std::invalid_argument("five is not allowed");
        wl::Result r;
        r.step_time_s = v;
        r.bubble_fraction_analytic = 1.0 / v;
        return r;
      },
      4, [&](std::size_t, std::size_t done, std::size_t total) { ++calls; CHECK(done <= total); });
  CHECK(calls == 12);
  REQUIRE(out.size() == 12);
  for (std::size_t i = 0; i < out.size(); ++i) {
    CHECK(out[i].point == pts[i]);
    if (i == 4) {
      CHECK_FALSE(out[i].result.has_value());
      CHECK(out[i].error_message == "five is not allowed");
    } else {
      REQUIRE(out[i].result.has_value());
      CHECK(out[i].result->step_time_s == static_cast<double>(i + 1));
    }
  }
  const std::string csv = tools::sweep_csv({"x"}, out);
  CHECK(csv.rfind("x,global_batch,step_time_s,tokens_per_s,mfu,bubble_fraction,bubble_fraction_analytic,max_peak_bytes,fits,error\n", 0) == 0);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 13);  // header + one row per point
  CHECK(csv.find("\n2,0,2,0,0,0,0.5,0,true,\n") != std::string::npos);  // a hand-built Result: global batch 0
  CHECK(csv.find("\n5,,,,,,,,error,five is not allowed\n") != std::string::npos);
  const auto j = tools::sweep_json(out);
  REQUIRE(j.size() == 12);
  CHECK(j[0]["set"]["x"] == 1);  // typed: integers stay integers
  CHECK(j[0]["summary"]["step_time_s"] == 1.0);
  CHECK(j[4]["error"] == "five is not allowed");
}

TEST_CASE("sweep shards: an outcome sent as its JSON entry writes the same CSV and JSON") {
  CHECK(tools::shard_points(10, 1, 3) == std::vector<std::size_t>{1, 4, 7});
  CHECK(tools::shard_points(2, 2, 3).empty());
  const auto pts = tools::expand_sweep({tools::parse_sweep_set("x=1,2,3")});
  const auto out = tools::run_sweep(
      pts,
      [](const tools::SweepPoint& p) {
        if (p[0].second == "2") throw tools::ScenarioError("two is invalid");
        if (p[0].second == "3") throw std::logic_error("a bug");
        wl::Result r;
        r.scenario = "sweep-point";
        r.step_time_s = 0.1;  // not exact in binary: the decimal must round-trip
        r.tokens_per_s = 1.0 / 3.0;
        r.memory_fits = false;
        r.max_peak_bytes = 8e10;
        r.training.has_tokens = r.training.has_price = true;
        r.training.time_to_train_s = 1e6 / 7;
        r.training.cost = 12.5;
        r.training.currency = "USD";
        return r;
      },
      1);
  const auto sent = tools::sweep_json(out, true);
  REQUIRE(sent.size() == 3);
  CHECK(sent[1]["point"] == 1);
  CHECK_FALSE(sent[1].contains("internal"));  // an answer, not a bug
  CHECK(sent[2]["internal"] == true);
  std::vector<tools::SweepOutcome> back;
  for (std::size_t i = 0; i < 3; ++i)
    back.push_back(tools::outcome_from_entry(nlohmann::ordered_json::parse(sent[i].dump()), pts[i], i, "test"));
  CHECK(tools::sweep_csv({"x"}, back) == tools::sweep_csv({"x"}, out));
  CHECK(tools::sweep_json(back, true).dump() == sent.dump());
  CHECK_FALSE(tools::internal_error(back[1]));
  CHECK(tools::internal_error(back[2]));
}

TEST_CASE("SVG plot: two panels, ticks, labels and legend") {
  tools::PlotSpec spec;
  spec.title = "sweep <test>";
  spec.x_label = "layout.microbatches";
  spec.x_ticks = {"1", "2", "4", "8"};
  spec.panels = {{"step time (s)", {{"step time", {4, 2.5, 1.75, 1.375}, "#1f77b4", false}}, false},
                 {"bubble fraction", {{"measured", {0.8, 0.67, 0.5, 0.33}, "#d62728", false},
                                      {"analytic", {0.8, 0.667, 0.5, 1.0 / 3}, "#555", true}}, true}};
  const std::string svg = tools::render_svg(spec);
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(svg.find("sweep &lt;test&gt;") != std::string::npos);  // escaped title
  CHECK(svg.find(">layout.microbatches</text>") != std::string::npos);
  CHECK(svg.find(">step time (s)</text>") != std::string::npos);
  CHECK(svg.find(">analytic</text>") != std::string::npos);
  CHECK(svg.find("stroke-dasharray") != std::string::npos);
  CHECK(svg.find(">80%</text>") != std::string::npos);  // percent ticks on the bubble panel
  CHECK(std::count(svg.begin(), svg.end(), '\n') > 40);
  CHECK(svg == tools::render_svg(spec));
  CHECK(tools::nice_step(4, 5) == 1);
  CHECK(tools::nice_step(0.8, 5) == doctest::Approx(0.2));
}
