// tests/test_html_report.cpp — the HTML reports (tools/report/html_report.hpp, search_html):
// one rect per recorded span, idle time shaded as the gaps of each compute row, the
// perturbed device marked, every section present, text escaped, the JSON summary embedded
// intact, and the same bytes for the same run. tests/html_browser.py loads the pages in
// Chromium.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/api/layoutsim.hpp"
#include "tools/report/html_page.hpp"
#include "tools/report/html_report.hpp"
#include "tools/report/report_json.hpp"
#include "tools/study/search.hpp"

using namespace ls;

namespace {

// Two stages on one node, a slow device in stage 1: milliseconds to simulate.
const char* const kStraggler =
    "name: html <&> test\n"
    "model: {preset: llama3-8b, layers: 4}\n"
    "cluster: {nodes: 1, gpus_per_node: 4}\n"
    "layout: {tp: 2, pp: 2, dp: 1, microbatches: 4}\n"
    "perturbations:\n"
    "  devices: [{device: node0.gpu3, compute_slowdown: 1.5}]\n";

api::Result traced_run() {
  api::SimOptions opt;
  opt.trace = true;
  opt.trace_devices = {"all"};
  return api::simulate(api::ScenarioSource::text(kStraggler, "straggler.yaml").resolve(), opt);
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

std::string embedded_json(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"layoutsim-data\">";
  const auto a = page.find(open);
  REQUIRE(a != std::string::npos);
  const auto b = page.find("</script>", a);
  return page.substr(a + open.size(), b - a - open.size());
}

}  // namespace

TEST_CASE("run report: one rect per span, idle as the gaps of each compute row, the straggler marked") {
  const api::Result r = traced_run();
  REQUIRE(!r.spans.empty());
  const std::string svg = tools::timeline_svg(r);
  CHECK(count(svg, "<rect class=\"span") == r.spans.size());
  CHECK(count(svg, "<rect class=\"span critical") == static_cast<std::size_t>(std::count_if(
                                                         r.spans.begin(), r.spans.end(), [](const wl::Span& s) { return s.critical; })));
  // The bubbles of a device's compute row: the maximal gaps between its compute-track
  // spans over [0, the last span's end], counted here directly.
  sim::Time end = sim::Time::zero();
  for (const auto& s : r.spans) end = std::max(end, s.end);
  std::map<std::int32_t, std::vector<std::pair<sim::Time, sim::Time>>> busy;
  for (const auto& s : r.spans)
    if (s.track == wl::track::compute) busy[s.device].emplace_back(s.start, s.end);
  std::size_t gaps = 0;
  for (auto& [d, v] : busy) {
    std::sort(v.begin(), v.end());
    sim::Time cursor = sim::Time::zero();
    for (const auto& [a, b] : v) {
      gaps += a > cursor ? 1 : 0;
      cursor = std::max(cursor, b);
    }
    gaps += end > cursor ? 1 : 0;
  }
  CHECK(gaps > 0);
  CHECK(count(svg, "<rect class=\"bubble\"") == gaps);
  // The slow GPU's first row carries its slowdown, and one red bar spans its rows.
  CHECK(svg.find("node0.gpu3 · compute ⚠ 1.50× slower") != std::string::npos);
  CHECK(count(svg, "class=\"straggler-mark\"") == 1);
  // Devices by stage: stage 0's rows come before stage 1's.
  CHECK(svg.find("stage 0 · node0.gpu0") < svg.find("stage 1 · node0.gpu2"));
}

TEST_CASE("run report: every section, escaped text, the JSON summary embedded unchanged, deterministic") {
  const api::Result r = traced_run();
  const std::string page = tools::run_html_report(r);
  for (const char* id : {"id=\"summary\"", "id=\"timeline\"", "id=\"stages\"", "id=\"memory\"", "id=\"links\"", "id=\"warnings\"",
                         "id=\"timeline-svg\"", "id=\"memory-svg\"", "id=\"memory-table\"", "id=\"link-groups\"", "id=\"bottleneck\""})
    CHECK_MESSAGE(page.find(id) != std::string::npos, id);
  // The scenario's name is text, never markup (the embedded JSON holds it as a JSON string).
  CHECK(page.find("layoutsim: html &lt;&amp;&gt; test") != std::string::npos);
  const std::string json = embedded_json(page);
  std::string markup = page;
  markup.erase(markup.find(json), json.size());
  CHECK(markup.find("html <&> test") == std::string::npos);
  // Each warning (a straggler one among them) is a block with its code.
  CHECK(count(page, "<div class=\"warning\"") == r.warnings.size());
  CHECK(page.find("data-code=\"straggler\"") != std::string::npos);
  // One memory bar segment per non-zero term of each stage.
  std::size_t terms = 0;
  for (const auto& m : r.memory_per_stage)
    for (double v : {m.weights, m.gradients, m.master, m.optimizer, m.activations, m.buffers}) terms += v > 0 ? 1 : 0;
  CHECK(count(page, "class=\"memory-term\"") == terms);
  CHECK(nlohmann::json::parse(embedded_json(page)) == nlohmann::json::parse(tools::to_json_string(r)));
  CHECK(tools::run_html_report(traced_run()) == page);
}

TEST_CASE("run report without spans says so") {
  const api::Result r = api::simulate(api::ScenarioSource::text(kStraggler, "straggler.yaml").resolve());
  REQUIRE(r.spans.empty());
  const std::string page = tools::run_html_report(r);
  CHECK(page.find("No spans were recorded") != std::string::npos);
  CHECK(page.find("<rect class=\"span") == std::string::npos);
}

TEST_CASE("script-safe JSON: no element end inside, the same value") {
  const std::string text = R"({"a":"</script><b>","b":[1,2]})";
  const std::string safe = tools::script_safe_json(text);
  CHECK(safe.find("</") == std::string::npos);
  CHECK(nlohmann::json::parse(safe) == nlohmann::json::parse(text));
}

TEST_CASE("tables: numeric columns right-aligned, cells in order") {
  const std::string t = tools::render_table({.id = "t", .header = {"a", "b"}, .rows = {{"x", "1"}, {"y", "2"}}, .numeric = {false, true}});
  CHECK(t.find("<table id=\"t\">") == 0);
  CHECK(count(t, "<td class=\"num\">") == 2);
  CHECK(t.find("<td>x</td><td class=\"num\">1</td>") != std::string::npos);
}

TEST_CASE("search report: one ranking row per set of degrees, the winner's explanation, a point per simulated candidate") {
  const api::ResolvedScenario base = api::ScenarioSource::text(
      "model: {preset: llama3-8b, layers: 4}\ncluster: {nodes: 1, gpus_per_node: 4}\nlayout: {global_batch: 8}\n", "s.yaml").resolve();
  tools::SearchOptions o;
  o.axes = tools::default_axes(*base);
  o.simulate_top = 6;
  o.jobs = 1;
  const tools::SearchReport rep = tools::run_search(base, o);
  REQUIRE(rep.ranked.size() > 1);
  const auto groups = tools::degree_groups(rep);
  std::size_t members = 0;
  for (const auto& g : groups) {
    members += g.members.size();
    CHECK(std::is_sorted(g.members.begin(), g.members.end()));  // best first: ranked order
  }
  CHECK(members == rep.ranked.size());
  const std::string page = tools::search_html_report(rep, 1000);
  const auto table = page.substr(page.find("<table id=\"ranking\">"));
  CHECK(count(table.substr(0, table.find("</table>")), "<tr><td") == groups.size());
  CHECK(count(page, "<circle class=\"candidate\"") == rep.simulated);
  CHECK(page.find("id=\"explanation\"") != std::string::npos);
  CHECK((page.find("Why #1 over #") != std::string::npos) == !tools::explain_winner(rep).empty());
  const auto data = nlohmann::json::parse(embedded_json(page));
  CHECK(data["candidates"].size() == rep.ranked.size());
}
