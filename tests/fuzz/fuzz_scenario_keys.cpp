// tests/fuzz/fuzz_scenario_keys.cpp — libFuzzer harness with a structure-aware mutator
// over the scenario language, and a sanity oracle on every scenario it can simulate.
//
// The byte fuzzer (fuzz_scenario.cpp) mostly finds the YAML and unit parsers' edges;
// here an input is mutated as a scenario: a key of the key table (tools/scenario/
// scenario_keys.hpp) set to a value drawn from its type (its bounds and one past them,
// its allowed values and near misses, sizes, rates and durations in every unit, a value
// of the wrong type), a key removed, a map or list put where a scalar was. The result is
// written back as YAML (yaml_block_text), so the loader, resolve() and the simulator see
// plausible scenarios rather than syntax errors.
//
// Every input must load and resolve, or fail with a user error. One small enough to
// simulate quickly (at most 64 GPUs, 8 with experts; a bounded program) is simulated, and its result
// must satisfy what any layoutsim result does (the oracle): finite, non-negative numbers
// and fractions at most 1 (the output check), MFU ≤ HFU ≤ 1, each stage's compute within
// the step, fits exactly when the peak is within the tensor memory, the critical path's
// shares summing to 1; and on a sample of the runs that took the symmetric fast path,
// the same step time with every rank simulated (1e-6). Anything else aborts: an internal error, a crash, a sanitizer
// report, a hang (-timeout) or a blow-up (-rss_limit_mb) is a finding.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "tools/api/layoutsim.hpp"
#include "tools/report/output_check.hpp"
#include "tools/report/report_json.hpp"
#include "tools/scenario/scenario_keys.hpp"
#include "tools/scenario/yaml_tree.hpp"
#include "workloads/model/headroom.hpp"

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

namespace {

using ls::tools::YEntry;
using ls::tools::YNode;

// Outcomes by class, printed at exit when LAYOUTSIM_FUZZ_STATS is set (a campaign's report).
struct Tally {
  long rejected = 0, checked = 0, simulated = 0, symmetric_checked = 0;
  ~Tally() {
    if (std::getenv("LAYOUTSIM_FUZZ_STATS"))
      fmt::print(stderr, "fuzz_scenario_keys: {} inputs: {} rejected with a user error, {} loaded and checked, {} of them "
                           "simulated and passed the oracle ({} of those also with every rank simulated)\n", rejected + checked, rejected, checked,
                   simulated, symmetric_checked);
  }
} g_tally;

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz_scenario_keys: %s\n", what.c_str());
  std::abort();
}

YNode scalar(std::string text) {
  YNode n;
  n.kind = YNode::Kind::scalar;
  n.scalar = std::move(text);
  return n;
}

template <typename Rng>
std::size_t pick(Rng& rng, std::size_t n) {
  return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
}

/// The bounds of an "int in [lo, hi]" or "number in [lo, hi]" type, if it states them.
bool bounds_of(const std::string& type, double& lo, double& hi) {
  const auto open = type.find_first_of("[(");
  const auto comma = type.find(',', open == std::string::npos ? 0 : open);
  if (open == std::string::npos || comma == std::string::npos) return false;
  lo = std::strtod(type.c_str() + open + 1, nullptr);
  hi = std::strtod(type.c_str() + comma + 1, nullptr);
  return true;
}

/// A value for the key: mostly of its type (and at or just past its edges), sometimes not.
template <typename Rng>
YNode value_for(const ls::tools::ScenarioKey& k, Rng& rng) {
  const std::string type(k.type);
  static const char* const kNumbers[] = {"0", "1", "-1", "2", "0.5", "1e-9", "1e308", "-0", "3.7", "1e6", "nan", ".inf", "1e18"};
  static const char* const kSizes[] = {"B", "KB", "MB", "GB", "GiB", "TB", "TiB", "b", ""};
  static const char* const kRates[] = {"Gb/s", "GB/s", "b/s", "TB/s", "MB/s", "Kb/s", ""};
  static const char* const kTimes[] = {"us", "ms", "s", "ns", "min", "h", "ps", ""};
  if (pick(rng, 8) == 0) {  // the wrong type
    YNode n;
    switch (pick(rng, 3)) {
      case 0: n.kind = YNode::Kind::map; n.entries.push_back(YEntry{"x", {}, scalar("1")}); break;
      case 1: n.kind = YNode::Kind::seq; n.items.push_back(scalar("1")); break;
      default: return scalar("not-a-value");
    }
    return n;
  }
  if (!k.values.empty()) {
    if (pick(rng, 6) == 0) return scalar(std::string(k.values[pick(rng, k.values.size())]) + "x");  // a near miss
    return scalar(std::string(k.values[pick(rng, k.values.size())]));
  }
  const std::string number = kNumbers[pick(rng, std::size(kNumbers))];
  double lo = 0, hi = 0;
  if (bounds_of(type, lo, hi) && pick(rng, 2) == 0) {
    const double edges[] = {lo, hi, lo - 1, hi + 1, std::floor((lo + hi) / 2), lo + 1};
    const double v = edges[pick(rng, std::size(edges))];
    return scalar(type.rfind("int", 0) == 0 ? fmt::format("{:.0f}", v) : fmt::format("{}", v));
  }
  if (type == "size") return scalar(fmt::format("{} {}", number, kSizes[pick(rng, std::size(kSizes))]));
  if (type == "bandwidth") return scalar(fmt::format("{} {}", number, kRates[pick(rng, std::size(kRates))]));
  if (type == "time") return scalar(fmt::format("{} {}", number, kTimes[pick(rng, std::size(kTimes))]));
  if (type == "bool") return scalar(pick(rng, 3) == 0 ? "yes" : pick(rng, 2) ? "true" : "false");
  if (type.rfind("int", 0) == 0) return scalar(fmt::format("{}", static_cast<long long>(pick(rng, 70)) - 2));
  return scalar(number);
}

/// The map entry at `path` ("a.b.c"; a "[]" segment is the list's first map), made as
/// needed; null when a scalar or list sits in the way.
YNode* entry_at(YNode& root, std::string_view path) {
  YNode* cur = &root;
  while (!path.empty()) {
    const auto dot = path.find('.');
    std::string seg(path.substr(0, dot));
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
    const bool list = seg.size() > 2 && seg.compare(seg.size() - 2, 2, "[]") == 0;
    if (list) seg.resize(seg.size() - 2);
    if (cur->kind == YNode::Kind::null) cur->kind = YNode::Kind::map;
    if (cur->kind != YNode::Kind::map) return nullptr;
    YEntry* e = cur->find(seg);
    if (!e) {
      cur->entries.push_back(YEntry{seg, {}, YNode{}});
      e = &cur->entries.back();
    }
    cur = &e->value;
    if (list) {
      if (cur->kind == YNode::Kind::null) {
        cur->kind = YNode::Kind::seq;
        cur->items.emplace_back();
      }
      if (cur->kind != YNode::Kind::seq || cur->items.empty()) return nullptr;
      cur = &cur->items.front();
    }
  }
  return cur;
}

/// Removes one entry somewhere in the tree (a random walk down maps).
template <typename Rng>
void remove_one(YNode& root, Rng& rng) {
  YNode* cur = &root;
  for (int depth = 0; depth < 4 && cur->kind == YNode::Kind::map && !cur->entries.empty(); ++depth) {
    const std::size_t i = pick(rng, cur->entries.size());
    if (cur->entries[i].value.kind != YNode::Kind::map || pick(rng, 3) == 0) {
      cur->entries.erase(cur->entries.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
    cur = &cur->entries[i].value;
  }
}

/// The scenarios simulated whole: small enough that a run takes milliseconds (under the
/// sanitizers and coverage hooks, 20–50 times what a Release build takes).
bool small_enough(const ls::wl::Scenario& s) {
  const double devices = static_cast<double>(s.cluster.nodes) * s.cluster.gpus_per_node;
  const double work = devices * s.layout.microbatches * std::max(1, s.layout.virtual_stages) * (s.model.layers + 2.0) *
                      std::max(1, s.simulation.steps);
  // An expert-parallel all-to-all is one flow per pair of ranks: far more events per op.
  const double max_devices = s.model.moe.experts > 0 ? 8 : 64;
  return devices <= max_devices && work <= 100'000;
}

void oracle(const ls::wl::Scenario& s, const ls::api::Result& r) {
  ls::tools::check_summary_numbers(ls::tools::to_json(r, {}));  // finite, non-negative, fractions ≤ 1
  const double slack = 1e-9;
  if (!(r.step_time_s > 0)) finding(fmt::format("step time {} is not positive", r.step_time_s));
  if (r.mfu > r.hfu * (1 + slack)) finding(fmt::format("MFU {} above HFU {}", r.mfu, r.hfu));
  for (const auto& st : r.per_stage)
    if (st.compute_s > r.step_time_s * (1 + slack) + 1e-12)
      finding(fmt::format("stage {} computes {} s in a {} s step", st.stage, st.compute_s, r.step_time_s));
  const bool within = r.max_peak_bytes <= ls::wl::tensor_memory_bytes(s);
  if (r.memory_fits != within) finding(fmt::format("fits = {} but peak {} vs tensor memory {}", r.memory_fits, r.max_peak_bytes, ls::wl::tensor_memory_bytes(s)));
  const auto& cp = r.critical_path;
  const double shares = cp.share_compute + cp.share_comm + cp.share_wait;
  if (shares != 0 && std::abs(shares - 1) > 1e-6) finding(fmt::format("critical-path shares sum to {}", shares));
}

}  // namespace

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size, std::size_t max_size, unsigned int seed) {
  std::minstd_rand rng(seed);
  YNode root;
  try {
    root = ls::tools::parse_scenario_yaml(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
  } catch (const std::exception&) {
    return LLVMFuzzerMutate(data, size, max_size);  // not a scenario tree: bytes it is
  }
  if (pick(rng, 10) == 0) return LLVMFuzzerMutate(data, size, max_size);
  const auto& keys = ls::tools::scenario_keys();
  const int edits = pick(rng, 4) == 0 ? 2 : 1;  // one edit mostly: most scenarios it makes still load
  for (int i = 0; i < edits; ++i) {
    if (pick(rng, 5) == 0) {
      remove_one(root, rng);
      continue;
    }
    const auto& k = keys[pick(rng, keys.size())];
    if (k.type == "map" || k.type.find("list") != std::string::npos) continue;  // their leaves get values
    if (YNode* slot = entry_at(root, k.path)) *slot = value_for(k, rng);
  }
  const std::string text = ls::tools::yaml_block_text(root);
  if (text.size() > max_size) return size;
  std::memcpy(data, text.data(), text.size());
  return text.size();
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const ls::wl::ResolvedScenario sc = ls::tools::load_scenario_string(text, "fuzz.yaml", {});
    (void)ls::wl::layout_report(sc);
    ++g_tally.checked;
    if (!small_enough(sc.scenario())) return 0;
    ls::api::SimOptions opts;
    opts.what_if = false;  // the fixes' simulations are more of the same, at several times the cost
    const ls::api::Result r = ls::api::simulate(sc, opts);
    oracle(sc.scenario(), r);
    ++g_tally.simulated;
    // The symmetric fast path is exact: on a sample of the runs that took it, every rank
    // simulated gives the same step.
    // Sampled by the input's hash, so that a finding reproduces when its input runs alone.
    if (r.symmetry == "used" && std::hash<std::string_view>{}(text) % 8 == 0) {
      ls::wl::Scenario every = sc.scenario();
      every.simulation.symmetry = false;
      const ls::api::Result full = ls::api::simulate(ls::wl::resolve(every), opts);
      if (std::abs(full.step_time_s - r.step_time_s) > 1e-6 * r.step_time_s)
        finding(fmt::format("symmetric fast path {} s, every rank {} s", r.step_time_s, full.step_time_s));
      ++g_tally.symmetric_checked;
    }
  } catch (const ls::UserError&) {
    ++g_tally.rejected;
  } catch (const std::exception& e) {
    finding(fmt::format("internal error (exit 3 in the command): {}", e.what()));
  }
  return 0;
}
