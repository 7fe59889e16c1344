// tests/test_search.cpp — `layoutsim search` (tools/study/search.hpp): the space, the
// pruning counts, --fix, sharding, determinism across thread counts, --emit, exit
// codes, and the figures scenarios/search-llama3-70b-64xh100.yaml quotes.
//
// Most cases search a tiny model (8 layers, 8 heads, 4 KV heads) on 2 nodes × 4 GPUs
// with a 3 GB GPU, so that every rule, including the memory one, fires in well under
// a second. No timing is asserted.
#include <doctest/doctest.h>

#include "sanitizers.hpp"

#include "run_binary.hpp"
#include "search_fixtures.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tools/report/human_units.hpp"

#include "tools/scenario/scenario.hpp"
#include "tools/study/search.hpp"
#include "workloads/layout_report.hpp"
#include "workloads/model/headroom.hpp"

#ifndef LAYOUTSIM_BIN
#error "LAYOUTSIM_BIN must be defined (path of the layoutsim executable)"
#endif
#ifndef SCENARIOS_DIR
#error "SCENARIOS_DIR must be defined (path of the scenarios/ folder)"
#endif

using namespace ls;
using nlohmann::json;

namespace {

const char* const kTiny = test::kTinySearch.c_str();

std::string tiny_path() {
  static const std::string path = [] {
    const std::string p = test::tmp("tiny.yaml");
    std::ofstream(p) << kTiny;
    return p;
  }();
  return path;
}

wl::ResolvedScenario tiny() { return tools::load_scenario_string(kTiny, "tiny.yaml"); }

// The points of the space only; the remedy candidates have a test of their own.
tools::SearchOptions options(const wl::Scenario& base) {
  tools::SearchOptions o;
  o.axes = tools::default_axes(base);
  o.simulate_top = 8;
  o.remedies = false;
  o.jobs = 1;
  return o;
}

json without_wall_time(json j) {
  for (const char* k : {"wall_s", "analytic_wall_s", "simulate_wall_s"}) j.erase(k);
  return j;
}

}  // namespace

TEST_CASE("enumeration: dp·tp·pp = GPUs, and each rule rejects exactly the points that break it") {
  const auto base = tiny();
  const auto& m = base->model;
  const auto cands = tools::enumerate_candidates(*base, 16, tools::default_axes(*base));
  REQUIRE(!cands.empty());
  std::set<std::string> compact;
  std::set<std::string> reasons;
  for (const auto& c : cands) {
    const auto& l = c.layout;
    CHECK(l.dp * l.tp * l.pp == 8);
    const bool tp_ok = m.heads % l.tp == 0 && m.kv_heads % l.tp == 0 && m.ffn_hidden % l.tp == 0;
    const int chunks = l.pp * (l.schedule == wl::Schedule::interleaved_1f1b ? l.virtual_stages : 1);
    const bool layers_ok = chunks <= m.layers && (l.stage_layers_mode == wl::StageLayersMode::balanced || m.layers % chunks == 0);
    const bool batch_ok = 16 % (l.dp * l.microbatch_size) == 0;
    CHECK((c.rejected == "tp-indivisible") == !tp_ok);
    if (tp_ok) CHECK((c.rejected == "too-few-layers" || c.rejected == "layers-indivisible") == !layers_ok);
    if (tp_ok && layers_ok) CHECK((c.rejected == "batch-indivisible") == !batch_ok);
    if (c.rejected.empty()) CHECK(l.microbatches * l.dp * l.microbatch_size == 16);
    reasons.insert(c.rejected);
    // One spelling per layout: the compact string (which shows every axis that
    // matters) is unique, and the index is the position.
    CHECK(compact.insert(tools::compact_layout(l)).second);
    CHECK(c.index == static_cast<std::size_t>(&c - cands.data()));
  }
  // The tiny space exercises every structural rule (8 KV-head split 4: tp 8 fails).
  for (const char* r : {"", "tp-indivisible", "too-few-layers", "batch-indivisible", "interleaved-microbatches"})
    CHECK(reasons.count(r) == 1);
  // tp 1 collapses sp; pp 1 collapses schedule and stage layers.
  for (const auto& c : cands) {
    if (c.layout.tp == 1) CHECK(!c.layout.sequence_parallel);
    if (c.layout.pp == 1) CHECK(c.layout.schedule == wl::Schedule::one_f_one_b);
  }
}

TEST_CASE("compact layout string") {
  tools::SearchLayout l;
  l.tp = 8, l.pp = 16, l.dp = 16, l.zero = 1, l.sequence_parallel = true, l.recompute = wl::Recompute::selective;
  l.schedule = wl::Schedule::interleaved_1f1b, l.virtual_stages = 2;
  CHECK(tools::compact_layout(l) == "t8·p16(v2)·d16 z1 sp sel mbs1 1f1b");
  l.schedule = wl::Schedule::one_f_one_b, l.virtual_stages = 1, l.stage_layers_mode = wl::StageLayersMode::balanced;
  l.placement = {"tp", "pp", "dp"};
  CHECK(tools::compact_layout(l) == "t8·p16(bal)·d16 z1 sp sel mbs1 1f1b [tp,pp,dp]");
}

TEST_CASE("pruning counts add up: evaluated = rejected + kept; rejected candidates carry their reason") {
  const auto base = tiny();
  const auto rep = tools::run_search(base, options(*base));
  std::size_t rejected = 0;
  for (const auto& [why, n] : rep.rejected_by_reason) rejected += n;
  CHECK(rep.evaluated == tools::enumerate_candidates(*base, 16, tools::default_axes(*base)).size());
  CHECK(rep.evaluated == rejected + rep.ranked.size());
  CHECK(rep.rejected.size() == rejected);
  CHECK(rep.rejected_by_reason.count("memory") == 1);  // the 3 GB GPU
  CHECK(rep.simulated == 8);
  // Best first: the simulated ones lead, each tier ordered by step time.
  for (std::size_t i = 0; i < rep.ranked.size(); ++i) CHECK(rep.ranked[i].simulated == (i < 8));
  for (std::size_t i = 1; i < 8; ++i) CHECK(rep.ranked[i - 1].step_time_s <= rep.ranked[i].step_time_s);
  for (const auto& c : rep.ranked) CHECK(c.peak_memory_bytes <= rep.memory_capacity_bytes);
  // The analytic stage applies the layout rules without wl::resolve: every kept
  // candidate must resolve, and every "invalid-*" one must not.
  for (const auto& c : rep.ranked) CHECK_NOTHROW(wl::resolve(tools::candidate_scenario(*base, 16, c.layout)));
  for (const auto& c : rep.rejected)
    if (c.rejected.rfind("invalid-", 0) == 0)
      CHECK_THROWS_AS(wl::resolve(tools::candidate_scenario(*base, 16, c.layout)), wl::InvalidScenario);
}

TEST_CASE("the memory bound that prunes before building is below the plan's peak") {
  // The bound rejects a candidate without building its program, so it must never
  // exceed the peak `layoutsim check` reports (else a fitting layout would be lost).
  const auto base = tiny();
  int checked = 0;
  for (const auto& c : tools::enumerate_candidates(*base, 16, tools::default_axes(*base))) {
    if (!c.rejected.empty() || c.index % 7 != 0) continue;  // a spread sample keeps it quick
    const auto sc = wl::resolve(tools::candidate_scenario(*base, 16, c.layout));
    double peak = 0;
    for (const auto& m : wl::layout_report(sc).memory_per_stage) peak = std::max(peak, m.peak);
    CHECK(tools::memory_lower_bound(*sc) <= peak * (1 + 1e-12));
    ++checked;
  }
  CHECK(checked > 100);
}

TEST_CASE("--fix pins an axis, --vary replaces its list; bad options are usage errors") {
  const auto base = tiny();
  auto o = options(*base);
  tools::apply_axis_option(o.axes, "tp=2", true);
  tools::apply_axis_option(o.axes, "layout.recompute=full", true);
  tools::apply_axis_option(o.axes, "mbs=1,2", false);
  const auto rep = tools::run_search(base, o);
  REQUIRE(!rep.ranked.empty());
  for (const auto& c : rep.ranked) {
    CHECK(c.layout.tp == 2);
    CHECK(c.layout.recompute == wl::Recompute::full);
    CHECK((c.layout.microbatch_size == 1 || c.layout.microbatch_size == 2));
  }
  // v = 1 with interleaved-1f1b passes the structural rules; the loader's rule rejects it.
  auto ov = options(*base);
  tools::apply_axis_option(ov.axes, "v=1,2", false);
  ov.simulate_top = 0;
  const auto repv = tools::run_search(base, ov);
  CHECK(repv.rejected_by_reason.count("invalid-virtual_stages") == 1);
  for (const auto& c : repv.rejected)
    if (c.rejected == "invalid-virtual_stages") CHECK(c.layout.virtual_stages == 1);
  CHECK_THROWS_AS(tools::apply_axis_option(o.axes, "tp=2,4", true), std::invalid_argument);
  CHECK_THROWS_AS(tools::apply_axis_option(o.axes, "nonsense=1", false), std::invalid_argument);
  CHECK_THROWS_AS(tools::apply_axis_option(o.axes, "zero=4", false), std::invalid_argument);
  CHECK_THROWS_AS(tools::apply_axis_option(o.axes, "placement=tp/dp", false), std::invalid_argument);
  CHECK_THROWS_AS(tools::apply_axis_option(o.axes, "cp=0", false), std::invalid_argument);
  tools::apply_axis_option(o.axes, "cp=1,2", false);  // context parallelism is an axis like the others
  CHECK(o.axes.cp == std::vector<int>{1, 2});
}

TEST_CASE("shards 0/2 and 1/2 together are the unsharded candidate set") {
  const auto base = tiny();
  auto o = options(*base);
  auto key_set = [](const tools::SearchReport& r) {
    std::set<std::tuple<std::size_t, std::string, double>> s;  // index, outcome, estimate
    for (const auto& c : r.ranked) s.insert({c.index, "kept", c.analytic_step_s});
    for (const auto& c : r.rejected) s.insert({c.index, c.rejected, 0.0});
    return s;
  };
  const auto all = tools::run_search(base, o);
  o.shard_count = 2;
  o.shard_index = 0;
  const auto s0 = tools::run_search(base, o);
  o.shard_index = 1;
  const auto s1 = tools::run_search(base, o);
  CHECK(s0.evaluated + s1.evaluated == all.evaluated);
  auto merged = key_set(s0);
  for (const auto& k : key_set(s1)) CHECK(merged.insert(k).second);  // disjoint
  CHECK(merged == key_set(all));
  for (const auto& c : s0.ranked) CHECK(c.index % 2 == 0);
  // Each shard simulates its own best K by the estimate, which holds every one of the
  // unsharded run's K that falls in the shard: the winner is simulated there too.
  const auto& win = all.ranked.front();
  const auto& shard = win.index % 2 == 0 ? s0 : s1;
  const auto it = std::find_if(shard.ranked.begin(), shard.ranked.end(), [&](const auto& c) { return c.index == win.index; });
  REQUIRE(it != shard.ranked.end());
  CHECK(it->simulated);
  CHECK(it->step_time_s == win.step_time_s);
  o.shard_index = 2;
  CHECK_THROWS_AS(tools::run_search(base, o), std::invalid_argument);
}

TEST_CASE("candidates equal but for their placement share one program build, and each gets the estimate it gets alone") {
  // The analytic stage builds one program for a run of candidates that differ only in
  // placement and re-places its ranks for the others (search_estimate.cpp, analyze_run). Searched
  // one placement at a time nothing is shared: every estimate must be the same double.
  const auto base = tiny();
  auto o = options(*base);
  o.simulate_top = 1;
  const auto all = tools::run_search(base, o);
  std::map<std::string, std::pair<double, double>> alone;  // compact layout -> (estimate, peak)
  for (const auto& place : o.axes.placement) {
    auto one = o;
    one.axes.placement = {place};
    for (const auto& c : tools::run_search(base, one).ranked)
      alone[tools::compact_layout(c.layout)] = {c.analytic_step_s, c.analytic_peak_bytes};
  }
  std::map<std::string, std::set<double>> by_degrees;  // the layout less its placement -> estimates
  for (const auto& c : all.ranked) {
    const std::string key = tools::compact_layout(c.layout);
    CAPTURE(key);
    REQUIRE(alone.count(key) == 1);
    CHECK(c.analytic_step_s == alone[key].first);
    CHECK(c.analytic_peak_bytes == alone[key].second);
    auto bare = c.layout;
    bare.placement = {};
    by_degrees[tools::compact_layout(bare)].insert(c.analytic_step_s);
  }
  // The placement moves the estimate somewhere (sharing did not just copy a step time).
  CHECK(std::any_of(by_degrees.begin(), by_degrees.end(), [](const auto& e) { return e.second.size() > 1; }));
}

TEST_CASE("layoutsim search: the same JSON whatever --jobs; CSV rows = evaluated candidates") {
  const std::string p = tiny_path();
  const auto r1 = test::run_layoutsim("search '" + p + "' --simulate-top 12 --jobs 1 --json -");
  const auto r2 = test::run_layoutsim("search '" + p + "' --simulate-top 12 --jobs 2 --json -");
  REQUIRE(r1.rc == 0);
  REQUIRE(r2.rc == 0);
  const json j1 = json::parse(r1.out), j2 = json::parse(r2.out);
  CHECK(without_wall_time(j1).dump() == without_wall_time(j2).dump());
  CHECK(j1["counts"]["simulated"] == 12 + 1);  // the best 12 points and the best 12/8 = 1 remedy
  CHECK(j1["candidates"].size() == j1["counts"]["kept"]);
  const auto& best = j1["candidates"][0];
  for (const char* k : {"dp", "tp", "pp", "cp", "ep", "zero"}) CHECK(best["layout"].contains(k));
  for (const char* k : {"step_time_s", "tokens_per_s", "mfu", "peak_memory_bytes", "fits", "simulated"}) CHECK(best.contains(k));

  const auto csv = test::run_layoutsim("search '" + p + "' --simulate-top 12 --csv -");
  REQUIRE(csv.rc == 0);
  const auto rows = std::count(csv.out.begin(), csv.out.end(), '\n') - 1;
  CHECK(rows == j1["counts"]["evaluated"].get<long>());
}

TEST_CASE("--emit writes a scenario that `layoutsim run` accepts and that gives the reported step time") {
  const std::string p = tiny_path(), best = test::tmp("best.yaml");
  const auto r = test::run_layoutsim("search '" + p + "' --simulate-top 8 --json - --emit '" + best + "'");
  REQUIRE(r.rc == 0);
  const json j = json::parse(r.out);
  const auto run = test::run_layoutsim("run '" + best + "' --json -");
  INFO(run.err);
  REQUIRE(run.rc == 0);
  const json rj = json::parse(run.out);
  const double reported = j["candidates"][0]["step_time_s"].get<double>();
  CHECK(std::abs(rj["step_time_s"].get<double>() / reported - 1) < 1e-9);
}

TEST_CASE("exit codes: 2 for usage, 1 for an invalid scenario or when nothing survives") {
  const std::string p = tiny_path();
  CHECK(test::run_layoutsim("search '" + p + "' --objective cost").rc == 2);
  CHECK(test::run_layoutsim("search '" + p + "' --vary bogus=1").rc == 2);
  CHECK(test::run_layoutsim("search '" + p + "' --fix tp=1,2").rc == 2);
  CHECK(test::run_layoutsim("search '" + p + "' --shard 2/2").rc == 2);
  CHECK(test::run_layoutsim("search '" + p + "' --shard x").rc == 2);
  CHECK(test::run_layoutsim("search '" + test::tmp("missing.yaml") + "'").rc == 1);
  CHECK(test::run_layoutsim("search '" + p + "' --fix tp=8").rc == 1);  // 8 does not divide 4 KV heads
}

using ls::test::kAsan;

// Its figures are the Release suite's to check; under the sanitizers the same 70B search
// (36,373 candidates, 4 minutes under ASan) already runs in readme_examples.
TEST_CASE("scenarios/search-llama3-70b-64xh100.yaml: the figures its comment quotes" * doctest::skip(kAsan)) {
  // The comment rounds to 4 significant figures (step time) or 3 (MFU, memory);
  // 0.1 % relative covers that rounding.
  const std::string file = std::string(SCENARIOS_DIR) + "/search-llama3-70b-64xh100.yaml";
  const auto r = test::run_layoutsim("search '" + file + "' --jobs 2 --json -");
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json j = json::parse(r.out);
  const auto& n = j["counts"];
  CHECK(n["evaluated"] == 36373);  // 34,416 points of the space + 1,957 remedy candidates
  long structural = 0;
  for (const char* why : {"tp-indivisible", "ep-indivisible", "too-few-layers", "layers-indivisible", "batch-indivisible",
                          "interleaved-microbatches"})
    structural += n["rejected"].value(why, 0L);
  CHECK(structural == 6633);
  CHECK(n["rejected"]["zero-with-pp"] == 13116);
  CHECK(n["rejected"]["memory"] == 13711);  // 12,641 points + 1,070 remedies over once built
  CHECK(n["kept"] == 2913);
  CHECK(n["simulated"] == 72);  // the best 64 points and the best 8 remedies
  long remedies = 0, simulated_remedies = 0;
  for (const auto& c : j["candidates"])
    if (c.contains("origin")) {
      ++remedies;
      simulated_remedies += c["simulated"].get<bool>() ? 1 : 0;
    }
  CHECK(remedies == 887);
  CHECK(simulated_remedies == 8);
  // The best remedy: activation offload on t4·p4(v4)·d4, 10.4 % slower than the winner.
  for (const auto& c : j["candidates"])
    if (c.contains("origin") && c["simulated"].get<bool>()) {
      CHECK(c["compact"].get<std::string>().rfind("t4·p4(v4)·d4 z1 sp mbs1 1f1b off:act", 0) == 0);
      CHECK(c["step_time_s"].get<double>() / j["candidates"][0]["step_time_s"].get<double>() == doctest::Approx(1.104).epsilon(1e-3));
      break;
    }
  const auto& best = j["candidates"][0];
  CHECK(best["compact"] == "t4·p4(v4,bal)·d2·c2 z1 sp mbs1 1f1b");
  CHECK(best["step_time_s"].get<double>() == doctest::Approx(15.89).epsilon(1e-3));
  CHECK(best["mfu"].get<double>() == doctest::Approx(0.502).epsilon(1e-3));
  CHECK(best["peak_memory_bytes"].get<double>() == doctest::Approx(67.7e9).epsilon(1e-3));
  // The best with other degrees: 4.5 % slower.
  for (const auto& c : j["candidates"])
    if (c["layout"]["tp"] != 4 || c["layout"]["pp"] != 4 || c["layout"]["cp"] != 2) {
      CHECK(c["compact"].get<std::string>().rfind("t2·p1·d16·c2 z3", 0) == 0);
      CHECK(c["step_time_s"].get<double>() / best["step_time_s"].get<double>() == doctest::Approx(1.045).epsilon(1e-3));
      break;
    }

  const auto run = test::run_layoutsim("run '" + file + "' --json -");
  REQUIRE(run.rc == 0);
  const json hand = json::parse(run.out);
  CHECK(hand["step_time_s"].get<double>() == doctest::Approx(18.93).epsilon(1e-3));
  CHECK(hand["mfu"].get<double>() == doctest::Approx(0.421).epsilon(1e-3));
}

TEST_CASE("CSV shards concatenate: sorted by (tier, step_time_s, index) they are the single run's CSV") {
  // With --simulate-top 0 nothing depends on which shard a candidate fell in, so the
  // merge is byte-identical (the README's `sort -t, -k1,1n -k2,2g -k3,3n` does this).
  const std::string p = tiny_path();
  auto rows_of = [](const std::string& csv) {
    std::vector<std::string> rows;
    std::size_t start = csv.find('\n') + 1;
    while (start < csv.size()) {
      const std::size_t end = csv.find('\n', start);
      rows.push_back(csv.substr(start, end - start));
      start = end + 1;
    }
    return rows;
  };
  const auto all = test::run_layoutsim("search '" + p + "' --simulate-top 0 --csv -");
  REQUIRE(all.rc == 0);
  std::vector<std::string> merged;
  std::string header;
  for (int i = 0; i < 3; ++i) {
    const auto part = test::run_layoutsim("search '" + p + "' --simulate-top 0 --csv - --shard " + std::to_string(i) + "/3");
    REQUIRE(part.rc == 0);
    header = part.out.substr(0, part.out.find('\n'));
    for (auto& r : rows_of(part.out)) merged.push_back(r);
  }
  auto key = [](const std::string& row) {
    const std::size_t c1 = row.find(','), c2 = row.find(',', c1 + 1), c3 = row.find(',', c2 + 1);
    const std::string step = row.substr(c1 + 1, c2 - c1 - 1);
    return std::make_tuple(std::stoi(row.substr(0, c1)), step.empty() ? 0.0 : std::stod(step), std::stol(row.substr(c2 + 1, c3 - c2 - 1)));
  };
  std::stable_sort(merged.begin(), merged.end(), [&](const auto& a, const auto& b) { return key(a) < key(b); });
  CHECK(header == all.out.substr(0, all.out.find('\n')));
  CHECK(merged == rows_of(all.out));
}

TEST_CASE("≈: a candidate closer to the best than the width of the best's error band") {
  const auto base = tiny();
  auto rep = tools::run_search(base, options(*base));
  REQUIRE(rep.ranked.size() > 2);
  // The band is the one a run of the best layout gets.
  const auto& best = rep.ranked.front();
  const wl::ErrorBand band = wl::error_band(best.step_time_s, wl::band_features(tools::candidate_scenario(*base, 16, best.layout)),
                                            wl::shipped_residuals());
  CHECK(rep.best_band.rows == band.rows);
  CHECK(rep.best_band.lo_s == band.lo_s);
  CHECK(rep.best_band.hi_s == band.hi_s);
  // The rule, stated on a band set by hand: width 10 % of the best's step time.
  rep.best_band = {.rows = 9, .lo_s = best.step_time_s * 0.95, .hi_s = best.step_time_s * 1.05, .group = "test"};
  CHECK_FALSE(tools::within_band(rep, rep.ranked.front()));  // the best is the reference
  for (std::size_t i = 1; i < rep.ranked.size(); ++i) {
    const auto& c = rep.ranked[i];
    CAPTURE(i);
    CHECK(tools::within_band(rep, c) == (std::abs(c.step_time_s - best.step_time_s) < 0.1 * best.step_time_s));
  }
  rep.best_band.rows = 0;  // no band: nothing is marked
  for (const auto& c : rep.ranked) CHECK_FALSE(tools::within_band(rep, c));
}

TEST_CASE("the winner is explained against the best candidate with other degrees, part by part") {
  const auto base = tiny();
  const auto rep = tools::run_search(base, options(*base));
  const std::string text = tools::explain_winner(rep);
  REQUIRE_FALSE(text.empty());
  // The runner-up named is the first simulated candidate whose degrees differ.
  const auto& a = rep.ranked.front();
  std::size_t k = 1;
  const auto same = [&](const tools::SearchLayout& l) {
    return l.tp == a.layout.tp && l.pp == a.layout.pp && l.dp == a.layout.dp && l.cp == a.layout.cp && l.ep == a.layout.ep &&
           l.zero == a.layout.zero;
  };
  while (same(rep.ranked[k].layout)) ++k;
  const auto& b = rep.ranked[k];
  CHECK(text.find(fmt::format("Why #1 over #{} ({})", k + 1, tools::compact_layout(b.layout))) != std::string::npos);
  // Each part is there, with both figures.
  for (const char* part : {"step time", "compute (busiest stage)", "pipeline bubble", "peak memory"})
    CHECK(text.find(part) != std::string::npos);
  CHECK(a.compute_s > 0);
  CHECK(a.compute_s <= a.step_time_s);
  CHECK(text.find(ls::tools::human_seconds(a.compute_s)) != std::string::npos);
  CHECK(text.find(ls::tools::human_seconds(b.compute_s)) != std::string::npos);
  // The table prints the paragraph under it, the JSON carries it, and --explain prints it alone.
  CHECK(tools::format_search(rep, 5).find(text) != std::string::npos);
  CHECK(tools::search_json(rep)["explanation"] == text.substr(text.find_first_not_of('\n')));
  const auto r = test::run_layoutsim("search '" + tiny_path() + "' --simulate-top 8 --no-remedies --jobs 1 --explain");
  REQUIRE(r.rc == 0);
  CHECK(r.out == text.substr(text.find_first_not_of('\n')));
  CHECK(test::run_layoutsim("search '" + tiny_path() + "' --explain --json -").rc == 2);
}

namespace {
/// The fields of each record of an RFC 4180 text (quoted cells may hold commas, quotes
/// doubled, line breaks).
std::vector<std::size_t> csv_record_widths(const std::string& text) {
  std::vector<std::size_t> widths;
  std::size_t fields = 1;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') ++i;
      else if (c == '"') quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      ++fields;
    } else if (c == '\n') {
      widths.push_back(fields);
      fields = 1;
    }
  }
  return widths;
}
}  // namespace

TEST_CASE("search --csv: every record has the header's field count (layouts and reasons hold commas)") {
  const auto base = tiny();
  const auto rep = tools::run_search(base, options(*base));
  const std::string csv = tools::search_csv(rep);
  const auto widths = csv_record_widths(csv);
  REQUIRE(widths.size() == 1 + rep.ranked.size() + rep.rejected.size());
  for (std::size_t i = 1; i < widths.size(); ++i) {
    CAPTURE(i);
    CHECK(widths[i] == widths.front());
  }
  // The compact layouts that hold commas ("p2(v4,bal)", "[tp,pp,dp]") are among them.
  CHECK(csv.find("\"t") != std::string::npos);
}

TEST_CASE("a scenario whose own layout does not suit its global batch is searched from its cluster, model and batch") {
  // 8 GPUs: the default dp 8 does not divide 12 sequences, so `run` refuses the file;
  // the search notes it and keeps the 12 (dp 4 or 2 or 1 layouts take it).
  std::string text = kTiny;
  text.replace(text.find("  tp: 2\n  global_batch: 16"), 27, "  tp: 1\n  global_batch: 12");
  CHECK_THROWS_AS(tools::load_scenario_string(text, "odd.yaml"), tools::ScenarioError);
  const tools::SearchBase start = tools::load_search_base_string(text, "odd.yaml");
  CHECK(start.global_batch == 12);
  CHECK(start.layout_note.find("layout.global_batch") != std::string::npos);
  tools::SearchOptions o = options(*start.scenario);
  o.global_batch = start.global_batch;
  const tools::SearchReport rep = tools::run_search(start.scenario, o);
  REQUIRE(!rep.ranked.empty());
  CHECK(rep.global_batch == 12);
  for (const auto& c : rep.ranked) CHECK(std::int64_t{c.layout.microbatches} * c.layout.dp * c.layout.microbatch_size == 12);
  // An error outside the layout is still the scenario's, located.
  std::string broken = text;
  broken.replace(broken.find("heads: 8"), 8, "heads: 0");
  CHECK_THROWS_AS(tools::load_search_base_string(broken, "broken.yaml"), tools::ScenarioError);
  // A scenario that resolves keeps its layout and says nothing.
  const tools::SearchBase plain = tools::load_search_base_string(kTiny, "tiny.yaml");
  CHECK(plain.layout_note.empty());
  CHECK(plain.global_batch == 16);
  CHECK(plain.scenario->layout.tp == 2);
}

TEST_CASE("default axes: cp 2 from 4k-token sequences, 4 and 8 from 16k, MoE included") {
  wl::Scenario s = *tiny();
  CHECK(tools::default_axes(s).cp == std::vector<int>{1});
  s.model.seq_len = 4096;
  CHECK(tools::default_axes(s).cp == std::vector<int>{1, 2});
  s.model.seq_len = 16384;
  CHECK(tools::default_axes(s).cp == std::vector<int>{1, 2, 4, 8});
  s.model.moe.experts = 8;
  s.model.moe.top_k = 2;
  CHECK(tools::default_axes(s).cp == std::vector<int>{1, 2, 4, 8});
}

TEST_CASE("the table lists one row per set of degrees, its variants on a line under it") {
  tools::SearchOptions o = options(*tiny());
  const tools::SearchReport rep = tools::run_search(tiny(), o);
  const std::string text = tools::format_search(rep, 3);
  std::set<std::tuple<int, int, int, int, int>> sets;
  for (const auto& c : rep.ranked) sets.insert({c.layout.tp, c.layout.pp, c.layout.dp, c.layout.cp, c.layout.ep});
  // Three rows of layouts, each of other degrees, and the variant lines under them.
  std::size_t rows = 0, variant_lines = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find("variant") != std::string::npos && line.find(" of these degrees") != std::string::npos) ++variant_lines;
    else if (line.size() > 5 && line.find("·") != std::string::npos && std::isdigit(static_cast<unsigned char>(line[3]))) ++rows;
  }
  CHECK(rows == std::min<std::size_t>(3, sets.size()));
  CHECK(variant_lines >= 1);
  CHECK(text.find(fmt::format("other sets of degrees")) != std::string::npos);
}

TEST_CASE("remedy candidates: a near miss with the out-of-memory warning's remedy, estimated and ranked like the others") {
  const auto base = tiny();
  auto o = options(*base);
  o.remedies = true;
  const auto rep = tools::run_search(base, o);
  const std::size_t enumerated = tools::enumerate_candidates(*base, 16, o.axes).size();
  std::map<std::size_t, const tools::Candidate*> rejected;
  for (const auto& c : rep.rejected) rejected[c.index] = &c;
  std::size_t remedies = 0, simulated_remedies = 0;
  auto check_remedy = [&](std::size_t index, const tools::SearchLayout& l, const std::string& origin) {
    ++remedies;
    REQUIRE(index >= enumerated);
    const auto it = rejected.find(index - enumerated);
    REQUIRE(it != rejected.end());
    const tools::Candidate& from = *it->second;
    CHECK(from.rejected == "memory");
    CHECK(from.origin.empty());
    CHECK(origin.rfind(fmt::format("remedy of #{}: layout.", from.index), 0) == 0);
    CHECK(from.layout.placement == o.axes.placement.front());
    // A near miss: the original's bound is within the GPU's memory; the remedy's fits.
    const auto original = tools::candidate_scenario(*base, 16, from.layout);
    CHECK(tools::memory_lower_bound(original) <= base->gpu.memory_bytes);
    CHECK(wl::memory_fits(tools::candidate_scenario(*base, 16, l), tools::memory_lower_bound(tools::candidate_scenario(*base, 16, l))));
    // Only the remedy's keys differ, and it is not ZeRO one stage up alone (a point of the space).
    auto same = l;
    same.zero = from.layout.zero, same.shard_group = from.layout.shard_group, same.offload = from.layout.offload;
    CHECK(tools::compact_layout(same) == tools::compact_layout(from.layout));
    CHECK((l.offload.activations || l.offload.optimizer || l.shard_group != from.layout.shard_group));
  };
  for (const auto& c : rep.ranked)
    if (!c.origin.empty()) {
      check_remedy(c.index, c.layout, c.origin);
      simulated_remedies += c.simulated ? 1 : 0;
    }
  for (const auto& c : rep.rejected)
    if (!c.origin.empty()) check_remedy(c.index, c.layout, c.origin);
  CHECK(remedies > 0);  // the 3 GB GPU leaves near misses
  CHECK(rep.evaluated == enumerated + remedies);
  std::size_t rejected_count = 0;
  for (const auto& [why, n] : rep.rejected_by_reason) rejected_count += n;
  CHECK(rep.evaluated == rejected_count + rep.ranked.size());
  // Their own simulation budget, K/8 beside the space's K: they cannot crowd it out.
  CHECK(simulated_remedies <= 1);
  CHECK(rep.simulated <= 8 + 1);
  CHECK(rep.simulated - simulated_remedies == 8);
  // The rule is each candidate's own: two shards find the unsharded run's remedies.
  auto remedy_keys = [](const tools::SearchReport& r) {
    std::set<std::pair<std::size_t, std::string>> s;
    for (const auto& c : r.ranked)
      if (!c.origin.empty()) s.insert({c.index, c.origin});
    for (const auto& c : r.rejected)
      if (!c.origin.empty()) s.insert({c.index, c.origin});
    return s;
  };
  o.shard_count = 2;
  auto merged = remedy_keys(tools::run_search(base, o));
  o.shard_index = 1;
  for (const auto& k : remedy_keys(tools::run_search(base, o))) CHECK(merged.insert(k).second);
  CHECK(merged == remedy_keys(rep));
}

TEST_CASE("--vary global_batch: each batch a space of its own, ranked by throughput") {
  const auto base = tiny();
  auto o = options(*base);
  tools::apply_axis_option(o.axes, "global_batch=8,16", false);
  const auto at8 = tools::enumerate_candidates(*base, 8, options(*base).axes);
  const auto at16 = tools::enumerate_candidates(*base, 16, options(*base).axes);
  const auto both = tools::enumerate_candidates(*base, 16, o.axes);
  REQUIRE(both.size() == at8.size() + at16.size());
  std::set<std::string> compact;
  for (const auto& c : both) {
    CHECK(c.index == static_cast<std::size_t>(&c - both.data()));
    const auto& twin = c.index < at8.size() ? at8[c.index] : at16[c.index - at8.size()];
    CHECK(c.layout.global_batch == (c.index < at8.size() ? 8 : 16));
    CHECK(c.rejected == twin.rejected);
    CHECK(c.layout.microbatches == twin.layout.microbatches);
    if (c.rejected.empty()) {
      CHECK(static_cast<std::int64_t>(c.layout.microbatches) * c.layout.dp * c.layout.microbatch_size == c.layout.global_batch);
      CHECK(tools::candidate_scenario(*base, 16, c.layout).layout.global_batch == c.layout.global_batch);
    }
    CHECK(compact.insert(tools::compact_layout(c.layout)).second);  // "gbN" tells the batches apart
  }
  o.objective = tools::SearchObjective::tokens_per_s;
  const auto rep = tools::run_search(base, o);
  std::set<std::int64_t> ranked_batches;
  for (const auto& c : rep.ranked) ranked_batches.insert(c.layout.global_batch);
  CHECK(ranked_batches == std::set<std::int64_t>{8, 16});
  for (std::size_t i = 1; i < 8 && i < rep.ranked.size(); ++i) CHECK(rep.ranked[i - 1].tokens_per_s >= rep.ranked[i].tokens_per_s);
  const json j = tools::search_json(rep);
  CHECK(j["global_batches"] == json::array({8, 16}));
  CHECK(j["candidates"][0]["layout"]["global_batch"] == rep.ranked.front().layout.global_batch);
  // The explanation compares the winner with a runner-up of its own batch.
  const std::string why = tools::explain_winner(rep);
  if (!why.empty()) CHECK(why.find(fmt::format("gb{}", rep.ranked.front().layout.global_batch)) != std::string::npos);
  // Step times of different batches do not compare: a usage error.
  CHECK(test::run_layoutsim("search '" + tiny_path() + "' --vary global_batch=8,16").rc == 2);
  CHECK(test::run_layoutsim("search '" + tiny_path() + "' --vary global_batch=8,16 --objective tokens_per_s --simulate-top 4").rc == 0);
}

TEST_CASE("the whole space: v=all and mbs=all are every divisor; the overlap switches are axes where they act") {
  const auto base = tiny();  // 8 layers on 8 GPUs, global batch 16
  auto a = tools::default_axes(*base);
  // The base's switches by default: every candidate states them.
  CHECK(a.tp_overlap == std::vector<bool>{base->implementation.tp_comm_overlap});
  CHECK(a.dp_overlap == std::vector<bool>{base->implementation.dp_overlap});
  tools::apply_axis_option(a, "v=all", false);
  tools::apply_axis_option(a, "mbs=all", false);
  tools::apply_axis_option(a, "implementation.tp_comm_overlap=off,on", false);
  tools::apply_axis_option(a, "dp_overlap=on,off", false);
  const auto cands = tools::enumerate_candidates(*base, 16, a);
  std::map<int, std::set<int>> vs_by_pp, mbs_by_dp;
  std::set<std::string> compact;
  for (const auto& c : cands) {
    const auto& l = c.layout;
    if (l.schedule == wl::Schedule::interleaved_1f1b) vs_by_pp[l.pp].insert(l.virtual_stages);
    mbs_by_dp[l.dp].insert(l.microbatch_size);
    // A switch where it cannot act takes its first value: no layout spelled twice.
    if (l.tp == 1) CHECK(!l.tp_comm_overlap);
    if (l.dp * l.cp == 1) CHECK(l.dp_overlap);
    CHECK(compact.insert(tools::compact_layout(l)).second);
    // The candidate's scenario carries the switches.
    const wl::Scenario sc = tools::candidate_scenario(*base, 16, l);
    CHECK(sc.implementation.tp_comm_overlap == l.tp_comm_overlap);
    CHECK(sc.implementation.dp_overlap == l.dp_overlap);
  }
  // Every v >= 2 dividing the 8 / pp layers of a stage: pp 2 → 4 layers → v 2, 4;
  // pp 4 → 2 layers → v 2; pp 8 → 1 layer → none.
  CHECK(vs_by_pp[2] == std::set<int>{2, 4});
  CHECK(vs_by_pp[4] == std::set<int>{2});
  CHECK(vs_by_pp.count(8) == 0);
  // Every divisor of a rank's 16 / dp sequences: dp 1 → 1..16, dp 4 → 1, 2, 4, dp 8 → 1, 2.
  CHECK(mbs_by_dp[1] == std::set<int>{1, 2, 4, 8, 16});
  CHECK(mbs_by_dp[4] == std::set<int>{1, 2, 4});
  CHECK(mbs_by_dp[8] == std::set<int>{1, 2});
  // Each switch doubles exactly the points where it acts.
  std::size_t both_act = 0, tp_only = 0, dp_only = 0, neither = 0;
  for (const auto& c : tools::enumerate_candidates(*base, 16, [&] {
         auto d = a;
         d.tp_overlap = {false};
         d.dp_overlap = {true};
         return d;
       }())) {
    const bool tp = c.layout.tp > 1, dp = c.layout.dp * c.layout.cp > 1;
    (tp && dp ? both_act : tp ? tp_only : dp ? dp_only : neither) += 1;
  }
  CHECK(cands.size() == 4 * both_act + 2 * (tp_only + dp_only) + neither);
  CHECK_THROWS_AS(tools::apply_axis_option(a, "v=all,2", false), std::invalid_argument);
  CHECK_THROWS_AS(tools::apply_axis_option(a, "mbs=every", false), std::invalid_argument);
  CHECK_THROWS_AS(tools::apply_axis_option(a, "tp_overlap=maybe", false), std::invalid_argument);
  // A list after `all` is a list again.
  tools::apply_axis_option(a, "mbs=1,2", false);
  CHECK(!a.every_microbatch_size);
  CHECK(a.microbatch_size == std::vector<int>{1, 2});
}

TEST_CASE("tp comm overlap as an axis: the compact string, the JSON and CSV columns, and --emit's implementation block") {
  tools::SearchLayout l;
  l.tp = 8, l.pp = 1, l.dp = 8, l.zero = 1, l.sequence_parallel = true;
  l.tp_comm_overlap = true, l.dp_overlap = false;
  CHECK(tools::compact_layout(l) == "t8·p1·d8 z1 sp mbs1 1f1b tpo dp-after");
  l.tp = 1, l.dp = 1;  // where they cannot act, not shown
  CHECK(tools::compact_layout(l) == "t1·p1·d1 z1 sp mbs1 1f1b");

  const std::string p = tiny_path(), best = test::tmp("best-tpo.yaml");
  const auto r = test::run_layoutsim("search '" + p + "' --fix tp=2 --fix tp_overlap=on --simulate-top 4 --json - --emit '" + best + "'");
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json j = json::parse(r.out);
  for (const auto& c : j["candidates"]) CHECK(c["layout"]["tp_comm_overlap"] == true);
  // The winner as a scenario: the implementation block says what the search changed,
  // and `run` gives the reported step time.
  std::ifstream in(best);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("tp_comm_overlap: true") != std::string::npos);
  CHECK(text.find("implementation switches differ") != std::string::npos);
  const auto run = test::run_layoutsim("run '" + best + "' --json -");
  INFO(run.err);
  REQUIRE(run.rc == 0);
  CHECK(std::abs(json::parse(run.out)["step_time_s"].get<double>() / j["candidates"][0]["step_time_s"].get<double>() - 1) < 1e-9);
  const auto csv = test::run_layoutsim("search '" + p + "' --fix tp=2 --vary tp_overlap=off,on --simulate-top 0 --csv -");
  REQUIRE(csv.rc == 0);
  const std::string header = csv.out.substr(0, csv.out.find('\n'));
  CHECK(header.find(",placement,tp_comm_overlap,dp_overlap,outcome,") != std::string::npos);
}

TEST_CASE("the estimate against the simulation: Spearman's rank correlation and the mean gap, by hand") {
  // Monotone: 1; reversed: -1; ties at their mean rank. x = (1, 2, 2, 3) ranks (1, 2.5, 2.5, 4);
  // y = (1, 3, 2, 4) ranks (1, 3, 2, 4): Pearson of the ranks = 4.5 / sqrt(4.5 · 5) = 0.9487.
  CHECK(tools::spearman({1, 2, 3, 4}, {10, 20, 30, 50}) == doctest::Approx(1));
  CHECK(tools::spearman({1, 2, 3, 4}, {4, 3, 2, 1}) == doctest::Approx(-1));
  CHECK(tools::spearman({1, 2, 2, 3}, {1, 3, 2, 4}) == doctest::Approx(4.5 / std::sqrt(4.5 * 5)).epsilon(1e-12));
  CHECK(tools::spearman({1, 1, 1}, {1, 2, 3}) == 0);  // constant: no order to compare
  CHECK(tools::spearman({1}, {2}) == 0);

  tools::SearchReport r;
  for (auto [est, sim, simulated] : std::vector<std::tuple<double, double, bool>>{{9, 10, true}, {22, 20, true}, {27, 30, true}, {1, 100, false}}) {
    tools::CandidateOutcome c;
    c.analytic_step_s = est;
    c.step_time_s = sim;
    c.simulated = simulated;
    r.ranked.push_back(c);
  }
  const tools::EstimateCheck ec = tools::estimate_check(r);
  CHECK(ec.count == 3);  // the estimate-only candidate is not compared
  CHECK(ec.rank_correlation == doctest::Approx(1));
  CHECK(ec.mean_gap == doctest::Approx((-0.1 + 0.1 - 0.1) / 3));
  CHECK(ec.mean_abs_gap == doctest::Approx(0.1));
  CHECK(tools::estimate_check_text(r).find("rank correlation 1.00; the estimate is 3.3 % under") != std::string::npos);

  // The search's JSON carries it, over its simulated candidates.
  const auto run = test::run_layoutsim("search '" + tiny_path() + "' --simulate-top 6 --no-remedies --json -");
  REQUIRE(run.rc == 0);
  const json j = json::parse(run.out);
  std::size_t simulated = 0;
  for (const auto& c : j["candidates"]) simulated += c["simulated"].get<bool>();
  CHECK(j["estimate_check"]["simulated"] == simulated);
  CHECK(j["estimate_check"]["rank_correlation"].get<double>() >= -1);
  CHECK(j["estimate_check"]["rank_correlation"].get<double>() <= 1);
}

TEST_CASE("the search's winner against brute force: simulating every kept candidate finds nothing better than the band allows") {
  // Brute force: every kept point of the tiny space simulated (295 of them). The search
  // simulates only the estimate's best K; its winner must be the brute-force best or
  // within the width of the best's error band of it (what the model cannot tell apart).
  const auto base = tiny();
  auto brute_opts = options(*base);
  brute_opts.simulate_top = 100000;
  const auto brute = tools::run_search(base, brute_opts);
  REQUIRE(!brute.ranked.empty());
  CHECK(brute.simulated == brute.ranked.size());
  const double best = brute.ranked.front().step_time_s;
  REQUIRE(brute.best_band.rows > 0);
  const double width = (brute.best_band.hi_s - brute.best_band.lo_s) / best;  // relative, as within_band reads it
  for (int k : {8, 64}) {
    CAPTURE(k);
    auto o = options(*base);
    o.simulate_top = k;
    const auto rep = tools::run_search(base, o);
    REQUIRE(!rep.ranked.empty());
    CHECK(rep.ranked.front().step_time_s / best - 1 <= width);
    CHECK(rep.ranked.front().step_time_s >= best);  // brute force saw every candidate the search did
  }
  // Over the whole space the estimate orders the layouts well (0.93 here); among the best
  // K, near-equal layouts, less so: the figure the search prints.
  CHECK(tools::estimate_check(brute).rank_correlation > 0.8);
}
