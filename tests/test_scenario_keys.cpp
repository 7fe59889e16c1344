// tests/test_scenario_keys.cpp — tools/scenario/scenario_keys.hpp: the key table is well
// formed, and the README's scenario reference is exactly what it prints.
#include <doctest/doctest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "tools/scenario/scenario_keys.hpp"

#ifndef FUZZ_DICT_PATH
#error "FUZZ_DICT_PATH must be defined (path of tests/fuzz/scenario.dict)"
#endif
#ifndef README_PATH
#error "README_PATH must be defined (path of README.md)"
#endif

using namespace ls::tools;

TEST_CASE("every key is listed once, under a parent that is itself a key") {
  std::set<std::string> seen;
  for (const auto& k : scenario_keys()) {
    CAPTURE(k.path);
    CHECK(seen.insert(std::string(k.path)).second);
    const auto dot = k.path.find_last_of('.');
    if (dot == std::string_view::npos) continue;
    std::string parent(k.path.substr(0, dot));
    if (parent.size() > 2 && parent.substr(parent.size() - 2) == "[]") parent.resize(parent.size() - 2);
    CHECK(seen.count(parent) == 1);  // parents come first
    CHECK((!k.type.empty() || !k.values.empty()));
  }
}

TEST_CASE("names and values come in table order") {
  CHECK(scenario_key_names("") ==
        std::vector<std::string>{"name", "cluster", "model", "layout", "precision", "perturbations", "simulation", "implementation", "training", "checkpoint", "failures", "memory"});
  CHECK(scenario_key_names("cluster.graph.links[]") ==
        std::vector<std::string>{"from", "to", "kind", "bandwidth", "latency", "duplex"});
  CHECK(scenario_key_values("layout.schedule") == std::vector<std::string>{"gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-2p", "zb-v", "dualpipe"});
  CHECK_THROWS_AS(scenario_key_values("layout.tp"), std::logic_error);  // not a choice
}

namespace {

/// The file's whole text; empty when it cannot be read (the caller REQUIREs text).
std::string read_text(const char* path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("the README's scenario reference is the table's markdown") {
  const std::string text = read_text(README_PATH);
  REQUIRE(!text.empty());
  const std::string begin = "<!-- keys:begin -->\n", end = "<!-- keys:end -->";
  const auto b = text.find(begin);
  const auto e = text.find(end);
  REQUIRE(b != std::string::npos);
  REQUIRE(e != std::string::npos);
  REQUIRE(e > b);
  const std::string section = text.substr(b + begin.size(), e - b - begin.size());
  const bool up_to_date = section == scenario_keys_markdown();
  if (!up_to_date)
    FAIL_CHECK("README.md's scenario reference is out of date with tools/scenario/scenario_keys.cpp; regenerate it with "
               "`cmake --build build --target update-readme-keys` (or paste `layoutsim keys --markdown` between "
               "<!-- keys:begin --> and <!-- keys:end -->)");
  // Every key appears in the README.
  for (const auto& k : scenario_keys()) {
    CAPTURE(k.path);
    std::string quoted = "`";
    quoted += k.path;
    quoted += "`";
    CHECK(section.find(quoted) != std::string::npos);
  }
}

TEST_CASE("the fuzzer's dictionary holds every key's name, as its header says") {
  // libFuzzer mutates scenarios with these tokens; a key missing here is one the fuzzer
  // reaches only by chance.
  const std::string dict = read_text(FUZZ_DICT_PATH);
  REQUIRE(!dict.empty());
  for (const auto& k : scenario_keys()) {
    std::string leaf(k.path.substr(k.path.find_last_of('.') + 1));
    if (leaf.size() > 2 && leaf.substr(leaf.size() - 2) == "[]") leaf.resize(leaf.size() - 2);
    CAPTURE(k.path);
    CHECK(dict.find("=\"" + leaf + ":\"") != std::string::npos);
  }
}
