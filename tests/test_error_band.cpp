// tests/test_error_band.cpp — workloads/analysis/error_band.hpp: the band's closed form (10th and
// 90th percentiles of the held-out errors, turned into a band of the measured step time),
// its grouping, its coverage on the shipped table, and that the table is current.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "run_binary.hpp"
#include "workloads/analysis/error_band.hpp"

#ifndef VALIDATION_DIR
#error "VALIDATION_DIR must be defined (the repository's validation/ folder)"
#endif

using namespace ls::wl;

namespace {

/// "r3": appended, since GCC 12 misreads `"r" + std::to_string(i)` as an overlapping copy.
std::string numbered(const char* prefix, int i) {
  std::string s = prefix;
  s += std::to_string(i);
  return s;
}

BandResidual row(const std::string& id, double error, const std::string& preset, const std::string& kind) {
  return {id, error, {preset, "a100", kind, "<=64"}};
}

}  // namespace

TEST_CASE("error band: the order statistics of the group's errors, as a band of the measured time") {
  // Nine rows of one group with errors -0.20, -0.15, ..., +0.20: k = floor(10 * 0.1) = 1,
  // so the band is the smallest and the largest error, which bound a tenth run's error
  // with probability 8/10.
  std::vector<BandResidual> rows;
  for (int i = 0; i < 9; ++i) rows.push_back(row(numbered("r", i), -0.20 + 0.05 * i, "megatron-core", "pipeline"));
  const ErrorBand b = error_band(10.0, {"megatron-core", "a100", "pipeline", "<=64"}, rows);
  REQUIRE(b.rows == 9);
  CHECK(b.group == "megatron-core · a100 · pipeline · <=64");
  // measured = predicted / (1 + e): the band runs from 10 / 1.16 to 10 / 0.84.
  CHECK(b.lo_s == doctest::Approx(10.0 / 1.20));
  CHECK(b.hi_s == doctest::Approx(10.0 / 0.80));
  // 29 rows: k = floor(30 * 0.1) = 3, the third smallest and third largest.
  for (int i = 9; i < 29; ++i) rows.push_back(row(numbered("r", i), 0.0, "megatron-core", "pipeline"));
  const ErrorBand wide = error_band(10.0, {"megatron-core", "a100", "pipeline", "<=64"}, rows);
  CHECK(wide.rows == 29);
  CHECK(wide.lo_s == doctest::Approx(10.0 / 1.10));  // third largest error: +0.10
  CHECK(wide.hi_s == doctest::Approx(10.0 / 0.90));  // third smallest: -0.10
}

TEST_CASE("error band: the most specific group with enough rows, else coarser, else none") {
  std::vector<BandResidual> rows;
  for (int i = 0; i < 5; ++i) rows.push_back(row(numbered("p", i), 0.01 * i, "deepspeed", "pipeline"));
  for (int i = 0; i < 5; ++i) rows.push_back(row(numbered("s", i), -0.01 * i, "deepspeed", "sharded"));
  // Five pipeline rows are too few (9 needed): the band falls back to every deepspeed a100 row (10).
  const ErrorBand b = error_band(1.0, {"deepspeed", "a100", "pipeline", "<=64"}, rows);
  CHECK(b.rows == 10);
  CHECK(b.group == "deepspeed · a100");
  // Another preset falls back to all rows; an empty table gives no band.
  CHECK(error_band(1.0, {"pytorch-fsdp", "hopper", "data", ">2048"}, rows).group == "all held-out runs");
  CHECK(error_band(1.0, {"deepspeed", "a100", "pipeline", "<=64"}, {}).rows == 0);
}

TEST_CASE("the shipped table: its bands hold the measured time of about 80 % of held-out runs, each left out in turn") {
  const auto& table = shipped_residuals();
  REQUIRE(table.size() >= 100);
  int inside = 0, banded = 0;
  for (std::size_t i = 0; i < table.size(); ++i) {
    std::vector<BandResidual> others = table;
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(i));
    // A prediction of 1 s whose measured time was 1 / (1 + e).
    const ErrorBand b = error_band(1.0, table[i].features, others);
    if (b.rows == 0) continue;
    ++banded;
    const double measured = 1.0 / (1.0 + table[i].error);
    if (measured >= b.lo_s && measured <= b.hi_s) ++inside;
  }
  const double coverage = static_cast<double>(inside) / banded;
  MESSAGE("leave-one-out coverage of the shipped bands: " << coverage << " over " << banded << " rows");
  // The prediction interval's guarantee, for exchangeable errors; the groups are not
  // exactly that (sources differ), so the measured coverage is checked, not assumed.
  CHECK(coverage >= kBandCoverage);
  CHECK(banded == static_cast<int>(table.size()));
}

TEST_CASE("the shipped table is current: the corpus subset's errors are the table's") {
  const ls::test::Run r = ls::test::run_layoutsim("validate '" VALIDATION_DIR "/corpus/subset.yaml' --json -");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const auto j = nlohmann::json::parse(r.out);
  std::map<std::string, double> stored;
  for (const auto& b : shipped_residuals()) stored[b.id] = b.error;
  for (const auto& row : j["rows"]) {
    const std::string id = row["id"];
    CAPTURE(id);
    REQUIRE(stored.count(id) == 1);
    // Rounded to 6 decimals when written. A model change that moves a prediction needs
    // `layoutsim validate --leave-out source --json F` and `python3 tools/dev/error_bands.py F`.
    CHECK(std::abs(row["error"].get<double>() - stored[id]) <= 1e-6);
  }
}
