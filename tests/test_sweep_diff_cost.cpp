// tests/test_sweep_diff_cost.cpp — what users ask of sweeps, two runs and the whole
// training run: `sweep --sort/--fits-only/--top/--zip`, invalid points as rows, exit
// codes and error locations; `check --set`; `training:` (time, GPU-hours, cost, with
// closed-form checks); `search --objective cost`; `diff`; the sweep plot's x scale.
#include <doctest/doctest.h>

#include "run_binary.hpp"

#include <cmath>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tools/study/diff.hpp"
#include "tools/report/plot.hpp"
#include "tools/study/sweep.hpp"
#include "tools/study/sweep_report.hpp"
#include "tools/scenario/units.hpp"

#ifndef LAYOUTSIM_BIN
#error "LAYOUTSIM_BIN must be defined (path of the layoutsim executable)"
#endif

using nlohmann::json;
using ls::test::Run;

namespace {

// 8 GPUs, 8 layers, tp2·pp4: small enough for end-to-end runs.
const char* kSmall = R"(name: ux-small
cluster: {gpu: h100-sxm, nodes: 2, gpus_per_node: 4}
model: {preset: llama3-8b, layers: 8}
layout: {tp: 2, pp: 4, dp: 1, microbatches: 4}
)";

std::string small() {
  static const std::string p = [] {
    const std::string path = ls::test::tmp("ux-small.yaml");
    std::ofstream(path) << kSmall;
    return path;
  }();
  return p;
}

Run ls_run(const std::string& args) { return ls::test::run_layoutsim(args); }

json read_json(const std::string& path) { return json::parse(ls::test::slurp(path)); }

}  // namespace

TEST_CASE("units: token counts and prices") {
  CHECK(ls::tools::parse_count("15T") == 15e12);
  CHECK(ls::tools::parse_count("300B") == 300e9);
  CHECK(ls::tools::parse_count("2.5 M") == 2.5e6);
  CHECK(ls::tools::parse_count("1000") == 1000);
  CHECK_THROWS_AS(ls::tools::parse_count("15Q"), ls::tools::UnitError);
  CHECK_THROWS_AS(ls::tools::parse_count("-1T"), ls::tools::UnitError);
  const auto p = ls::tools::parse_price("2.5 USD");
  CHECK(p.amount == 2.5);
  CHECK(p.currency == "USD");
  CHECK_THROWS_AS(ls::tools::parse_price("2.5"), ls::tools::UnitError);
  CHECK_THROWS_AS(ls::tools::parse_price("2.5 dollars"), ls::tools::UnitError);
}

TEST_CASE("training: time, GPU-hours and cost follow from tokens/s (closed form)") {
  const std::string j = ls::test::tmp("train.json");
  const Run r = ls_run("run '" + small() + "' --set training.tokens=1T --set 'training.gpu_hour_price=2.5 USD' --json '" + j + "'");
  REQUIRE(r.rc == 0);
  const json s = read_json(j);
  const double tps = s["tokens_per_s"].get<double>();
  const double t = 1e12 / tps;                // time_to_train_s = tokens / tokens_per_s
  const double h = 8 * t / 3600;              // gpu_hours = devices · t / 3600
  CHECK(s["time_to_train_s"].get<double>() == doctest::Approx(t).epsilon(1e-12));
  CHECK(s["gpu_hours"].get<double>() == doctest::Approx(h).epsilon(1e-12));
  CHECK(s["cost"].get<double>() == doctest::Approx(2.5 * h).epsilon(1e-12));
  CHECK(s["training"]["currency"] == "USD");
  CHECK(s["training"]["cost_per_million_tokens"].get<double>() == doctest::Approx(8 * 2.5 / 3600 / tps * 1e6).epsilon(1e-12));
  const Run table = ls_run("run '" + small() + "' --set training.tokens=1T --set 'training.gpu_hour_price=2.5 USD'");
  CHECK(table.out.find("time to train") != std::string::npos);
  CHECK(table.out.find("USD") != std::string::npos);
  // Without the key, no field (the summary of an existing scenario is unchanged).
  const std::string j0 = ls::test::tmp("train0.json");
  REQUIRE(ls_run("run '" + small() + "' --json '" + j0 + "'").rc == 0);
  CHECK_FALSE(read_json(j0).contains("time_to_train_s"));
  // Bad values: located errors, exit 1.
  const Run bad = ls_run("check '" + small() + "' --set training.gpu_hour_price=2.5");
  CHECK(bad.rc == 1);
  CHECK(bad.err.find("training.gpu_hour_price") != std::string::npos);
  CHECK(bad.err.find("currency") != std::string::npos);
  CHECK(ls_run("check '" + small() + "' --set training.tokens=0").rc == 1);
}

TEST_CASE("training: checkpoint stalls and failures stretch the time to train by the goodput (closed form)") {
  // A slow store makes the stall visible: goodput = 1 - stall share without failures,
  // the expected goodput at the interval with them; the ideal time is tokens / tokens/s.
  const std::string base = "run '" + small() + "' --set training.tokens=1T --set 'training.gpu_hour_price=2 USD' "
                           "--set 'checkpoint={every: 10 min, storage_bandwidth: 0.2 GB/s}'";
  for (const bool failures : {false, true}) {
    CAPTURE(failures);
    const std::string j = ls::test::tmp(failures ? "goodput-f.json" : "goodput-c.json");
    const Run r = ls_run(base + (failures ? " --set 'failures={mtbf_per_gpu: 2000 h}'" : "") + " --json '" + j + "'");
    REQUIRE(r.rc == 0);
    const json s = read_json(j);
    const double ideal = 1e12 / s["tokens_per_s"].get<double>();
    const double goodput = failures ? s["goodput"].get<double>() : 1 - s["checkpoint"]["overhead_fraction"].get<double>();
    REQUIRE(goodput < 1);
    REQUIRE(goodput > 0);
    CHECK(s["time_to_train_ideal_s"].get<double>() == doctest::Approx(ideal).epsilon(1e-12));
    CHECK(s["time_to_train_s"].get<double>() == doctest::Approx(ideal / goodput).epsilon(1e-12));
    CHECK(s["gpu_hours"].get<double>() == doctest::Approx(8 * ideal / goodput / 3600).epsilon(1e-12));
    CHECK(s["cost"].get<double>() == doctest::Approx(2 * 8 * ideal / goodput / 3600).epsilon(1e-12));
    const Run table = ls_run(base + (failures ? " --set 'failures={mtbf_per_gpu: 2000 h}'" : ""));
    CHECK(table.out.find("at 100 % goodput") != std::string::npos);
  }
}

TEST_CASE("sweep: invalid points are rows with their reason; exit 0 when any ran, 1 when none did") {
  const std::string csv = ls::test::tmp("mixed.csv");
  const Run r = ls_run("sweep '" + small() + "' --set layout.tp=2,3 --csv '" + csv + "'");
  CHECK(r.rc == 0);
  const std::string c = ls::test::slurp(csv);
  CHECK(c.find(",error\n") != std::string::npos);  // the header ends with the error column
  CHECK(c.find("3,,,,,,,,error,") != std::string::npos);
  // The error names the --set that caused it, not its position in the point.
  CHECK(r.err.find("--set layout.tp=3: error:") != std::string::npos);
  CHECK(r.err.find("1 of 2 points ran") != std::string::npos);
  const Run table = ls_run("sweep '" + small() + "' --set layout.tp=2,3");
  CHECK(table.out.find("invalid: ") != std::string::npos);
  CHECK(ls_run("sweep '" + small() + "' --set layout.tp=3,5").rc == 1);
}

TEST_CASE("sweep: at most 20 error lines on stderr") {
  const Run r = ls_run("sweep '" + small() + "' --set layout.tp=3,5,6,7,9,10,11,12,13,14,15,16 --jobs 2");
  CHECK(r.rc == 1);
  std::size_t lines = 0;
  for (char ch : r.err) lines += ch == '\n';
  CHECK(lines <= 21);  // 20 errors and the count
}

TEST_CASE("sweep: --sort, --fits-only, --top and --zip") {
  const std::string j = ls::test::tmp("sorted.json");
  REQUIRE(ls_run("sweep '" + small() + "' --microbatches 1,4,8 --sort tokens_per_s --top 2 --json '" + j + "'").rc == 0);
  const json s = read_json(j);
  REQUIRE(s.size() == 2);
  CHECK(s[0]["summary"]["tokens_per_s"].get<double>() >= s[1]["summary"]["tokens_per_s"].get<double>());
  CHECK(s[0]["set"]["layout.microbatches"] == 8);  // more micro-batches, smaller bubble, more tokens/s
  // --sort by a swept key, descending values given: ascending rows.
  const Run k = ls_run("sweep '" + small() + "' --microbatches 8,1,4 --sort layout.microbatches");
  REQUIRE(k.rc == 0);
  CHECK(k.out.find("  1  ") < k.out.find("  4  "));
  CHECK(ls_run("sweep '" + small() + "' --microbatches 1,4 --sort nonsense").rc == 2);
  // --zip pairs the values: 2 points, not 4.
  const std::string z = ls::test::tmp("zip.json");
  REQUIRE(ls_run("sweep '" + small() + "' --set layout.schedule=1f1b,interleaved-1f1b --set layout.virtual_stages=1,2 --zip --json '" + z + "'").rc == 0);
  const json zj = read_json(z);
  REQUIRE(zj.size() == 2);
  CHECK(zj[1]["set"]["layout.schedule"] == "interleaved-1f1b");
  CHECK(zj[1]["set"]["layout.virtual_stages"] == 2);
  CHECK(ls_run("sweep '" + small() + "' --set layout.tp=1,2 --set layout.pp=1,2,4 --zip").rc == 2);
  // --fits-only drops the points over the GPU's memory (a 16 GB GPU cannot hold pp 1).
  const std::string f = ls::test::tmp("fits.json");
  REQUIRE(ls_run("sweep '" + small() + "' --set 'cluster.gpu.memory=16 GB' --set layout.pp=1,4 --set layout.dp=auto --fits-only --json '" + f + "'").rc == 0);
  for (const auto& p : read_json(f)) CHECK(p["summary"]["memory"]["fits"] == true);
}

TEST_CASE("sweep: the knee is the smallest value from which tokens/s stays within 5 % of the best and the bubble below 5 %") {
  // Synthetic points of layout.microbatches, out of order: tokens/s 60, 80, 96, 99, 100 and
  // bubble 30, 12, 6, 3, 1.5 % at m = 4, 8, 16, 32, 64; m = 2 does not fit.
  auto point = [](int m, double tokens, double bubble, bool fits) {
    ls::tools::SweepOutcome o;
    o.point = {{"layout.microbatches", std::to_string(m)}};
    ls::wl::Result r;
    r.tokens_per_s = tokens;
    r.bubble_fraction = bubble;
    r.memory_fits = fits;
    o.result = r;
    return o;
  };
  const std::vector<ls::tools::SweepOutcome> pts{point(32, 99, 0.03, true), point(4, 60, 0.30, true), point(64, 100, 0.015, true),
                                                 point(8, 80, 0.12, true), point(16, 96, 0.06, true), point(2, 200, 0.5, false)};
  const std::vector<std::string> keys{"layout.microbatches"};
  // 96 ≥ 0.95 · 100 from m = 16 on (the unfitting m = 2 is not the best); bubble < 5 % from 32.
  CHECK(ls::tools::sweep_knee(keys, pts) ==
        "knee: tokens/s within 5 % of the sweep's best from layout.microbatches = 16; bubble below 5 % from layout.microbatches = 32");
  // A later dip below the line moves the knee past it.
  auto dip = pts;
  dip[0] = point(32, 90, 0.03, true);
  CHECK(ls::tools::sweep_knee(keys, dip).find("best from layout.microbatches = 64") != std::string::npos);
  // Every point within 5 % and below 5 %: no transition, no knee.
  CHECK(ls::tools::sweep_knee(keys, {point(8, 99, 0.01, true), point(16, 100, 0.02, true)}).empty());
  // Two varying keys, or a non-numeric one: no knee.
  auto two = pts;
  two[1].point.push_back({"layout.tp", "2"});
  CHECK(ls::tools::sweep_knee({"layout.microbatches", "layout.tp"}, two).empty());
  // From the CLI: printed under the table.
  const Run r = ls_run("sweep '" + small() + "' --microbatches 1,4,8,16");
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("knee: tokens/s within 5 % of the sweep's best from layout.microbatches = ") != std::string::npos);
}

TEST_CASE("sweep: layout.dp=auto sets dp back to derived") {
  const std::string j = ls::test::tmp("dpauto.json");
  REQUIRE(ls_run("sweep '" + small() + "' --set layout.pp=2,4 --set layout.dp=auto --json '" + j + "'").rc == 0);
  const json s = read_json(j);
  REQUIRE(s.size() == 2);
  CHECK(s[0]["summary"]["devices"] == 8);  // pp 2, tp 2: dp derived as 2
  CHECK(s[0]["summary"]["pipeline"]["stages"] == 2);
}

TEST_CASE("check --set") {
  const Run ok = ls_run("check '" + small() + "' --set layout.microbatches=8");
  CHECK(ok.rc == 0);
  const Run bad = ls_run("check '" + small() + "' --set layout.tp=3");
  CHECK(bad.rc == 1);
  CHECK(bad.err.find("--set layout.tp=3: error:") != std::string::npos);
}

TEST_CASE("search --objective cost: needs a price; ranks by cost per token") {
  const std::string fixes = " --vary tp=1,2 --vary pp=1,2 --fix zero=1 --fix sp=false --fix recompute=selective --fix schedule=1f1b "
                            "--fix stage_layers=auto --fix placement=tp/dp/pp --vary mbs=1 --simulate-top 2 --jobs 1";
  const Run no_price = ls_run("search '" + small() + "' --objective cost" + fixes);
  CHECK(no_price.rc == 2);
  CHECK(no_price.err.find("gpu_hour_price") != std::string::npos);
  std::ofstream(ls::test::tmp("priced.yaml")) << kSmall << "training: {tokens: 1T, gpu_hour_price: 2 USD}\n";
  const std::string j = ls::test::tmp("search-cost.json");
  const Run r = ls_run("search '" + ls::test::tmp("priced.yaml") + "' --objective cost --json '" + j + "'" + fixes);
  REQUIRE(r.rc == 0);
  const json s = read_json(j);
  CHECK(s["objective"] == "cost");
  REQUIRE(s["candidates"].size() >= 2);
  const auto& c0 = s["candidates"][0];
  CHECK(c0["cost"].get<double>() == doctest::Approx(2.0 * 8 * 1e12 / c0["tokens_per_s"].get<double>() / 3600).epsilon(1e-9));
  CHECK(c0["cost"].get<double>() <= s["candidates"][1]["cost"].get<double>());
}

TEST_CASE("diff: two summaries side by side; errors for other JSON") {
  const std::string a = ls::test::tmp("diff-a.json"), b = ls::test::tmp("diff-b.json"), o = ls::test::tmp("diff.json");
  REQUIRE(ls_run("run '" + small() + "' --json '" + a + "'").rc == 0);
  REQUIRE(ls_run("run '" + small() + "' --set layout.microbatches=8 --json '" + b + "'").rc == 0);
  const Run r = ls_run("diff '" + a + "' '" + b + "'");
  REQUIRE(r.rc == 0);
  for (const char* row : {"step time", "tokens/s", "MFU", "bubble (measured)", "exposed tp", "peak memory", "Links"})
    CHECK_MESSAGE(r.out.find(row) != std::string::npos, row);
  REQUIRE(ls_run("diff '" + a + "' '" + b + "' --json '" + o + "'").rc == 0);
  const json d = read_json(o);
  const json ja = read_json(a), jb = read_json(b);
  const double ta = ja["step_time_s"].get<double>(), tb = jb["step_time_s"].get<double>();
  CHECK(d["rows"][0]["path"] == "step_time_s");
  CHECK(d["rows"][0]["change"].get<double>() == doctest::Approx((tb - ta) / ta).epsilon(1e-12));
  // Links by class (the busiest group of each), never by link name or group pattern:
  // the names of the busiest links move between layouts, the classes do not.
  bool by_class = false;
  for (const auto& row : d["rows"]) {
    const std::string path = row["path"].get<std::string>();
    CHECK_MESSAGE(path.rfind("links.busiest", 0) != 0, path);
    by_class |= path.rfind("links.groups[class=nvlink node*.gpu*->node*.nvswitch]", 0) == 0;
  }
  CHECK(by_class);
  // Generic: a field the diff does not know still shows when it differs.
  json extra = jb;
  extra["pipeline"]["a_new_figure_s"] = 0.5;
  std::ofstream(ls::test::tmp("diff-c.json")) << extra.dump();
  REQUIRE(ls_run("diff '" + a + "' '" + ls::test::tmp("diff-c.json") + "' --json '" + o + "'").rc == 0);
  bool generic = false;
  const json with_extra = read_json(o);
  for (const auto& row : with_extra["rows"]) generic |= row["path"] == "pipeline.a_new_figure_s";
  CHECK(generic);
  // Not a run summary: exit 1 with the file named.
  std::ofstream(ls::test::tmp("not.json")) << "{\"rows\": []}";
  const Run bad = ls_run("diff '" + a + "' '" + ls::test::tmp("not.json") + "'");
  CHECK(bad.rc == 1);
  CHECK(bad.err.find("not.json: error: not a layoutsim run summary") != std::string::npos);
  CHECK(ls_run("diff '" + a + "' '" + ls::test::tmp("missing.json") + "'").rc == 1);
}

TEST_CASE("sweep plot: log-2 x when values span 8x, the scenario's name as title, a tokens/s panel") {
  CHECK(ls::tools::wants_log2_axis({8, 16, 24, 32, 64, 128}));
  CHECK_FALSE(ls::tools::wants_log2_axis({8, 16, 24, 32}));
  CHECK_FALSE(ls::tools::wants_log2_axis({0, 16}));
  const std::string svg = ls::test::tmp("p.svg");
  REQUIRE(ls_run("sweep '" + small() + "' --microbatches 1,2,8 --plot '" + svg + "'").rc == 0);
  const std::string s = ls::test::slurp(svg);
  CHECK(s.find("layoutsim sweep: ux-small<") != std::string::npos);
  CHECK(s.find("(log 2 scale)") != std::string::npos);
  CHECK(s.find(">tokens/s<") != std::string::npos);
  // Two keys: one "name=value" line per key.
  REQUIRE(ls_run("sweep '" + small() + "' --microbatches 1,2 --set layout.tp=1,2 --set layout.dp=auto --plot '" + svg + "'").rc == 0);
  CHECK(ls::test::slurp(svg).find("<tspan>microbatches=1</tspan>") != std::string::npos);
}

TEST_CASE("name_set_locations and select_points") {
  CHECK(ls::tools::name_set_locations("--set:2:8: error: x\nf.yaml:1:1: error: y", {"a=1", "layout.tp=3"}) ==
        "--set layout.tp=3: error: x\nf.yaml:1:1: error: y");
  CHECK(ls::tools::error_reason("--set a=1: error: layout.tp: bad\nmore") == "layout.tp: bad");
}
