// tests/test_scenarios.cpp — the scenario library (scenarios/*.yaml) end to end.
//
// Every file in the library must pass `layoutsim check` (exit code 0), and the small
// "what goes wrong" files must actually show the warning their comment promises when
// run with `--json -`. The file list is explicit (no globbing) so that adding a file
// without a test, or deleting one a README points at, is a visible change here.
// LAYOUTSIM_BIN and SCENARIOS_DIR come from tests/CMakeLists.txt.
//
// No timing assertions; the numbers asserted are structural (a warning code is
// present, memory.fits is false) or closed forms stated next to them.
#include <doctest/doctest.h>

#include "run_binary.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#ifndef LAYOUTSIM_BIN
#error "LAYOUTSIM_BIN must be defined (path of the layoutsim executable)"
#endif
#ifndef SCENARIOS_DIR
#error "SCENARIOS_DIR must be defined (path of the scenarios/ folder)"
#endif

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Every file of scenarios/, by name. Keep in sync with the folder (a test below
// checks that the folder holds exactly these).
const std::vector<std::string> kScenarioFiles = {
    "default.yaml",
    "seed-70b-t8p4d2.yaml",
    "seed-70b-t8p2d4.yaml",
    "gpt3-175b-1024-a100.yaml",
    "bubble-sweep.yaml",
    "tp16-across-nodes.yaml",
    "tp8-in-node.yaml",
    "mistral-7b-sliding-window.yaml", "recompute-variants.yaml", "moe-parallel-folding.yaml",
    "unbalanced-stages.yaml",
    "straggler.yaml",
    "throttling.yaml",
    "power-capped.yaml",
    "zero3-vs-zero1.yaml",
    "deepspeed-zero3-2021.yaml",
    "jitter.yaml",
    "degraded-link.yaml",
    "small-microbatch.yaml",
    "out-of-memory.yaml",
    "mixtral-8x7b-ep.yaml",
    "deepseek-v3-dualpipe.yaml",
    "deepseek-v3-ep.yaml",
    "deepseek-v3-node-limited.yaml",
    "search-llama3-70b-64xh100.yaml",  // its quoted figures: tests/test_search.cpp
    "llama3-70b-long-context.yaml",
    "finetune-70b-one-node.yaml",
    "gb200-nvl72.yaml",
    "zero2-accumulate.yaml",
    "bloom-176b-384-a100.yaml",
    "hsdp.yaml",
    "offload.yaml",
};

std::string path_of(const std::string& file) { return (fs::path(SCENARIOS_DIR) / file).string(); }

using ls::test::Run;
using ls::test::slurp;

Run layoutsim(const std::string& args) { return ls::test::run_layoutsim(args); }

json run_json(const std::string& file, const std::string& extra = "") {
  const Run r = layoutsim("run '" + path_of(file) + "' --json -" + (extra.empty() ? "" : " " + extra));
  INFO("layoutsim run ", file, " stderr: ", r.err);
  REQUIRE(r.rc == 0);  // a layout that does not fit is still exit code 0 (README.md, "Commands")
  return json::parse(r.out);
}

bool has_warning(const json& j, const std::string& code) {
  if (!j.contains("warnings")) return false;
  for (const auto& w : j["warnings"])
    if (w.value("code", "") == code) return true;
  return false;
}

std::string warning_codes(const json& j) {
  std::string s;
  for (const auto& w : j["warnings"]) s += w.value("code", "?") + " ";
  return s;
}

}  // namespace

TEST_CASE("the library folder holds exactly the listed files") {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(SCENARIOS_DIR))
    if (e.is_regular_file() && e.path().extension() == ".yaml") found.push_back(e.path().filename().string());
  std::sort(found.begin(), found.end());
  std::vector<std::string> listed = kScenarioFiles;
  std::sort(listed.begin(), listed.end());
  CHECK(found == listed);
}

TEST_CASE("scenarios/default.yaml is the built-in default scenario") {
  const std::string lib = slurp(path_of("default.yaml"));
  const std::string builtin = slurp(fs::path(SCENARIOS_DIR).parent_path() / "tools" / "scenario" / "default_scenario.yaml");
  CHECK(!lib.empty());
  CHECK(lib == builtin);
}

TEST_CASE("every library scenario passes layoutsim check") {
  for (const auto& f : kScenarioFiles) {
    SUBCASE(f.c_str()) {
      const Run r = layoutsim("check '" + path_of(f) + "'");
      INFO("layoutsim check ", f, "\nstdout: ", r.out, "\nstderr: ", r.err);
      CHECK(r.rc == 0);
      CHECK(r.out.find("valid") != std::string::npos);
    }
  }
}

TEST_CASE("tp16-across-nodes warns that TP crosses nodes; tp8-in-node does not") {
  const json bad = run_json("tp16-across-nodes.yaml");
  CHECK_MESSAGE(has_warning(bad, "tp-crosses-nodes"), warning_codes(bad));
  const json good = run_json("tp8-in-node.yaml");
  CHECK_MESSAGE(!has_warning(good, "tp-crosses-nodes"), warning_codes(good));
  // Same 16 GPUs, same global batch: keeping TP on NVSwitch must be the faster one.
  CHECK(good["step_time_s"].get<double>() < bad["step_time_s"].get<double>());
}

TEST_CASE("gb200-nvl72: TP across trays stays on NVLink; one NVLink island per tray sends it over InfiniBand") {
  const json rack = run_json("gb200-nvl72.yaml");
  CHECK_MESSAGE(!has_warning(rack, "tp-crosses-nodes"), warning_codes(rack));
  const json trays = run_json("gb200-nvl72.yaml", "--set cluster.nvlink_domain=4");
  CHECK_MESSAGE(has_warning(trays, "tp-crosses-nodes"), warning_codes(trays));
  CHECK(rack["step_time_s"].get<double>() < trays["step_time_s"].get<double>());
}

TEST_CASE("straggler shows the straggler warning") {
  const json j = run_json("straggler.yaml");
  CHECK_MESSAGE(has_warning(j, "straggler"), warning_codes(j));
}

TEST_CASE("unbalanced-stages shows stage-imbalance") {
  const json j = run_json("unbalanced-stages.yaml");
  CHECK_MESSAGE(has_warning(j, "stage-imbalance"), warning_codes(j));
}

TEST_CASE("out-of-memory does not fit, warns, and still exits 0") {
  const json j = run_json("out-of-memory.yaml");  // REQUIREs rc == 0
  CHECK_MESSAGE(has_warning(j, "out-of-memory"), warning_codes(j));
  CHECK(j["memory"]["fits"].get<bool>() == false);
  CHECK(j["memory"]["max_peak_bytes"].get<double>() > j["memory"]["capacity_bytes"].get<double>());
}

TEST_CASE("offload fits with optimizer offload; without it the out-of-memory warning prices that remedy") {
  const json j = run_json("offload.yaml");
  CHECK(j["memory"]["fits"].get<bool>());
  CHECK(j["memory"]["headroom_bytes"].get<double>() ==
        doctest::Approx(j["memory"]["usable_bytes"].get<double>() - j["memory"]["max_peak_bytes"].get<double>()));
  const json over = run_json("offload.yaml", "--set layout.offload.optimizer=false");
  CHECK_FALSE(over["memory"]["fits"].get<bool>());
  bool priced = false;
  for (const auto& w : over["warnings"])
    if (w["code"] == "out-of-memory" && w["message"].get<std::string>().find("layout.offload.optimizer: true fits") != std::string::npos)
      priced = true;
  CHECK(priced);
}

TEST_CASE("small-microbatch shows small-microbatch") {
  const json j = run_json("small-microbatch.yaml");
  CHECK_MESSAGE(has_warning(j, "small-microbatch"), warning_codes(j));
}

TEST_CASE("deepseek-v3-ep's zipf routing shows moe-imbalance; mixtral's balanced routing does not") {
  const json skewed = run_json("deepseek-v3-ep.yaml");
  CHECK_MESSAGE(has_warning(skewed, "moe-imbalance"), warning_codes(skewed));
  const json balanced = run_json("mixtral-8x7b-ep.yaml");
  CHECK_MESSAGE(!has_warning(balanced, "moe-imbalance"), warning_codes(balanced));
}

TEST_CASE("bubble-sweep reproduces (p-1)/(m+p-1) and warns about the bubble") {
  // p = 8 identical stages, free communication, free embedding/head: the simulated
  // bubble equals the closed form. 1e-3 absolute allows for the per-op kernel
  // overheads and integer-picosecond rounding, which are identical on every stage.
  const json j = run_json("bubble-sweep.yaml");  // m = 8: 7/15
  CHECK(j["pipeline"]["bubble_fraction_analytic"].get<double>() == doctest::Approx(7.0 / 15.0).epsilon(1e-9));
  CHECK(std::abs(j["pipeline"]["bubble_fraction"].get<double>() - 7.0 / 15.0) < 1e-3);
  CHECK_MESSAGE(has_warning(j, "bubble"), warning_codes(j));
}

TEST_CASE("seed-70b: the seed's micro-batch counts give its bubbles, (p − 1)/(m + p − 1) = 3/35 and 1/17") {
  const json p4 = run_json("seed-70b-t8p4d2.yaml");  // p = 4, m = 64 / 2 = 32
  const json p2 = run_json("seed-70b-t8p2d4.yaml");  // p = 2, m = 64 / 4 = 16
  CHECK(p4["pipeline"]["microbatches"] == 32);
  CHECK(p2["pipeline"]["microbatches"] == 16);
  CHECK(p4["pipeline"]["bubble_fraction_analytic"].get<double>() == doctest::Approx(3.0 / 35.0).epsilon(1e-12));
  CHECK(p2["pipeline"]["bubble_fraction_analytic"].get<double>() == doctest::Approx(1.0 / 17.0).epsilon(1e-12));
  // The comments' verdict: the deeper pipeline is the faster, its smaller DP group exposing less.
  CHECK(p4["step_time_s"].get<double>() < p2["step_time_s"].get<double>());
  CHECK(p4["comm"]["dp"]["exposed_s"].get<double>() < p2["comm"]["dp"]["exposed_s"].get<double>());
}

TEST_CASE("seed-70b: ZeRO-3 puts ~19.7 GB of model state on every device in both layouts") {
  // 70.03e9 params × (2 + 4 + 4 + 8) B / 64 devices = 19.70 GB; stage 0 also holds the
  // (untied-once) embedding table, so per stage the state is within 3 % of that.
  for (const char* f : {"seed-70b-t8p4d2.yaml", "seed-70b-t8p2d4.yaml"}) {
    const json j = run_json(f);
    int n = 0;
    for (const auto& st : j["memory"]["per_stage"]) {
      const double state = st["weights"].get<double>() + st["gradients"].get<double>() + st.value("master", 0.0) +
                           st["optimizer"].get<double>();
      CHECK_MESSAGE(std::abs(state / 19.7e9 - 1.0) < 0.03, f, " stage ", n, " state ", state);
      ++n;
    }
    REQUIRE(n > 0);
  }
}

TEST_CASE("llama3-70b-long-context: cp fits where cp 1 does not, the advice prices cp, the ring hides its exchange") {
  const json ring = run_json("llama3-70b-long-context.yaml");
  const json ag = run_json("llama3-70b-long-context.yaml", "--set layout.cp_kind=all-gather");
  const json none = run_json("llama3-70b-long-context.yaml", "--set layout.cp=1");
  CHECK(ring["memory"]["fits"] == true);
  CHECK(none["memory"]["fits"] == false);
  REQUIRE(has_warning(none, "out-of-memory"));
  std::string oom;
  for (const auto& w : none["warnings"])
    if (w["code"] == "out-of-memory") { oom = w["message"].get<std::string>(); break; }
  CHECK(oom.find("cp: 2") != std::string::npos);
  CHECK(oom.find("With cp: 2") != std::string::npos);  // priced by simulation
  CHECK(ring["comm"]["cp"]["exposed_s"].get<double>() < ag["comm"]["cp"]["exposed_s"].get<double>());
  CHECK(ring["step_time_s"].get<double>() < ag["step_time_s"].get<double>());
}
