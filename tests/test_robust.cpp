// tests/test_robust.cpp — the robustness guarantees, end to end on the built command
// (LAYOUTSIM_BIN): honest exit codes and I/O (atomic outputs, '-' = stdout, empty
// paths, full or closed stdout, unreadable inputs), the exact time range (a step past
// int64 picoseconds is exit 1, never a deadlock or a nonsense number), the summary's
// post-condition, and routing that keeps a node's traffic on its switch whatever the
// latencies.
#include <doctest/doctest.h>

#include "run_binary.hpp"

#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/network.hpp"
#include "sim/time.hpp"
#include "topology/cluster.hpp"
#include "tools/report/atomic_file.hpp"
#include "tools/report/output_check.hpp"
#include "tools/scenario/scenario.hpp"
#include "workloads/simulate.hpp"
#include "workloads/time_range.hpp"

#ifndef LAYOUTSIM_BIN
#error "LAYOUTSIM_BIN must be defined (path of the layoutsim executable)"
#endif

namespace fs = std::filesystem;
using nlohmann::json;
using ls::test::run_layoutsim;
using ls::test::slurp;
using ls::test::tmp;

namespace {

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

// Files in `dir` other than the given names: a leftover temporary file shows up here.
int count_files(const std::string& dir) {
  int n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

// Exit status of `layoutsim ARGS` run by the shell with ARGS's own redirections
// (stderr discarded).
int shell_rc(const std::string& args) {
  const std::string cmd = "'" LAYOUTSIM_BIN "' " + args + " 2>/dev/null";
  const int st = std::system(cmd.c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

}  // namespace

TEST_CASE("write_output: atomic replace, the target's mode kept, no temporary left behind") {
  const std::string dir = tmp("atomic");
  fs::create_directories(dir);
  const std::string path = dir + "/out.json";
  ls::tools::write_output(path, "first\n");
  CHECK(slurp(path) == "first\n");
  ::chmod(path.c_str(), 0640);
  ls::tools::write_output(path, "second\n");
  CHECK(slurp(path) == "second\n");
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0640);
  CHECK(count_files(dir) == 1);
  // A missing directory: an IoError naming the path and the OS reason.
  try {
    ls::tools::write_output(dir + "/missing/out.json", "x");
    FAIL("no IoError");
  } catch (const ls::tools::IoError& e) {
    CHECK(std::string(e.what()).find("missing/out.json") != std::string::npos);
    CHECK(std::string(e.what()).find("No such file or directory") != std::string::npos);
  }
  // A special file is written in place, not replaced.
  ls::tools::write_output("/dev/null", "discarded");
  // A symbolic link is followed: its target is replaced, the link stays a link.
  fs::create_symlink(path, dir + "/link.json");
  ls::tools::write_output(dir + "/link.json", "third\n");
  CHECK(fs::is_symlink(dir + "/link.json"));
  CHECK(slurp(path) == "third\n");
  // A directory is not a file.
  CHECK_THROWS_AS(ls::tools::write_output(dir, "x"), ls::tools::IoError);
  CHECK(count_files(dir) == 2);
}

TEST_CASE("read_input: size limit, missing file, gzip round trip") {
  const std::string path = tmp("input.json.gz");
  ls::tools::write_output(path, std::string(1000, 'a'));
  CHECK(ls::tools::read_input(path, 1000) == std::string(1000, 'a'));
  CHECK_THROWS_AS(ls::tools::read_input(path, 999), ls::tools::IoError);
  CHECK_THROWS_AS(ls::tools::read_input(tmp("no-such-file"), 10), ls::tools::IoError);
}

TEST_CASE("I/O errors exit 1 with the path and the reason, never 'internal error'") {
  for (const std::string flag : {"--json", "--trace"}) {
    const auto r = run_layoutsim("run -q " + flag + " /nonexistent-dir/out.json");
    CHECK(r.rc == 1);
    CHECK(r.err.find("cannot write '/nonexistent-dir/out.json'") != std::string::npos);
    CHECK(r.err.find("No such file or directory") != std::string::npos);
    CHECK(r.err.find("internal error") == std::string::npos);
  }
  const auto missing = run_layoutsim("check-trace /nonexistent-dir/trace.json");
  CHECK(missing.rc == 1);
  CHECK(missing.err.find("cannot read '/nonexistent-dir/trace.json'") != std::string::npos);
}

TEST_CASE("a full or closed stdout is an error (exit 1), not a silent success") {
  CHECK(shell_rc("run --json - >/dev/full") == 1);
  CHECK(shell_rc("run >/dev/full") == 1);
  CHECK(shell_rc("keys >&-") == 1);
}

TEST_CASE("an empty path is a usage error (exit 2); two outputs on stdout too") {
  for (const std::string args : {"run ''", "check ''", "run --json ''", "run --trace ''", "check-trace ''",
                                 "sweep '' --microbatches 1,2", "run --json - --trace -"}) {
    CAPTURE(args);
    CHECK(run_layoutsim(args).rc == 2);
  }
}

TEST_CASE("'-' means stdout for --trace as for --json") {
  const auto r = run_layoutsim("run -q --trace -");
  REQUIRE(r.rc == 0);
  CHECK(r.out.rfind("{\"traceEvents\":[", 0) == 0);
}

TEST_CASE("a write that fails part-way leaves the older file intact and no temporary") {
  const std::string dir = tmp("fsize");
  fs::create_directories(dir);
  const std::string path = dir + "/trace.json";
  write_file(path, "older, good content\n");
  // A 64 KiB file-size limit (SIGXFSZ ignored, so write() fails with EFBIG): the trace
  // (megabytes) cannot be written.
  const std::string cmd = "sh -c \"trap '' XFSZ; ulimit -f 64; exec '" LAYOUTSIM_BIN "' run -q --trace '" + path + "'\" 2>/dev/null";
  const int st = std::system(cmd.c_str());
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 1);
  CHECK(slurp(path) == "older, good content\n");
  CHECK(count_files(dir) == 1);
}

TEST_CASE("a step beyond int64 picoseconds is a clear error (exit 1), never a deadlock or a wrong number") {
  for (const std::string set : {"cluster.gpu.peak_tflops=1e-4", "'cluster.inter_node.bandwidth=1 Kb/s'", "model.seq_len=67108864",
                                "cluster.gpu.peak_tflops=1e-9", "'cluster.gpu.hbm_bandwidth=1 b/s'"}) {
    CAPTURE(set);
    const auto r = run_layoutsim("run -q --set " + set);
    CHECK(r.rc == 1);
    CHECK(r.err.find("outside the representable range") != std::string::npos);
    CHECK(r.err.find("deadlock") == std::string::npos);
  }
  const std::string degraded = std::string(SCENARIOS_DIR) + "/degraded-link.yaml";
  const auto bomb = run_layoutsim("run -q " + degraded + " --set 'perturbations.links[0].bandwidth_factor=1e-12'");
  CHECK(bomb.rc == 1);
  CHECK(bomb.err.find("outside the representable range") != std::string::npos);
  // 3e-8 still fits (about 3.3e6 s of a 9.2e6 s range): a correct result, every
  // utilisation at most 1 (1e-8 gave 158.6 % before the range was checked).
  const auto slow = run_layoutsim("run " + degraded + " --json - --set 'perturbations.links[0].bandwidth_factor=3e-8'");
  REQUIRE(slow.rc == 0);
  const json j = json::parse(slow.out);
  CHECK(j["step_time_s"].get<double>() < ls::sim::kMaxTimeSeconds);
  for (const auto& [kind, k] : j["links"]["by_kind"].items()) CHECK(k["max_utilization"].get<double>() <= 1.0);
}

TEST_CASE("a step past the time range is located at the key most responsible, with its reference; check says the same") {
  struct Case {
    std::string args, where, key, reference;
  };
  const std::string def = std::string(SCENARIOS_DIR) + "/default.yaml";
  const std::string degraded = std::string(SCENARIOS_DIR) + "/degraded-link.yaml";
  const std::string corpus = std::string(CORPUS_DIR) + "/time_link_factor.yaml";
  // `where`: the value's location (--set:N:COL is the column where VALUE starts).
  for (const Case& c : {
           Case{def + " --set cluster.gpu.peak_tflops=1e-4", "--set:1:25:", "cluster.gpu.peak_tflops", "h100-sxm preset's 989 TFLOP/s"},
           Case{def + " --set cluster.gpu.peak_tflops=1e-9", "--set:1:25:", "cluster.gpu.peak_tflops", "h100-sxm preset's 989 TFLOP/s"},
           Case{def + " --set 'cluster.inter_node.bandwidth=1 Kb/s'", "--set:1:30:", "cluster.inter_node.bandwidth",
                "the GPU's nic_bandwidth, 50 GB/s"},
           Case{def + " --set model.seq_len=67108864", "--set:1:15:", "model.seq_len", "llama3-70b preset's 8192"},
           Case{def + " --set 'cluster.gpu.hbm_bandwidth=1 b/s'", "--set:1:27:", "cluster.gpu.hbm_bandwidth",
                "h100-sxm preset's 3350 GB/s"},
           Case{degraded + " --set 'perturbations.links[0].bandwidth_factor=1e-12'", "--set:1:41:",
                "perturbations.links[0].bandwidth_factor", "with 1 it would last at least"},
           Case{def + " --set 'cluster.inter_node.pcie_bandwidth=1 b/s'", "--set:1:35:", "cluster.inter_node.pcie_bandwidth",
                "with the default 64 GB/s"},
           // Steps run on one clock; a value with a reference is blamed before the count.
           Case{def + " --set simulation.steps=10000 --set cluster.gpu.peak_tflops=0.1", "--set:2:25:", "cluster.gpu.peak_tflops",
                "makes 10000 steps last at least"},
           // Two values off: the one whose reset shrinks the bound most is blamed.
           Case{def + " --set cluster.gpu.peak_tflops=1e-4 --set 'cluster.inter_node.bandwidth=1 Kb/s'", "--set:1:25:",
                "cluster.gpu.peak_tflops", "still outside"},
           Case{corpus, "time_link_factor.yaml:8:51:", "perturbations.links[0].bandwidth_factor", "0.4 b/s"},
           // The GPU 10^7 times slower alone still fits (9.9e5 s): the bandwidth is blamed.
           Case{std::string(CORPUS_DIR) + "/time_two_values.yaml", "time_two_values.yaml:8:27:", "cluster.inter_node.bandwidth",
                "it would last at least 9.902e+05 s"},
       }) {
    CAPTURE(c.args);
    const auto run = run_layoutsim("run -q " + c.args);
    CHECK(run.rc == 1);
    CHECK(run.err.find(c.where + " error: " + c.key + ": ") != std::string::npos);
    CHECK(run.err.find(c.reference) != std::string::npos);
    CHECK(run.err.find("the step would exceed it") != std::string::npos);
    CHECK(run.err.find("deadlock") == std::string::npos);
    // check names a --set by its text ("--set KEY=VALUE: error: ..."), run by its place.
    const auto check = run_layoutsim("check " + c.args);
    CHECK(check.rc == 1);
    const auto tail = [](const std::string& e) { return e.substr(std::min(e.size(), e.find(" error: "))); };
    CHECK(tail(check.err) == tail(run.err));
  }
  // Latencies add up on a stream: located at the latency, not found by the network.
  const auto lat = run_layoutsim("run -q --set 'cluster.intra_node.latency=0.999 s' --set 'cluster.inter_node.latency=0.999 s' "
                                 "--set layout.microbatches=8192");
  CHECK(lat.rc == 1);
  CHECK(lat.err.find("--set:1:28: error: cluster.intra_node.latency: 999 ms makes the step last at least") != std::string::npos);
  CHECK(lat.err.find("with the default 1 us") != std::string::npos);
  // model.layers=1048576 is refused earlier, by the key's own bound, at its value.
  const auto layers = run_layoutsim("run -q " + def + " --set model.layers=1048576");
  CHECK(layers.rc == 1);
  CHECK(layers.err.find("--set:1:14: error: model.layers: 1048576 is too large (at most 65536)") != std::string::npos);
}

namespace {
// The `expect: step_time_s ≈ V ±T%` figure of a scenario's header (the simulated step,
// checked by the scenario_expectations CTest), lowered by its tolerance; 0 if none.
double expected_step_floor(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  const std::string tag = "expect: step_time_s \xe2\x89\x88 ";
  while (std::getline(in, line)) {
    const auto p = line.find(tag);
    if (p == std::string::npos) continue;
    const double v = std::stod(line.substr(p + tag.size()));
    const auto pm = line.find("\xc2\xb1", p);
    const double tol = pm == std::string::npos ? 0.0 : std::stod(line.substr(pm + 2)) / 100.0;
    return v * (1.0 - tol);
  }
  return 0;
}
}  // namespace

TEST_CASE("the time-range bound is a true lower bound of the simulated step for every scenario in scenarios/") {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(SCENARIOS_DIR))
    if (e.path().extension() == ".yaml") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 20);
  for (const std::string& f : files) {
    CAPTURE(f);
    const ls::wl::ResolvedScenario sc = ls::tools::load_scenario_file(f, {});
    const ls::wl::StepBound b = ls::wl::step_lower_bound(*sc);
    REQUIRE(std::isfinite(b.seconds));
    CHECK(b.seconds > 0);
    // The quoted figure when the header has one (fast); else a simulation.
    double step = expected_step_floor(f);
    if (step == 0) {
      ls::wl::SimOptions o;
      o.what_if = false;
      step = ls::wl::simulate(sc, o).step_time_s;
    }
    MESSAGE(fs::path(f).filename().string() << ": bound " << b.seconds << " s <= step " << step << " s (" << b.what << ")");
    CHECK(b.seconds <= step);
  }
}

TEST_CASE("the network's drain-time range error names the flow's bottleneck link") {
  using ls::sim::Time;
  ls::sim::FlowNetwork net({1e9, 1e-6});
  net.set_link_namer([](ls::sim::LinkId l) { return std::string(l == 0 ? "a->b" : "b->c"); });
  const std::vector<ls::sim::LinkId> path{0, 1};
  (void)net.start(Time::zero(), path, 1e6);  // 1e12 s at 1e-6 B/s
  std::vector<ls::sim::FlowId> changed;
  CHECK_THROWS_WITH_AS(net.resolve(Time::zero(), changed), doctest::Contains("bottleneck: link 'b->c'"), ls::sim::TimeRangeError);
}

TEST_CASE("Time: conversions and arithmetic outside int64 picoseconds throw TimeRangeError") {
  using ls::sim::Time;
  CHECK_THROWS_AS(Time::from_seconds(1e7), ls::sim::TimeRangeError);
  CHECK_THROWS_AS(Time::from_seconds_ceil(std::numeric_limits<double>::quiet_NaN()), ls::sim::TimeRangeError);
  CHECK_THROWS_AS(Time::from_seconds(5e6) + Time::from_seconds(5e6), ls::sim::TimeRangeError);
  CHECK_THROWS_AS(Time::from_seconds(-5e6) - Time::from_seconds(5e6), ls::sim::TimeRangeError);
  CHECK_THROWS_AS(Time::from_seconds(5e6) * 2, ls::sim::TimeRangeError);
  CHECK((Time::from_seconds(4e6) + Time::from_seconds(5e6)).seconds() == doctest::Approx(9e6));
}

TEST_CASE("summary post-condition: negative, non-finite and fractions above 1 name their field") {
  json ok = {{"mfu", 0.5}, {"pipeline", {{"per_stage", {{{"idle_fraction", 1.0}}}}}}, {"step_time_s", 3.0}};
  CHECK_NOTHROW(ls::tools::check_summary_numbers(ok));
  auto expect = [](const json& j, const std::string& field) {
    try {
      ls::tools::check_summary_numbers(j);
      FAIL("no violation for " << field);
    } catch (const ls::tools::OutputInvariantError& e) {
      CHECK(std::string(e.what()).find(field) != std::string::npos);
    }
  };
  json frac = ok;
  frac["pipeline"]["per_stage"][0]["idle_fraction"] = 4998342.0;
  expect(frac, "pipeline.per_stage[0].idle_fraction");
  json neg = ok;
  neg["step_time_s"] = -1.0;
  expect(neg, "step_time_s");
  json nan = ok;
  nan["mfu"] = nullptr;  // report_json writes NaN and infinity as null
  expect(nan, "mfu");
  json mfu = ok;
  mfu["mfu"] = 14659410432039.0;
  expect(mfu, "mfu");
}

TEST_CASE("routing follows the hierarchy: a node's traffic stays on NVLink whatever the latencies") {
  auto bytes_by_kind = [](const std::string& set) {
    const auto r = run_layoutsim("run --json - --set " + set);
    REQUIRE(r.rc == 0);
    return json::parse(r.out)["links"]["by_kind"];
  };
  const json base = bytes_by_kind("layout.tp=8");
  // Zero inter-node latency made gpu->nic->leaf->nic->gpu (4 hops, 0 + 0 + ...) beat
  // the NVSwitch (2 hops at 1 us each): NVLink carried 0 bytes.
  for (const std::string set : {"'cluster.inter_node.latency=0 s'", "'cluster.intra_node.latency=10 us'"}) {
    CAPTURE(set);
    const json k = bytes_by_kind(set);
    CHECK(k["nvlink"]["bytes"].get<double>() == base["nvlink"]["bytes"].get<double>());
    CHECK(k["infiniband"]["bytes"].get<double>() == base["infiniband"]["bytes"].get<double>());
  }
}

namespace {
// Built in a function: GCC 12 warns (-Wmaybe-uninitialized, a false positive) on a
// ClusterSpec filled inline in a doctest case.
ls::topo::ClusterSpec slow_switch_spec() {
  ls::topo::ClusterSpec s;
  s.nodes = 2;
  s.gpus_per_node = 4;
  s.intra.latency = ls::sim::us(5);
  s.inter.latency = ls::sim::Time::zero();
  return s;
}
}  // namespace

TEST_CASE("routing: same-node pairs take the switch even when its latency is above the network's") {
  const ls::topo::Cluster c = ls::topo::Cluster::build(slow_switch_spec());
  for (int b = 1; b < 4; ++b) {
    CAPTURE(b);
    CHECK(c.route_latency(0, b) == ls::sim::us(5));  // the NVSwitch's two halves: 5 us
    const auto path = c.route(0, b);
    REQUIRE(path.size() == 2);
    for (const auto l : path) CHECK(c.link(l).type == ls::topo::LinkKind::nvlink);
  }
}

namespace {
// Built in a function, as slow_switch_spec (GCC 12's -Wmaybe-uninitialized false positive).
ls::topo::ClusterSpec many_nics_spec() {
  ls::topo::ClusterSpec s;
  s.nodes = 2;
  s.gpus_per_node = 8;
  s.inter.nics_per_node = 1024;
  return s;
}
}  // namespace

TEST_CASE("nics_per_node above gpus_per_node and fabrics above the link limit are errors before building") {
  ls::topo::ClusterSpec s = many_nics_spec();
  CHECK_THROWS_WITH_AS(ls::topo::Cluster::build(s), doctest::Contains("nics_per_node"), std::invalid_argument);
  s.inter.nics_per_node = 0;
  s.nodes = 64;
  s.inter.fabric = "fat-tree";
  s.inter.nodes_per_leaf = 1;
  s.inter.spines = 131072;  // more spines than routes ever use: an error of its own
  CHECK_THROWS_WITH_AS(ls::topo::Cluster::build(s), doctest::Contains("cluster.inter_node.spines: 131072 spines is more than 256"),
                       std::invalid_argument);
  s.inter.spines = 256;
  s.nodes = 1 << 16;  // 65,536 leaves × 256 spines
  CHECK_THROWS_WITH_AS(ls::topo::Cluster::build(s), doctest::Contains("above the limit"), std::invalid_argument);
}

TEST_CASE("bounded work: counts that would exhaust memory are located errors before anything is allocated") {
  struct Case {
    std::string set, key;
  };
  for (const Case& c : {Case{"layout.microbatches=1048576", "layout.microbatches"}, Case{"model.layers=1048576", "model.layers"},
                        Case{"layout.microbatches=65536", "layout.microbatches"},
                        Case{"cluster.inter_node.nics_per_node=1024", "nics_per_node"},
                        Case{"cluster.inter_node.spines=131072", "cluster.inter_node.spines"}}) {
    CAPTURE(c.set);
    const auto r = run_layoutsim("run -q --set " + c.set);
    CHECK(r.rc == 1);
    CHECK(r.err.find(c.key) != std::string::npos);
    CHECK(r.err.find("--set:1:") != std::string::npos);  // located
  }
}

namespace {
// The loader's message for `yaml`, or "" when it loads.
std::string load_error(const std::string& yaml) {
  try {
    (void)ls::tools::load_scenario_string(yaml, "s.yaml", {});
  } catch (const ls::tools::ScenarioError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("odd input gets a message that says what is wrong, where") {
  CHECK(load_error("name: x\r  model: llama3-8b\r").find("CR only") != std::string::npos);
  CHECK(load_error(std::string("name: x\0\nmodel: llama3-8b\n", 27)).find("NUL byte") != std::string::npos);
  const std::string quote = load_error("name: \"x\nmodel: llama3-8b\n");
  CHECK(quote.find("s.yaml:1:7:") != std::string::npos);
  CHECK(quote.find("unterminated quote") != std::string::npos);
  CHECK(load_error("name: \"x\n  y\"\nmodel: llama3-8b\n").empty());  // a real multi-line string is fine
  const std::string deep = load_error("model: llama3-8b\nname: " + std::string(600, '[') + std::string(600, ']') + "\n");
  CHECK(deep.find("nested deeper than") != std::string::npos);
  const std::string a100 = load_error("model: llama3-8b\ncluster:\n  gpu: a100\n");
  CHECK(a100.find("did you mean 'a100-40gb' or 'a100-80gb'?") != std::string::npos);
}

TEST_CASE("100,000 bad keys: linear checks, 20 errors shown, then a count") {
  std::string dups = "model: llama3-8b\n", unknown = "model: llama3-8b\n";
  for (int i = 0; i < 100000; ++i) {
    dups += "k: 1\n";
    unknown += 'k';  // appended piecewise: GCC 12 warns (-Wrestrict, a false positive) on "lit" + to_string()
    unknown += std::to_string(i);
    unknown += ": 1\n";
  }
  for (const std::string* yaml : {&dups, &unknown}) {
    const std::string err = load_error(*yaml);
    CHECK(std::count(err.begin(), err.end(), '\n') == 20);  // 20 errors + the count line
    CHECK(err.find("more errors") != std::string::npos);
  }
}

TEST_CASE("a scenario named after a non-UTF-8 file name still writes a valid trace and summary") {
  const std::string dir = tmp("utf8-name");
  fs::create_directories(dir);
  const std::string path = dir + "/caf\xe9-\xf0\x9f\x98\x80.yaml";  // "café" in Latin-1, then a valid 4-byte emoji
  write_file(path, "model: llama3-8b\nlayout: {tp: 8}\n");
  const std::string trace = dir + "/t.json";
  const auto r = run_layoutsim("run -q '" + path + "' --trace '" + trace + "' --json -");
  REQUIRE(r.rc == 0);
  CHECK(json::parse(r.out)["scenario"].get<std::string>() == "caf\xef\xbf\xbd-\xf0\x9f\x98\x80");
  CHECK(run_layoutsim("check-trace '" + trace + "'").rc == 0);
}

TEST_CASE("a link perturbed twice is an error, also through a<->b") {
  const std::string base = std::string(SCENARIOS_DIR) + "/degraded-link.yaml";
  const auto r = run_layoutsim("run -q " + base + " --set 'perturbations.links=[{link: node2.nic5->leaf5, bandwidth_factor: 0.5}, "
                               "{link: node2.nic5<->leaf5, bandwidth_factor: 0.25}]'");
  CHECK(r.rc == 1);
  CHECK(r.err.find("perturbations.links[1].link") != std::string::npos);
  CHECK(r.err.find("already perturbed by perturbations.links[0]") != std::string::npos);
}

TEST_CASE("errors found while building the topology are located at their key, with the value as given") {
  const auto r = run_layoutsim("run -q --set 'cluster.intra_node.latency=2 s'");
  CHECK(r.rc == 1);
  CHECK(r.err.find("--set:1:") != std::string::npos);
  CHECK(r.err.find("cluster.intra_node.latency: 2 s is above 1 s") != std::string::npos);
  const auto nics = run_layoutsim("run -q --set cluster.inter_node.nics_per_node=1024");
  CHECK(nics.err.find("error: cluster.inter_node.nics_per_node: 1024 NICs") != std::string::npos);
}

TEST_CASE("a 14 MB flow list of 7 M items is refused before yaml-cpp builds it (was 4.4 GB, 24 s)") {
  std::string yaml = "model: llama3-8b\nname: [";
  yaml.reserve(14'100'000);
  for (int i = 0; i < 7'000'000; ++i) yaml += "1,";
  yaml += "1]\n";
  CHECK(load_error(yaml).find("more than 1048576 values") != std::string::npos);
}
