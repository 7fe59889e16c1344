// tests/test_validate_series.cpp — tools/study/validate_series.hpp: the least-squares line
// (closed form), which rows make a micro-batch series (read from a runs file), and the
// series' lines in validate's report.
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools/study/validate.hpp"
#include "tools/study/validate_series.hpp"

using namespace ls;
using namespace ls::tools;

namespace {

RowOutcome point(const std::string& name, const std::string& key, int m, double measured, double predicted) {
  RowOutcome r;
  r.name = name;
  r.series_key = key;
  r.series_label = "src model";
  r.microbatches = m;
  r.measured_s = measured;
  r.predicted_s = predicted;
  r.error = (predicted - measured) / measured;
  r.devices = 8;
  return r;
}

// One row: a two-stage pipeline (tp 2) on `nodes` nodes of 4 GPUs, `layout` its layout
// keys; `extra` lines go before its scenario.
std::string row(const std::string& name, const std::string& layout, int nodes = 1, int hidden = 1024, const std::string& extra = "") {
  return "  - name: " + name + "\n" + extra + "    scenario:\n      cluster: {gpu: h100-sxm, nodes: " + std::to_string(nodes) +
         ", gpus_per_node: 4}\n      model: {layers: 4, hidden: " + std::to_string(hidden) +
         ", heads: 8, vocab: 32000, seq_len: 1024}\n      layout: {" + layout + "}\n    measured: {step_time: \"20 ms\"}\n";
}

// Three rows on one node that differ in micro-batches (the third through the global
// batch, its keys spelt in another order), one on two nodes with dp 2 (same series), one
// measured on another release (metadata.framework_version: no series with the others),
// one with another hidden size (another series, of one row).
std::string series_runs() {
  const std::string pipe = "pp: 2, tp: 2, microbatch_size: 1, ";
  return "source: {id: tiny, fitted: false}\nruns:\n" + row("m8", pipe + "dp: 1, microbatches: 8") +
         row("m4", pipe + "dp: 1, microbatches: 4") +
         "  - name: m2-reordered\n    scenario:\n      model: {seq_len: 1024, vocab: 32000, heads: 8, hidden: 1024, layers: 4}\n"
         "      layout: {global_batch: 2, tp: 2, pp: 2, microbatch_size: 1}\n"
         "      cluster: {gpus_per_node: 4, nodes: 1, gpu: h100-sxm}\n    measured: {step_time: \"13 ms\"}\n" +
         row("m4-dp2", pipe + "dp: 2, microbatches: 4", 2) +
         row("m4-other-release", pipe + "dp: 1, microbatches: 4", 1, 1024, "    metadata: {framework_version: \"v2\"}\n") +
         row("other-hidden", pipe + "dp: 1, microbatches: 4", 1, 2048);
}

}  // namespace

TEST_CASE("fit_line: exact through points on a line, least squares otherwise") {
  const LineFit exact = fit_line({2, 4, 8}, {1.5 + 0.25 * 2, 1.5 + 0.25 * 4, 1.5 + 0.25 * 8});
  CHECK(exact.slope == doctest::Approx(0.25).epsilon(1e-12));
  CHECK(exact.intercept == doctest::Approx(1.5).epsilon(1e-12));
  CHECK(exact.max_residual == doctest::Approx(0).epsilon(1e-12));
  // (0, 0), (1, 2), (2, 1): mean x 1, mean y 1, Sxy = (-1)(-1) + 0 + (1)(0) = 1, Sxx = 2:
  // slope 1/2, intercept 1/2; residuals -1/2, +1, -1/2.
  const LineFit ls = fit_line({0, 1, 2}, {0, 2, 1});
  CHECK(ls.slope == doctest::Approx(0.5));
  CHECK(ls.intercept == doctest::Approx(0.5));
  CHECK(ls.max_residual == doctest::Approx(1.0));
  CHECK_THROWS_AS(fit_line({1, 1}, {2, 3}), std::invalid_argument);
  CHECK_THROWS_AS(fit_line({1, 2}, {2}), std::invalid_argument);
}

TEST_CASE("micro-batch series: rows of one key with two micro-batch counts or more, fitted measured and predicted") {
  // Measured: 0.1 s per micro-batch + 2 s; predicted: 0.11 s + 1 s (10 % dearer per
  // micro-batch, 1 s short per step). A lone key, a key with one m, and a key with a
  // failed row make no series.
  std::vector<RowOutcome> rows = {point("a8", "A", 8, 2.8, 1.88),     point("lone", "L", 4, 1, 1),   point("a2", "A", 2, 2.2, 1.22),
                                  point("a4", "A", 4, 2.4, 1.44),     point("s1", "S", 4, 1, 1),     point("s2", "S", 4, 1.1, 1.1),
                                  point("f1", "F", 2, 1, 1),          point("f2", "F", 4, 2, NAN),   point("none", "", 2, 1, 1)};
  rows[7].failure = "does not fit";
  const ValidationReport rep = summarize(rows);
  REQUIRE(rep.series.size() == 1);
  const MicrobatchSeries& s = rep.series[0];
  CHECK(s.label == "src model");
  CHECK(s.rows == std::vector<std::string>{"a2", "a4", "a8"});
  CHECK(s.microbatches == std::vector<int>{2, 4, 8});
  CHECK(s.measured.slope == doctest::Approx(0.1));
  CHECK(s.measured.intercept == doctest::Approx(2.0));
  CHECK(s.predicted.slope == doctest::Approx(0.11));
  CHECK(s.predicted.intercept == doctest::Approx(1.0));
  const std::string text = format_validation(rep);
  CHECK(text.find("micro-batch series") != std::string::npos);
  CHECK(text.find("+10.0%") != std::string::npos);  // per micro-batch, predicted vs measured
  CHECK(text.find("src model     3        2-8") != std::string::npos);
  const auto j = validation_json(rep);
  REQUIRE(j["series"].size() == 1);
  CHECK(j["series"][0]["rows"].size() == 3);
  CHECK(j["series"][0]["measured"]["fixed_s"].get<double>() == doctest::Approx(2.0));
  CHECK(j["series"][0]["predicted"]["per_microbatch_s"].get<double>() == doctest::Approx(0.11));
  CHECK_FALSE(validation_json(summarize({rows[1]})).contains("series"));
  // Equal measured steps at two counts: no relative error per micro-batch to print.
  const std::string flat = format_series(microbatch_series({point("f2", "Z", 2, 1.0, 1.0), point("f4", "Z", 4, 1.0, 1.2)}));
  CHECK(flat.find("n/a") != std::string::npos);
  CHECK(flat.find("inf") == std::string::npos);
}

TEST_CASE("micro-batch series from a runs file: the key ignores dp, nodes, micro-batches, global batch and key order, not the release") {
  const auto rows = read_runs_text(series_runs(), "series.yaml");
  REQUIRE(rows.size() == 6);
  CHECK_FALSE(rows[0].series_key.empty());
  for (std::size_t i : {1, 2, 3}) CHECK(rows[i].series_key == rows[0].series_key);
  CHECK(rows[4].series_key != rows[0].series_key);  // another release
  CHECK(rows[5].series_key != rows[0].series_key);  // another model
  CHECK(rows[5].series_key != rows[4].series_key);
  CHECK(rows[2].scenario.layout.microbatches == 2);
  const auto out = evaluate_runs(rows, 2);
  const ValidationReport rep = summarize(out);
  REQUIRE(rep.series.size() == 1);
  const MicrobatchSeries& s = rep.series[0];
  CHECK(s.rows == std::vector<std::string>{"m2-reordered", "m4", "m4-dp2", "m8"});
  CHECK(s.microbatches == std::vector<int>{2, 4, 4, 8});
  CHECK(s.label == "tiny custom t2·p2 1f1b mbs 1");  // "custom": the model name resolve() gives an unnamed model
  // At one dp, a 1F1B step is (m + p − 1) slots plus what each step costs once, so the
  // predicted steps lie on a line whose slope is one slot: the simulation adds nothing
  // per micro-batch beyond the slot. Tolerance: picosecond rounding per event.
  const LineFit dp1 = fit_line({8, 4, 2}, {out[0].predicted_s, out[1].predicted_s, out[2].predicted_s});
  CHECK(dp1.max_residual < 1e-9);
  CHECK(dp1.slope > 0);
  CHECK(dp1.slope == doctest::Approx((out[0].predicted_s - out[1].predicted_s) / 4).epsilon(1e-9));
  // dp 2 adds a gradient reduction across the nodes to the step, not to its micro-batches.
  CHECK(out[3].predicted_s > out[1].predicted_s);
}
