// tests/test_validate.cpp — tools/study/validate.hpp and `layoutsim validate`: runs files
// (every shipped row loads and plans, as `layoutsim check` would), their errors,
// the statistics (closed form), the JSON shape, and — as the separate CTest
// `validation_subset` — the error bound on validation/subset.yaml.
#include <doctest/doctest.h>

#include "run_binary.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/scenario/scenario.hpp"
#include "tools/study/validate.hpp"
#include "workloads/simulate.hpp"

#ifndef LAYOUTSIM_BIN
#error "LAYOUTSIM_BIN must be defined (path of the layoutsim executable)"
#endif
#ifndef VALIDATION_DIR
#error "VALIDATION_DIR must be defined (the repository's validation/ folder)"
#endif

using namespace ls;
using namespace ls::tools;

namespace {

void write(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

// 8 GPUs, a 4-layer model: simulates in milliseconds. The measured times are a little
// slower than the preset predicts (6.6 ms), so a fit of the efficiency can meet them.
const char* kRuns = R"(runs:
  - name: tiny-step
    groups: {gpu: h100-sxm, parallelism: fsdp-full}
    citation: {repo: example/repo, path: README.md, commit: abc, table: T}
    metadata: {attention_impl: flash}
    scenario:
      cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 8}
      model: {layers: 4, hidden: 1024, heads: 8, vocab: 32000, seq_len: 1024}
      layout: {dp: 8, zero: 3, microbatch_size: 2, microbatches: 3}
    measured: {step_time: "13 ms"}
  - name: tiny-tokens
    scenario:
      cluster: {gpu: a100-80gb, nodes: 1, gpus_per_node: 8}
      model: {layers: 4, hidden: 1024, heads: 8, vocab: 32000, seq_len: 1024}
      layout: {dp: 8, zero: 2, microbatch_size: 2, microbatches: 3}
    measured: {tokens_per_s: 2949120}
)";

}  // namespace

TEST_CASE("runs file: inline scenarios, both measurement kinds, default gpu group") {
  const std::string path = test::tmp("runs.yaml");
  write(path, kRuns);
  const auto rows = read_runs_file(path);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].name == "tiny-step");
  CHECK(rows[0].measured_step_s == doctest::Approx(0.013).epsilon(1e-12));
  CHECK(rows[0].groups.size() == 2);
  CHECK(rows[0].scenario.layout.zero == 3);
  // tokens/s → step time: 8 · 2 · 3 · 1024 = 49152 tokens per step at 2949120 tokens/s = 1/60 s.
  CHECK(tokens_per_step(rows[1].scenario) == 49152.0);
  CHECK(rows[1].measured_step_s == doctest::Approx(1.0 / 60).epsilon(1e-12));
  // No groups given: the GPU group comes from the scenario.
  REQUIRE(rows[1].groups.size() == 1);
  CHECK(rows[1].groups[0] == std::pair<std::string, std::string>{"gpu", "a100-80gb"});
}

TEST_CASE("runs file: errors are located and all reported") {
  const std::string path = test::tmp("bad_runs.yaml");
  write(path, R"(runs:
  - name: a
    scenaro: {model: gpt3-175b}
    measured: {step_time: "1 s"}
  - name: b
    scenario: {model: {layers: 2, hidden: 64, heads: 2, vocab: 100, seq_len: 16}, layout: {zero: 9}}
    measured: {step_time: "1"}
  - name: b
    file: nowhere.yaml
    scenario: {model: gpt3-175b}
    measured: {speed: 3}
)");
  std::string msg;
  try {
    read_runs_file(path);
  } catch (const RunsFileError& e) {
    msg = e.what();
  }
  CHECK(msg.find(path + ":3:5: error: runs[0]: unknown key 'scenaro' (did you mean 'scenario'?)") != std::string::npos);
  CHECK(msg.find("run 'a': give exactly one of scenario") != std::string::npos);
  CHECK(msg.find("run 'b': measured.step_time:") != std::string::npos);      // a bare number has no unit
  CHECK(msg.find("layout.zero") != std::string::npos);                       // the loader's message, passed on
  CHECK(msg.find("measured: unknown key 'speed'") != std::string::npos);
}

TEST_CASE("error statistics: closed form") {
  std::vector<RowOutcome> rows(4);
  const double measured[] = {1, 2, 4, 8}, predicted[] = {1.1, 1.5, 4, 8.8};
  for (int i = 0; i < 4; ++i) {
    rows[i].name = "r";
    rows[i].name += std::to_string(i);
    rows[i].groups = {{"gpu", i < 2 ? "x" : "y"}};
    rows[i].measured_s = measured[i];
    rows[i].predicted_s = predicted[i];
    rows[i].error = (predicted[i] - measured[i]) / measured[i];  // +0.1, -0.25, 0, +0.1
  }
  RowOutcome failed;
  failed.name = "failed";
  failed.measured_s = 1;
  failed.failure = "boom";
  rows.push_back(failed);
  const ValidationReport rep = summarize(rows);
  CHECK(rep.failed == 1);
  CHECK(rep.all.count == 4);
  CHECK(rep.all.mean_abs_error == doctest::Approx(0.45 / 4));
  CHECK(rep.all.mean_error == doctest::Approx(-0.05 / 4));
  CHECK(rep.all.max_abs_error == doctest::Approx(0.25));
  CHECK(rep.all.worst == "r1");
  REQUIRE(rep.groups.size() == 2);
  CHECK(rep.groups[0].first == "gpu:x");
  CHECK(rep.groups[0].second.mean_error == doctest::Approx(-0.075));
  CHECK(rep.groups[1].second.mean_abs_error == doctest::Approx(0.05));

  const auto j = validation_json(rep);
  CHECK(j["rows"].size() == 5);
  CHECK(j["rows"][1]["error"].get<double>() == doctest::Approx(-0.25));
  CHECK(j["rows"][4]["predicted"].is_null());
  CHECK(j["groups"]["gpu:y"]["count"] == 2);
  CHECK(j["mean_abs_error"].get<double>() == doctest::Approx(0.1125));
  // The plot is text, the same every time, and marks the band.
  const std::string svg = validation_svg(rep, "t");
  CHECK(svg == validation_svg(rep, "t"));
  CHECK(svg.find("±10 %") != std::string::npos);
}

TEST_CASE("evaluate_runs: one simulation per row, the same as simulate()") {
  const std::string path = test::tmp("runs2.yaml");
  write(path, kRuns);
  const auto rows = read_runs_file(path);
  const auto out = evaluate_runs(rows, 2);
  REQUIRE(out.size() == 2);
  wl::SimOptions opt;
  opt.what_if = false;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    CHECK(out[i].failure.empty());
    CHECK(out[i].predicted_s == wl::simulate(wl::resolve(rows[i].scenario), opt).step_time_s);
    CHECK(out[i].error == doctest::Approx((out[i].predicted_s - out[i].measured_s) / out[i].measured_s));
  }
}

TEST_CASE("evaluate_runs: the dearest rows start first, each result lands in its own row") {
  const std::string path = test::tmp("runs_order.yaml");
  write(path, R"(runs:
  - name: cheap
    scenario:
      cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 8}
      model: {layers: 4, hidden: 1024, heads: 8, vocab: 32000, seq_len: 1024}
      layout: {dp: 8, microbatch_size: 1, microbatches: 1}
    measured: {step_time: "10 ms"}
  - name: dear
    scenario:
      cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 8}
      model: {layers: 8, hidden: 1024, heads: 8, vocab: 32000, seq_len: 1024}
      layout: {dp: 2, pp: 4, microbatch_size: 1, microbatches: 8}
    measured: {step_time: "10 ms"}
)");
  const auto rows = read_runs_file(path);
  REQUIRE(rows.size() == 2);
  // One replica's ranks × micro-batches × layers per stage: 1·1·4 and 4·8·2.
  CHECK(row_cost_estimate(rows[0]) == 4.0);
  CHECK(row_cost_estimate(rows[1]) == 64.0);
  std::vector<std::size_t> started;
  const auto out = evaluate_runs(rows, 1, {}, [&](std::size_t row, std::size_t, std::size_t) { started.push_back(row); });
  CHECK(started == std::vector<std::size_t>{1, 0});
  wl::SimOptions opt;
  opt.what_if = false;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    CHECK(out[i].name == rows[i].name);
    CHECK(out[i].predicted_s == wl::simulate(wl::resolve(rows[i].scenario), opt).step_time_s);
  }
}

TEST_CASE("row_cost_estimate: replicas count where an ECMP fabric of several leaves runs them one by one") {
  const std::string path = test::tmp("runs_cost.yaml");
  auto row = [&](const std::string& inter) {
    write(path, R"(runs:
  - name: r
    scenario:
      cluster: {gpu: h100-sxm, nodes: 8, gpus_per_node: 8, inter_node: )" + inter + R"(}
      model: {layers: 4, hidden: 1024, heads: 8, vocab: 32000, seq_len: 1024}
      layout: {dp: 16, tp: 4, microbatch_size: 1, microbatches: 2}
    measured: {step_time: "10 ms"}
)");
    return read_runs_file(path).at(0);
  };
  // tp 4 × 2 micro-batches × 4 layers = 32 per replica.
  CHECK(row_cost_estimate(row("{kind: infiniband, nodes_per_leaf: 4}")) == 32.0);
  CHECK(row_cost_estimate(row("{kind: ethernet, nodes_per_leaf: 8}")) == 32.0);  // one leaf
  CHECK(row_cost_estimate(row("{kind: ethernet, nodes_per_leaf: 4}")) == 32.0 * 16);
  CHECK(row_cost_estimate(row("{kind: infiniband, nodes_per_leaf: 4, routing: ecmp}")) == 32.0 * 16);
}

TEST_CASE("the shipped validation set: every row loads and plans (as `layoutsim check` does)") {
  std::size_t total = 0;
  for (const char* f : {"llm_foundry.yaml", "megatron_bridge.yaml", "subset.yaml"}) {
    const auto rows = read_runs_file(std::string(VALIDATION_DIR) + "/" + f);
    for (const auto& row : rows) {
      CHECK_MESSAGE(row.measured_step_s > 0, row.name);
      CHECK_NOTHROW(wl::layout_report(wl::resolve(row.scenario)));
    }
    total += rows.size();
  }
  CHECK(total == 216 + 48 + 13);  // validation/README.md: the rows kept, and the subset
}

TEST_CASE("validation_subset" * doctest::skip()) {
  // Run by the CTest `validation_subset` (--no-skip --test-case=validation_subset).
  const test::Run r = test::run_layoutsim("validate '" VALIDATION_DIR "/subset.yaml' --json -");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["rows"].size() == 13);
  CHECK(j["failed"] == 0);
  // Every row ran as published: none may be predicted not to fit.
  CHECK(j["memory_verdicts"]["does_not_fit"] == 0);
  // Bounds on the step-time error over the subset. Measured 2026-11-30 with the kernel
  // model, the NCCL-like collective profiles, the implementation presets (the LLM Foundry
  // rows as pytorch-fsdp with their attention kernel, the Megatron-Bridge row as
  // megatron-core) and the calibrated GPU presets (compute_profile.cpp): mean |error|
  // 5.9 %, worst 18.5 % (an H100 scale-out row). 2026-12-01, with compute slowed beside
  // collectives (workloads/analysis/interference.hpp) and the presets refitted: mean 5.7 %, worst
  // 17.3 % (mpt-30b at seq 8192 on 8 H100). 2026-12-01, with LLM Foundry's flash
  // attention priced as FlashAttention-2 (its two ZeRO-2 H100 rows and the mpt-70b row):
  // mean 4.8 %, worst 17.3 % (the same row). 2026-12-05, with compute beside a collective
  // slowed by the SM share the collective leaves (1.22 on H100) instead of a fitted 1.70,
  // the GPU constants not refitted: mean 7.2 %, worst 21.9 % (the same row, a README
  // "Known biases" row at 97 % of the GPU's memory: the 1.70 had hidden part of its gap);
  // with the slowest of N GPUs (scale_noise.hpp) on top, mean 5.6 %, worst 20.3 %.
  // 2026-12-07, with MPT's loss as llm-foundry computes it (fused cross-entropy; the
  // constants not refitted): mean 6.8 %, worst 20.4 %.
  // Bound = measured + 3 points of margin on the worst (the mean keeps its bound), enough
  // for a re-calibration that moves constants by a few percent, tight enough to catch a
  // model change that undoes the fit.
  const double kMaxMeanAbsError = 0.078;
  const double kMaxAbsError = 0.233;
  CHECK(j["mean_abs_error"].get<double>() <= kMaxMeanAbsError);
  CHECK(j["max_abs_error"].get<double>() <= kMaxAbsError);
  MESSAGE("validation subset mean |error| = " << j["mean_abs_error"].get<double>());
}

TEST_CASE("layoutsim validate / calibrate: outputs, profile round trip, exit codes") {
  const std::string runs = test::tmp("cli_runs.yaml");
  write(runs, kRuns);
  test::Run r = test::run_layoutsim("validate '" + runs + "' --json -");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"rows", "mean_abs_error", "max_abs_error", "mean_error", "groups"}) CHECK_MESSAGE(j.contains(key), key);
  CHECK(j["rows"][0]["id"] == "tiny-step");
  CHECK(j["groups"].contains("parallelism:fsdp-full"));

  // Calibrate the one H100 run's GEMM fraction: one run, one constant, so the fit is exact.
  const std::string prof = test::tmp("cli_profile.yaml");
  r = test::run_layoutsim("calibrate '" + runs + "' --gpu h100-sxm --fit gemm_sustained_fraction --out '" + prof + "' --json -");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  j = nlohmann::json::parse(r.out);
  CHECK(j["gpu"] == "h100-sxm");
  CHECK(j["constants"].size() == 1);
  CHECK(j["fit"]["max_abs_error"].get<double>() < 1e-3);
  CHECK(j.contains("leave_one_out"));
  // The written profile applied by validate reproduces the fitted prediction.
  r = test::run_layoutsim("validate '" + runs + "' --profile '" + prof + "' --json -");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  j = nlohmann::json::parse(r.out);
  CHECK(std::abs(j["rows"][0]["error"].get<double>()) < 1e-3);

  // Mixed GPUs without --gpu, a missing file, a bad --fit: errors with their exit codes.
  CHECK(test::run_layoutsim("calibrate '" + runs + "'").rc == 1);
  CHECK(test::run_layoutsim("validate '" + test::tmp("missing.yaml") + "'").rc == 1);
  CHECK(test::run_layoutsim("calibrate '" + runs + "' --gpu h100-sxm --fit nothing").rc == 2);
}

TEST_CASE("validation_corpus_subset" * doctest::skip()) {
  // Run by the CTest `validation_corpus_subset`: 11 rows of validation/corpus/subset.yaml,
  // from 8 of the held-out sources (none of them fitted the shipped constants), 8 to 256
  // GPUs, Megatron-LM, Megatron-Core, DeepSpeed and torchtitan on A100, H100 and H200.
  const test::Run r = test::run_layoutsim("validate '" VALIDATION_DIR "/corpus/subset.yaml' --leave-out source --json -");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["rows"].size() == 11);
  CHECK(j["failed"] == 0);
  const auto& lo = j["leave_out"];
  CHECK(lo["by"] == "source");
  CHECK(lo["groups"].size() >= 5);  // at least five sources
  CHECK(lo["held_out"]["count"] == 11);
  CHECK(lo["fitted_sources"].empty());
  CHECK(j["memory_verdicts"]["does_not_fit"] == 0);  // every row ran as published
  // Measured 2026-12-01 before any change made for these sources: mean |error| 7.5 %,
  // worst 13.3 % (a Zero Bubble 6.2B row, since dropped: that source fitted a constant),
  // signed mean -5.6 %. Measured 2026-12-02 with the dropout-RNG bound (compute_profile.cpp)
  // on the 11 rows: 7.0 %, worst 14.4 % (Narayanan's GPT 3.6B, +14.4 %; -2.0 % before),
  // signed -2.1 %. Measured 2026-12-05 with the SM share for compute beside collectives and
  // the slowest of N GPUs (scale_noise.hpp): 7.1 %, worst 18.2 % (the same row, which the
  // noise moves by +3.5 % as it does every 64-GPU row), signed -1.5 %. Measured 2026-12-06
  // with that row's micro-batch, schedule and DDP from the authors' own script (it was
  // assumed before): 6.0 %, worst 10.7 % (trainy2025's H200 row), signed +0.3 %. Measured
  // 2026-12-06 with the Hopper attention backward fitted on NeMo's long-sequence table
  // (compute_profile.cpp): 4.4 %, worst 9.1 % (torchtitan's 8B at 64K tokens, cp 2),
  // signed +0.6 %. Bound = measured + 3 points, as for validation_subset: a change that
  // undoes the fit on held-out runs fails.
  CHECK(lo["mean_abs_error"].get<double>() <= 0.074);
  CHECK(lo["max_abs_error"].get<double>() <= 0.121);
  MESSAGE("corpus subset (held out) mean |error| = " << lo["mean_abs_error"].get<double>());
}

TEST_CASE("the Hopper attention backward: NeMo's long-sequence table (4K to 1M tokens) stays fitted") {
  // ComputeProfile::flash_bwd_efficiency of the Hopper parts was fitted on these 9 rows with
  // the Megatron-Bridge H100 rows (compute_profile.cpp): 2.3 %, worst 5.1 %, signed -2.1 %,
  // where the assumed 0.45 gave 20.7 %, worst 29.4 % (the 1M-token row, attention nine
  // tenths of its step). Bound = measured + 3 points: a change to the attention model or
  // the constant that undoes the fit fails, as does one that prices only short sequences.
  const test::Run r = test::run_layoutsim("validate '" VALIDATION_DIR "/corpus/nemo_long_sequence.yaml' --json -");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["rows"].size() == 9);
  CHECK(j["mean_abs_error"].get<double>() <= 0.053);
  CHECK(j["max_abs_error"].get<double>() <= 0.081);
}

TEST_CASE("the validation corpus: every row loads, carries its source and framework, and the set spans ten sources") {
  std::set<std::string> sources;
  std::size_t total = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(VALIDATION_DIR) + "/corpus")) {
    if (e.path().extension() != ".yaml" || e.path().filename() == "subset.yaml") continue;
    const auto rows = read_runs_file(e.path().string());
    for (const auto& row : rows) {
      CAPTURE(row.name);
      CHECK(row.measured_step_s > 0);
      CHECK(!group_label(row.groups, "source").empty());
      CHECK(!group_label(row.groups, "framework").empty());
      // Held out: the shipped constants never saw these sources, but for the one whose
      // kernel-level table fitted ComputeProfile::dropout_rng_rate and the one whose step
      // times fitted the Hopper flash_bwd_efficiency (their files say so).
      const std::string source = group_label(row.groups, "source");
      CHECK(row.fitted == (source == "zero_bubble2023" || source == "nemo_long_sequence"));
      sources.insert(source);
    }
    total += rows.size();
  }
  CHECK(sources.size() >= 10);
  CHECK(total == 273);  // validation/README.md, "corpus/"
  // The fitted tables say so.
  for (const char* f : {"llm_foundry.yaml", "megatron_bridge.yaml"})
    for (const auto& row : read_runs_file(std::string(VALIDATION_DIR) + "/" + f)) CHECK(row.fitted);
}

namespace {

RowOutcome outcome(const std::string& name, const std::string& source, int devices, double error, bool fitted = false) {
  RowOutcome o;
  o.name = name;
  o.groups = {{"source", source}};
  o.devices = devices;
  o.measured_s = 1;
  o.predicted_s = 1 + error;
  o.error = error;
  o.fitted = fitted;
  return o;
}

}  // namespace

TEST_CASE("leave-one-source-out: per-source statistics, held-out pool, slope per doubling (closed form)") {
  // Held out: source a at 8 and 64 GPUs, b at 512; c fitted the constants.
  // Signed errors are 0.01 * log2(GPUs) - 0.05, so the slope is exactly +1 % per doubling.
  std::vector<RowOutcome> rows = {outcome("a1", "a", 8, 0.01 * 3 - 0.05), outcome("a2", "a", 64, 0.01 * 6 - 0.05),
                                  outcome("b1", "b", 512, 0.01 * 9 - 0.05), outcome("c1", "c", 8, 0.30, true)};
  const ValidationReport rep = summarize(rows, "source");
  const LeaveOutReport& lo = rep.leave_out;
  REQUIRE(lo.groups.size() == 3);
  CHECK(lo.groups[0].label == "a");
  CHECK(lo.groups[0].stats.count == 2);
  CHECK(lo.groups[0].stats.mean_error == doctest::Approx((-0.02 + 0.01) / 2));
  CHECK_FALSE(lo.groups[0].fitted);
  CHECK(lo.groups[2].fitted);
  CHECK(lo.held_out.count == 3);  // c is in-sample, not held out
  CHECK(lo.held_out.mean_error == doctest::Approx((-0.02 + 0.01 + 0.04) / 3));
  CHECK(lo.held_out.max_abs_error == doctest::Approx(0.04));
  CHECK(lo.held_out_source_mean_error == doctest::Approx(((-0.02 + 0.01) / 2 + 0.04) / 2));
  CHECK(lo.slope_per_doubling == doctest::Approx(0.01));
  CHECK(lo.fitted_sources == std::vector<std::string>{"c"});
  const auto j = validation_json(rep);
  CHECK(j["leave_out"]["by"] == "source");
  CHECK(j["leave_out"]["groups"]["c"]["fitted"] == true);
  CHECK(j["leave_out"]["held_out"]["count"] == 3);
}

TEST_CASE("an outlier stays in the means and leaves the worst row") {
  std::vector<RowOutcome> rows = {outcome("ok", "a", 8, 0.05), outcome("odd", "a", 8, -0.60)};
  rows[1].outlier = "its sibling at the same layout measured 2x faster";
  const ErrorStats s = error_stats(rows);
  CHECK(s.count == 2);
  CHECK(s.mean_abs_error == doctest::Approx(0.325));
  CHECK(s.max_abs_error == doctest::Approx(0.05));
  CHECK(s.worst == "ok");
  CHECK(s.outliers == 1);
}

TEST_CASE("memory verdicts: every row that simulated is counted once; the ones that do not fit are named") {
  std::vector<RowOutcome> rows = {outcome("a", "s", 8, 0.01), outcome("b", "s", 8, 0.02), outcome("c", "s", 8, -0.03),
                                  outcome("d", "s", 8, 0.0), outcome("e", "s", 8, 0.0)};
  rows[0].memory_verdict = "fits";
  rows[1].memory_verdict = "tight";
  rows[2].memory_verdict = "does-not-fit";
  rows[3].memory_verdict = "fits";
  rows[4].failure = "a simulation error";  // failed: no verdict counted
  rows[4].memory_verdict = "does-not-fit";
  const ValidationReport rep = summarize(rows);
  CHECK(rep.verdicts.fits == 2);
  CHECK(rep.verdicts.tight == 1);
  CHECK(rep.verdicts.does_not_fit == 1);
  CHECK(rep.verdicts.does_not_fit_rows == std::vector<std::string>{"c"});
  const std::string text = format_validation(rep);
  CHECK(text.find("memory: 2 fit, 1 tight, 1 do not fit") != std::string::npos);
  CHECK(text.find("predicted not to fit, though published as run: c") != std::string::npos);
  const auto j = validation_json(rep);
  CHECK(j["memory_verdicts"]["does_not_fit"] == 1);
  CHECK(j["memory_verdicts"]["does_not_fit_rows"][0] == "c");
}

TEST_CASE("runs file: a source block, peak memory, an outlier; bad values are located") {
  const std::string path = test::tmp("runs_source.yaml");
  write(path, R"(source: {id: paper2024, fitted: false}
runs:
  - name: with-memory
    outlier: the same layout in table 3 is 2x faster
    scenario:
      cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 8}
      model: {layers: 4, hidden: 1024, heads: 8, vocab: 32000, seq_len: 1024}
      layout: {dp: 8, zero: 3, microbatch_size: 2, microbatches: 3}
    measured: {step_time: "13 ms", peak_memory: "2 GiB", memory_convention: reserved}
)");
  const auto rows = read_runs_file(path);
  REQUIRE(rows.size() == 1);
  CHECK(group_label(rows[0].groups, "source") == "paper2024");
  CHECK_FALSE(rows[0].fitted);
  CHECK(rows[0].measured_peak_bytes == doctest::Approx(2.0 * 1024 * 1024 * 1024));
  CHECK(rows[0].memory_convention == "reserved");
  CHECK(rows[0].outlier == "the same layout in table 3 is 2x faster");
  const auto out = evaluate_runs(rows, 1);
  REQUIRE(out.size() == 1);
  CHECK(out[0].memory_error == doctest::Approx((out[0].predicted_peak_bytes - out[0].measured_peak_bytes) / out[0].measured_peak_bytes));
  CHECK(out[0].memory_verdict == "fits");

  write(path, R"(runs:
  - name: bad
    scenario: {model: {preset: llama3-8b}}
    measured: {step_time: "1 s", peak_memory: "lots", memory_convention: peak}
)");
  try {
    read_runs_file(path);
    FAIL("expected a RunsFileError");
  } catch (const RunsFileError& e) {
    const std::string m = e.what();
    CHECK(m.find("measured.peak_memory") != std::string::npos);
    CHECK(m.find("measured.memory_convention: expected allocated or reserved") != std::string::npos);
  }
}

TEST_CASE("validate and calibrate on a runs file with no runs: a user error (exit 1), not a table of zeros") {
  const std::string path = test::tmp("runs_empty.yaml");
  write(path, "runs: []\n");
  const test::Run v = test::run_layoutsim("validate '" + path + "'");
  CHECK(v.rc == 1);
  CHECK(v.err.find("no runs") != std::string::npos);
  const test::Run c = test::run_layoutsim("calibrate '" + path + "'");
  CHECK(c.rc == 1);
  CHECK(c.err.find("calibrate: no runs") != std::string::npos);
}
