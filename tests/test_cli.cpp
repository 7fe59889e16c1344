// tests/test_cli.cpp — the `layoutsim` command end to end: runs the built binary
// (LAYOUTSIM_BIN, set by tests/CMakeLists.txt) with output redirected to temporary
// files, and checks exit codes, the JSON contract, determinism, the trace checker,
// sweeps and error reporting.
#include <doctest/doctest.h>

#include "run_binary.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tools/report/trace.hpp"
#include "tools/report/trace_check.hpp"

#ifndef LAYOUTSIM_BIN
#error "LAYOUTSIM_BIN must be defined (path of the layoutsim executable)"
#endif

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using ls::test::Run;
using ls::test::slurp;
using ls::test::tmp;

void write(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

// Runs `layoutsim ARGS` and fails on any sanitizer report in its stderr.
Run layoutsim(const std::string& args) {
  Run r = ls::test::run_layoutsim(args);
  // Under LAYOUTSIM_SANITIZE a sanitizer report may exit 1, which some tests expect
  // for other reasons: look for the report itself.
  CHECK_MESSAGE(r.err.find("Sanitizer") == std::string::npos, r.err);
  CHECK_MESSAGE(r.err.find("runtime error:") == std::string::npos, r.err);
  return r;
}

// A small scenario (8 GPUs, 8 layers, tp2·pp4) so the end-to-end tests stay fast.
const char* kSmall = R"(name: cli-small
cluster:
  gpu: h100-sxm
  nodes: 2
  gpus_per_node: 4
model:
  preset: llama3-8b
  layers: 8
layout:
  tp: 2
  pp: 4
  dp: 1
  microbatches: 4
)";

std::string small_scenario() {
  const std::string p = tmp("small.yaml");
  if (!fs::exists(p)) write(p, kSmall);
  return p;
}

void check_contract_keys(const json& j) {
  for (const char* k : {"scenario", "devices", "steps", "step_time_s", "tokens_per_s", "model_flops_per_step",
                        "hardware_flops_per_step", "tflops_per_gpu", "mfu", "hfu", "pipeline", "comm", "links", "memory",
                        "critical_path", "warnings"})
    CHECK_MESSAGE(j.contains(k), k);
  for (const char* k : {"stages", "microbatches", "schedule", "virtual_stages", "bubble_fraction_analytic", "bubble_fraction", "per_stage"})
    CHECK_MESSAGE(j["pipeline"].contains(k), k);
  REQUIRE(j["pipeline"]["per_stage"].is_array());
  REQUIRE_FALSE(j["pipeline"]["per_stage"].empty());
  for (const char* k : {"stage", "layers", "compute_s", "bubble_fraction", "idle_fraction"})
    CHECK_MESSAGE(j["pipeline"]["per_stage"][0].contains(k), k);
  for (const char* a : {"tp", "pp", "dp", "ep"}) {
    CHECK(j["comm"][a].contains("bytes_per_device"));
    CHECK(j["comm"][a].contains("exposed_s"));
  }
  CHECK(j["links"]["by_kind"].is_object());
  CHECK(j["links"]["busiest"].is_array());
  for (const auto& item : j["links"]["by_kind"].items()) {
    const std::string kind = item.key();  // a plain local: Clang 14 cannot capture a structured binding
    for (const char* k : {"count", "bytes", "mean_utilization", "max_utilization"})
      CHECK_MESSAGE(item.value().contains(k), kind, k);
  }
  for (const auto& l : j["links"]["busiest"])
    for (const char* k : {"name", "kind", "bytes", "utilization"}) CHECK(l.contains(k));
  for (const char* k : {"capacity_bytes", "fits", "max_peak_bytes", "per_stage"}) CHECK_MESSAGE(j["memory"].contains(k), k);
  REQUIRE_FALSE(j["memory"]["per_stage"].empty());
  for (const char* k : {"stage", "weights", "gradients", "optimizer", "activations", "peak"})
    CHECK_MESSAGE(j["memory"]["per_stage"][0].contains(k), k);
  for (const char* k : {"device", "share_compute", "share_comm", "share_wait"}) CHECK_MESSAGE(j["critical_path"].contains(k), k);
  // v2: devices by name, link groups.
  CHECK(j["critical_path"]["devices"].is_array());
  CHECK(j["stragglers"].is_array());
  CHECK(j["links"]["groups"].is_array());
  for (const auto& g : j["links"]["groups"])
    for (const char* k : {"pattern", "kind", "count", "bytes", "utilization", "busy_fraction", "busy_utilization", "bottleneck_s"})
      CHECK_MESSAGE(g.contains(k), k);
  CHECK(j["warnings"].is_array());
  for (const auto& w : j["warnings"]) {
    CHECK(w["code"].is_string());
    CHECK(w["message"].is_string());
  }
}

}  // namespace

TEST_CASE("--help and --version exit 0") {
  auto h = layoutsim("--help");
  CHECK(h.rc == 0);
  CHECK(h.out.find("run") != std::string::npos);
  CHECK(h.out.find("sweep") != std::string::npos);
  CHECK(h.out.find("check") != std::string::npos);
  CHECK(layoutsim("run --help").rc == 0);
  auto v = layoutsim("--version");
  CHECK(v.rc == 0);
  CHECK(v.out.find("layoutsim") != std::string::npos);
}

TEST_CASE("usage errors exit 2") {
  CHECK(layoutsim("run --no-such-flag").rc == 2);
  CHECK(layoutsim("").rc == 2);                       // a subcommand is required
  CHECK(layoutsim("frobnicate").rc == 2);
  CHECK(layoutsim("run --json").rc == 2);             // missing argument
  CHECK(layoutsim("check").rc == 2);                  // missing scenario
  CHECK(layoutsim("sweep " + small_scenario()).rc == 2);  // nothing to sweep
  CHECK(layoutsim("sweep " + small_scenario() + " --jobs -3 --microbatches 1,2").rc == 2);
}

TEST_CASE("a mistyped flag is a usage error that suggests the subcommand's closest flag") {
  const auto r = layoutsim("run --jsn out.json");
  CHECK(r.rc == 2);
  CHECK(r.err.find("--jsn: did you mean --json?") != std::string::npos);
  const auto s = layoutsim("sweep --microbatchs 1,2");
  CHECK(s.rc == 2);
  CHECK(s.err.find("--microbatchs: did you mean --microbatches?") != std::string::npos);
  CHECK(layoutsim("run --frobnicate").err.find("did you mean") == std::string::npos);  // nothing near: no guess
}

TEST_CASE("default run exits 0 and prints the summary") {
  auto r = layoutsim("run");
  INFO(r.err);
  CHECK(r.rc == 0);
  CHECK(r.out.find("step time") != std::string::npos);
  CHECK(r.out.find("MFU") != std::string::npos);
  CHECK(r.out.find("Memory per GPU") != std::string::npos);
}

TEST_CASE("run --json - writes the contract JSON to stdout") {
  auto r = layoutsim("run " + small_scenario() + " --json -");
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json j = json::parse(r.out);  // stdout is JSON only (no table)
  check_contract_keys(j);
  CHECK(j["devices"] == 8);
  CHECK(j["pipeline"]["stages"] == 4);
  CHECK(j["pipeline"]["microbatches"] == 4);
  // (p−1)/(m+p−1) = 3/7 for 1F1B, p = 4, m = 4 (docs/ARCHITECTURE.md)
  CHECK(j["pipeline"]["bubble_fraction_analytic"].get<double>() == doctest::Approx(3.0 / 7).epsilon(1e-9));
  CHECK(j["step_time_s"].get<double>() > 0);
}

TEST_CASE("same scenario twice gives byte-identical JSON and trace, and the trace passes the checker") {
  const std::string s = small_scenario();
  auto a = layoutsim("run " + s + " --quiet --json " + tmp("a.json") + " --trace " + tmp("a.trace.json"));
  auto b = layoutsim("run " + s + " --quiet --json " + tmp("b.json") + " --trace " + tmp("b.trace.json"));
  INFO(a.err);
  REQUIRE(a.rc == 0);
  REQUIRE(b.rc == 0);
  CHECK(a.out.empty());  // --quiet
  const std::string ja = slurp(tmp("a.json")), jb = slurp(tmp("b.json"));
  CHECK_FALSE(ja.empty());
  CHECK(ja == jb);
  const std::string ta = slurp(tmp("a.trace.json")), tb = slurp(tmp("b.trace.json"));
  CHECK_FALSE(ta.empty());
  CHECK(ta == tb);

  const auto rep = ls::tools::check_trace_text(ta);
  for (std::size_t i = 0; i < rep.violations.size() && i < 20; ++i) MESSAGE(rep.violations[i]);
  CHECK(rep.ok());
  CHECK(rep.unordered_tracks == 0);  // run --trace writes each track in start order: check-trace streams it
  CHECK(rep.slices > 0);
  CHECK(rep.metadata > 0);
  // The pipeline has 3 boundaries: its send/recv spans carry flow arrows.
  CHECK(rep.flows > 0);

  auto ct = layoutsim("check-trace " + tmp("a.trace.json"));
  CHECK(ct.rc == 0);
  CHECK(ct.out.find(": ok") != std::string::npos);
}

TEST_CASE("--set composes, --quiet silences, --profile reports on stderr") {
  auto r = layoutsim("run " + small_scenario() + " --set layout.microbatches=2 --set layout.microbatches=8 --json - --profile");
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json j = json::parse(r.out);
  CHECK(j["pipeline"]["microbatches"] == 8);  // the later --set wins
  CHECK(j["engine"].contains("wall_s"));      // --profile adds the wall time
  CHECK(r.err.find("events/s") != std::string::npos);
  CHECK(r.err.find("peak RSS") != std::string::npos);
  auto q = layoutsim("run " + small_scenario() + " --quiet");
  CHECK(q.rc == 0);
  CHECK(q.out.empty());
}

TEST_CASE("--trace FILE.gz writes gzip that the checker reads") {
  auto r = layoutsim("run " + small_scenario() + " --quiet --trace " + tmp("t.json.gz"));
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const std::string raw = slurp(tmp("t.json.gz"));
  REQUIRE(raw.size() > 2);
  CHECK(static_cast<unsigned char>(raw[0]) == 0x1f);
  CHECK(static_cast<unsigned char>(raw[1]) == 0x8b);
  CHECK(ls::tools::check_trace_file(tmp("t.json.gz")).ok());
  CHECK(layoutsim("check-trace " + tmp("t.json.gz")).rc == 0);
}

TEST_CASE("--trace-devices: a list draws just those GPUs; auto adds a perturbed one; a bad name is a usage error") {
  const std::string s = small_scenario();
  auto r = layoutsim("run " + s + " --quiet --trace " + tmp("one.json") + " --trace-devices node0.gpu1");
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const std::string one = slurp(tmp("one.json"));
  CHECK(one.find("\"node0.gpu1 compute\"") != std::string::npos);
  CHECK(one.find("\"node0.gpu0 compute\"") == std::string::npos);
  CHECK(one.find("\"traced_devices\":1") != std::string::npos);
  CHECK(ls::tools::check_trace_file(tmp("one.json")).ok());
  // auto: a slowed device joins the trace whatever its rank.
  r = layoutsim("run " + s + " --quiet --trace " + tmp("auto.json") +
                " --set 'perturbations.devices=[{device: node0.gpu1, compute_slowdown: 1.5}]'");
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK(slurp(tmp("auto.json")).find("\"node0.gpu1 compute [perturbed 1.50x]\"") != std::string::npos);
  CHECK(layoutsim("run " + s + " --quiet --trace " + tmp("x.json") + " --trace-devices node9.gpu9").rc == 2);
  // The list ends at its flag's value: the scenario written after it is still the scenario.
  r = layoutsim("run --trace-devices all " + s + " --quiet --trace " + tmp("all.json"));
  INFO(r.err);
  CHECK(r.rc == 0);
}

TEST_CASE("check-trace rejects a broken trace with exit 1") {
  write(tmp("bad.trace.json"),
        R"({"traceEvents":[{"ph":"X","name":"a","pid":0,"tid":0,"ts":0,"dur":10},{"ph":"X","name":"b","pid":0,"tid":0,"ts":5,"dur":10}]})");
  auto r = layoutsim("check-trace " + tmp("bad.trace.json"));
  CHECK(r.rc == 1);
  CHECK(r.err.find("without nesting") != std::string::npos);
}

TEST_CASE("sweep --microbatches 1,2,4,8: one CSV row per value, analytic bubble falls") {
  auto r = layoutsim("sweep " + small_scenario() + " --microbatches 1,2,4,8 --jobs 2 --csv " + tmp("s.csv") + " --json " +
                     tmp("s.json") + " --plot " + tmp("s.svg"));
  INFO(r.err);
  REQUIRE(r.rc == 0);
  std::istringstream csv(slurp(tmp("s.csv")));
  std::string line;
  std::getline(csv, line);
  CHECK(line == "layout.microbatches,global_batch,step_time_s,tokens_per_s,mfu,bubble_fraction,bubble_fraction_analytic,max_peak_bytes,fits,error");
  std::vector<std::string> rows;
  while (std::getline(csv, line))
    if (!line.empty()) rows.push_back(line);
  REQUIRE(rows.size() == 4);
  std::vector<double> analytic;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    std::vector<std::string> cells;
    std::stringstream ss(rows[i]);
    std::string c;
    while (std::getline(ss, c, ',')) cells.push_back(c);
    REQUIRE(cells.size() == 9);
    CHECK(cells[0] == std::vector<std::string>{"1", "2", "4", "8"}[i]);  // input order
    analytic.push_back(std::stod(cells[6]));
    // The global batch the point ran, micro-batches · dp · micro-batch size: m times the
    // first row's (m = 1).
    CHECK(std::stoll(cells[1]) == std::stoll(cells[0]) * std::stoll(rows[0].substr(rows[0].find(',') + 1)));
  }
  // (p−1)/(m+p−1) with p = 4: 3/4, 3/5, 3/7, 3/11 — strictly falling
  for (std::size_t i = 1; i < analytic.size(); ++i) CHECK(analytic[i] < analytic[i - 1]);
  CHECK(analytic[0] == doctest::Approx(0.75).epsilon(1e-9));
  CHECK(analytic[3] == doctest::Approx(3.0 / 11).epsilon(1e-9));

  const json j = json::parse(slurp(tmp("s.json")));
  REQUIRE(j.size() == 4);
  CHECK(j[2]["set"]["layout.microbatches"] == 4);
  check_contract_keys(j[2]["summary"]);
  const std::string svg = slurp(tmp("s.svg"));
  CHECK(svg.find("<svg") == 0);
  CHECK(svg.find("bubble fraction") != std::string::npos);
}

TEST_CASE("check on a valid scenario prints the plan") {
  auto r = layoutsim("check " + small_scenario());
  INFO(r.err);
  CHECK(r.rc == 0);
  CHECK(r.out.find("Communication groups") != std::string::npos);
  CHECK(r.out.find("Memory budget") != std::string::npos);
  CHECK(r.out.find("bubble (analytic)") != std::string::npos);
}

TEST_CASE("check on a bad scenario exits 1 with file:line on stderr") {
  const std::string p = tmp("bad_key.yaml");
  write(p, std::string(kSmall) + "  tensor_parallel: 2\n");  // unknown key on line 14
  auto r = layoutsim("check " + p);
  CHECK(r.rc == 1);
  CHECK(r.err.find(p + ":14:") != std::string::npos);
  CHECK(r.err.find("error") != std::string::npos);
}

TEST_CASE("bad scenarios exit 1 and never crash") {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"syntax.yaml", "layout: [\n"},
      {"empty.yaml", ""},
      {"bare_number.yaml", "model: {preset: llama3-8b}\ncluster:\n  intra_node: {bandwidth: 300}\n"},
      {"bad_zero.yaml", std::string(kSmall) + "  ep: 1\n" + "  zero: 7\n"},
      {"bad_unit.yaml", "model: {preset: llama3-8b}\ncluster:\n  inter_node: {bandwidth: 400 Gbps}\n"},
      {"too_many_stages.yaml", "model: {preset: llama3-8b, layers: 2}\ncluster: {nodes: 1, gpus_per_node: 8}\nlayout: {pp: 8}\n"},
      {"not_a_map.yaml", "- 1\n- 2\n"},
      {"bad_schedule.yaml", "model: {preset: llama3-8b}\nlayout: {schedule: 2f2b}\n"},
  };
  for (const auto& [file_name, text] : bad) {
    const std::string name = file_name;  // a plain local: Clang 14 cannot capture a structured binding
    write(tmp(name), text);
    for (const char* cmd : {"check ", "run --quiet "}) {
      auto r = layoutsim(cmd + tmp(name));
      INFO(cmd, name, " stderr: ", r.err);
      CHECK(r.rc == 1);
      CHECK_FALSE(r.err.empty());
    }
  }
  // Missing file, a bad --set, a layout that does not divide the cluster.
  CHECK(layoutsim("check " + tmp("no-such-file.yaml")).rc == 1);
  auto s = layoutsim("run " + small_scenario() + " --quiet --set layout.tp=abc");
  CHECK(s.rc == 1);
  CHECK(s.err.find("--set:1:") != std::string::npos);
  CHECK(layoutsim("run " + small_scenario() + " --quiet --set layout.tp=3").rc == 1);
  // A sweep with an invalid point reports it as a row and exits 0, since a point ran;
  // 1 only when no point ran.
  auto sw = layoutsim("sweep " + small_scenario() + " --set layout.tp=2,3 --jobs 1 --csv " + tmp("bad.csv"));
  CHECK(sw.rc == 0);
  CHECK(sw.err.find("layout.tp=3") != std::string::npos);
  CHECK(layoutsim("sweep " + small_scenario() + " --set layout.tp=3,5 --jobs 1 --csv " + tmp("bad.csv")).rc == 1);
}

TEST_CASE("keys lists every scenario key; --markdown prints the README's tables") {
  const auto plain = layoutsim("keys");
  CHECK(plain.rc == 0);
  CHECK(plain.out.find("layout.global_batch") != std::string::npos);
  // Each line: path, type / values / doc, default.
  CHECK(plain.out.find("layout.zero") != std::string::npos);
  CHECK(plain.out.find("int in [0, 3]  [default: 0]") != std::string::npos);
  CHECK(plain.out.find("`nvswitch` | `nvlink` | `pcie`") != std::string::npos);
  // An enum's values with their meanings (the NameTable's docs), the bar unescaped.
  CHECK(plain.out.find("`ring` — K/V chunks passed peer to peer") != std::string::npos);
  CHECK(plain.out.find("(Megatron-Core) | `all-gather` — ") != std::string::npos);
  const auto md = layoutsim("keys --markdown");
  CHECK(md.rc == 0);
  CHECK(md.out.rfind("### `name`", 0) == 0);
  CHECK(md.out.find("| `cluster.inter_node.bandwidth` | bandwidth, per NIC per direction | the GPU's `nic_bandwidth` |") !=
        std::string::npos);
}

TEST_CASE("an output never overwrites an input or another output (usage error, the input intact)") {
  const std::string s = tmp("keep.yaml");
  write(s, kSmall);
  const std::string link = tmp("keep-link.yaml");
  fs::remove(link);
  fs::create_symlink(s, link);
  for (const std::string& args : {"run " + s + " --json " + s, "run " + s + " --trace " + link,
                                  "run " + s + " --json " + tmp("same.json") + " --trace " + tmp("./same.json"),
                                  "search " + s + " --json " + link, "reshard " + s + " " + s + " --json " + s}) {
    CAPTURE(args);
    const auto r = layoutsim(args);
    CHECK(r.rc == 2);
    CHECK((r.err.find("would destroy the input") != std::string::npos || r.err.find("one would be lost") != std::string::npos));
    CHECK(slurp(s) == kSmall);
  }
  CHECK_FALSE(fs::exists(tmp("same.json")));
}

TEST_CASE("help and version on a full stdout are an I/O error, as any output is") {
  for (const char* args : {" --help", " --version", " keys"}) {
    CAPTURE(args);
    const std::string cmd = std::string("'") + LAYOUTSIM_BIN + "'" + args + " > /dev/full 2> /dev/null";
    const int status = std::system(cmd.c_str());
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 1);
  }
}

TEST_CASE("plausible inputs that once ended in an internal error run or are rejected where they are written") {
  // Slow devices beyond those priced one by one, a device that is not slower (the
  // default), a faster one: cost_s is null, not an internal error.
  std::string five = std::string(kSmall) + "perturbations:\n  devices:\n";
  for (int g = 0; g < 5; ++g) five += fmt::format("    - {{device: node{}.gpu{}, compute_slowdown: 1.5}}\n", g / 4, g % 4);
  const std::string p5 = tmp("five-slow.yaml");
  write(p5, five);
  const auto r5 = layoutsim("run " + p5 + " --json -");
  REQUIRE(r5.rc == 0);
  const json j5 = json::parse(r5.out);
  CHECK(j5["stragglers"].size() == 5);
  CHECK(j5["stragglers"][0]["cost_s"].is_null());
  for (const char* extra : {"    - {device: node0.gpu0}\n", "    - {device: node0.gpu0, compute_slowdown: 0.5}\n"}) {
    const std::string p = tmp("not-slower.yaml");
    write(p, std::string(kSmall) + "perturbations:\n  devices:\n" + extra);
    const auto r = layoutsim("run " + p + " --json -");
    CHECK(r.rc == 0);
    if (r.rc == 0) CHECK(json::parse(r.out)["perturbed_devices"][0]["cost_s"].is_null());
  }
  // A save longer than its interval: the stall's share of wall-clock time stays below 1.
  const std::string ck = tmp("slow-save.yaml");
  write(ck, std::string(kSmall) + "checkpoint: {every: 1 steps, storage_bandwidth: 0.1 GB/s}\n");
  const auto rc = layoutsim("run " + ck + " --json -");
  REQUIRE(rc.rc == 0);
  CHECK(json::parse(rc.out)["checkpoint"]["overhead_fraction"].get<double>() < 1);
  // A price that would make the cost infinite is out of range where it is written.
  const std::string pr = tmp("price.yaml");
  write(pr, std::string(kSmall) + "training: {tokens: 1T, gpu_hour_price: 1e308 USD}\n");
  const auto rp = layoutsim("check " + pr);
  CHECK(rp.rc == 1);
  CHECK(rp.err.find("price.yaml:14:40: error: training.gpu_hour_price: ") != std::string::npos);
  CHECK(rp.err.find("training.gpu_hour_price") != std::string::npos);
}

TEST_CASE("an interrupted write leaves the old file and no temp file; a name at the file system's limit is written") {
  const fs::path dir = fs::path(tmp("interrupted"));
  fs::create_directories(dir);
  const std::string s = (dir / "s.yaml").string();
  write(s, kSmall);
  const std::string out = (dir / "out.json").string();
  write(out, "old");
  // A file-size limit of one 1 KiB block: the write of the JSON raises SIGXFSZ mid-file.
  const std::string cmd = "ulimit -f 1 && '" + std::string(LAYOUTSIM_BIN) + "' run '" + s + "' --json '" + out + "' -q 2> /dev/null";
  const int status = std::system(("bash -c \"" + cmd + "\" 2> /dev/null").c_str());
  CHECK(status != 0);
  CHECK(slurp(out) == "old");
  for (const auto& e : fs::directory_iterator(dir)) CHECK_MESSAGE(e.path().filename().string().rfind(".layoutsim.", 0) != 0, e.path());

  // 250 characters: within NAME_MAX (255) on the usual file systems, too long for a
  // temp name built by appending to it.
  const std::string longname = (dir / (std::string(245, 'n') + ".json")).string();
  const auto r = layoutsim("run " + s + " --json " + longname + " -q");
  CHECK(r.rc == 0);
  CHECK(fs::exists(longname));
}

TEST_CASE("search --emit writes a scenario that check accepts, from a flow-style file or one with a byte-order mark") {
  const std::string flow = tmp("flow.yaml");
  write(flow, "{name: flow, cluster: {gpu: h100-sxm, nodes: 2, gpus_per_node: 4}, model: {preset: llama3-8b, layers: 8}, "
              "layout: {tp: 2, pp: 4, dp: 1, microbatches: 4}}\n");
  const std::string bom = tmp("bom.yaml");
  write(bom, "\xEF\xBB\xBFname: bom\ncluster: {gpu: h100-sxm, nodes: 2, gpus_per_node: 4}\nlayout: {tp: 2, pp: 4, dp: 1, microbatches: 4}\n"
             "model: {preset: llama3-8b, layers: 8}\n");
  for (const std::string& base : {flow, bom, small_scenario()}) {
    CAPTURE(base);
    const std::string out = base + ".best.yaml";
    REQUIRE(layoutsim("search " + base + " --top 1 --emit " + out + " --json " + out + ".json").rc == 0);
    const auto checked = layoutsim("check " + out);
    INFO(checked.err);
    CHECK(checked.rc == 0);
    // The emitted scenario is the winner: it runs to the step time the search simulated.
    const json best = json::parse(slurp(out + ".json"))["candidates"][0];
    REQUIRE(best["simulated"].get<bool>());
    const auto run = layoutsim("run " + out + " --json -");
    REQUIRE(run.rc == 0);
    CHECK(json::parse(run.out)["step_time_s"].get<double>() == doctest::Approx(best["step_time_s"].get<double>()).epsilon(1e-9));
  }
}

TEST_CASE("diff and sweep --merge check the numbers they read as run checks the ones it writes") {
  const std::string s = small_scenario();
  REQUIRE(layoutsim("run " + s + " --json " + tmp("ok.json") + " -q").rc == 0);
  json j = json::parse(slurp(tmp("ok.json")));
  j["step_time_s"] = -5;
  write(tmp("negative.json"), j.dump());
  const auto d = layoutsim("diff " + tmp("ok.json") + " " + tmp("negative.json"));
  CHECK(d.rc == 1);
  CHECK(d.err.find("step_time_s = -5 is negative") != std::string::npos);
  j["step_time_s"] = 1;
  j["scenario"] = 5;
  write(tmp("number-name.json"), j.dump());
  CHECK(layoutsim("diff " + tmp("ok.json") + " " + tmp("number-name.json")).rc == 1);
  // A number past a double's range is not JSON layoutsim reads (the parser's overflow).
  std::string text = slurp(tmp("ok.json"));
  text.replace(text.find("\"step_time_s\": ") + 15, 1, "1e999, \"was\": 1");
  write(tmp("overflow.json"), text);
  const auto o = layoutsim("diff " + tmp("ok.json") + " " + tmp("overflow.json"));
  CHECK(o.rc == 1);
  CHECK(o.err.find("not JSON") != std::string::npos);

  REQUIRE(layoutsim("sweep " + s + " --microbatches 2,4 --shard 0/1 --json " + tmp("shard.json") + " -q").rc == 0);
  json shard = json::parse(slurp(tmp("shard.json")));
  shard[1]["summary"]["step_time_s"] = -1;
  write(tmp("shard-bad.json"), shard.dump());
  const auto m = layoutsim("sweep " + s + " --microbatches 2,4 --merge " + tmp("shard-bad.json"));
  CHECK(m.rc == 2);
  CHECK(m.err.find("entry 1: summary field step_time_s = -1 is negative") != std::string::npos);
}

TEST_CASE("a trace too large to build is refused before the run, with its estimate and what would fit") {
  const std::string big = tmp("big-trace.yaml");
  write(big, "cluster: {nodes: 512, gpus_per_node: 8, gpu: h100-sxm}\nmodel: llama3-70b\nlayout: {tp: 8, pp: 4, microbatches: 64}\n");
  const auto r = layoutsim("run " + big + " --trace-devices all --trace " + tmp("big.json") + " -q");
  CHECK(r.rc == 2);
  CHECK(r.err.find("4096 devices") != std::string::npos);
  CHECK(r.err.find("--trace-devices auto") != std::string::npos);
  CHECK_FALSE(fs::exists(tmp("big.json")));
  // The default choice of devices fits.
  CHECK(layoutsim("run " + big + " --trace " + tmp("big.json") + " -q").rc == 0);
}
