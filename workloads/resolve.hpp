// workloads/resolve.hpp — a partial scenario in, a complete and valid one out.
//
// A Scenario may leave fields unset (scenario_spec.hpp marks them): the GPU, the link rates,
// dp, kv_heads, ffn_hidden, expert_ffn_hidden, the master-weight bytes, the name,
// and microbatches when a global batch is given. resolve() fills them — the same way for a hand-built C++
// Scenario and for one read from YAML, so both give the same numbers — and then
// checks every rule once. The result is a ResolvedScenario, the only thing layout_report()
// and simulate() accept, so nothing downstream re-validates.
//
// Errors: a user error (a rule the scenario breaks) throws InvalidScenario, which
// carries every issue found, each with its key path, message and hint (the loader
// turns them into file:line:col messages). Checks run in three stages — deriving
// the unset fields, wl::validate's layout rules, building the topology and checking
// the perturbed device and link names against it — and a later stage runs only when
// the earlier ones pass (its checks would read values that are not there). A broken internal precondition
// further down is a bug, not a user error: those throw std::logic_error.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "workloads/spec/scenario_issue.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

class ResolvedScenario;

/// Fills every unset field of `partial` and checks every rule. Throws
/// InvalidScenario. O(layers + links of the cluster): it builds the topology once
/// (twice when links are taken down).
ResolvedScenario resolve(Scenario partial);

/// `base` with another layout and implementation (a search candidate: its degrees,
/// switches and batch), resolved by the stages that read them: the layout's derived
/// fields (dp when 0, micro-batches from the global batch), its rules and the work's
/// bounds. The rest is base's, resolved and checked already, so the topology is not
/// built again; nor is the step bounded against sim::Time's range beforehand: a step
/// past it throws sim::TimeRangeError from the simulation instead (checked time
/// arithmetic), without the key to blame that resolve() finds. The implementation is
/// taken as given (base's, resolved, with switches changed). Throws InvalidScenario.
ResolvedScenario resolve_variant(const ResolvedScenario& base, const LayoutSpec& layout, const ImplementationSpec& implementation);

/// A complete, valid scenario: made only by resolve(), read-only afterwards.
class ResolvedScenario {
public:
  const Scenario& scenario() const { return scenario_; }
  const Scenario& operator*() const { return scenario_; }
  const Scenario* operator->() const { return &scenario_; }
  /// Read-only: a resolved scenario can be read wherever a Scenario is.
  operator const Scenario&() const { return scenario_; }  // NOLINT(google-explicit-constructor)
private:
  explicit ResolvedScenario(Scenario s) : scenario_(std::move(s)) {}
  friend ResolvedScenario resolve(Scenario partial);
  friend ResolvedScenario resolve_variant(const ResolvedScenario&, const LayoutSpec&, const ImplementationSpec&);
  Scenario scenario_;
};

/// The defaults resolve() derives, in one place (the key table in scenario_keys.cpp
/// documents them for the README).
struct DerivedDefaults {
  static constexpr const char* gpu_preset = "h100-sxm";  // when no GPU is given
  static constexpr int ffn_hidden_per_hidden = 4;         // ffn_hidden = 4·hidden (GPT)
  /// Link rates for a link class that carries nothing (one GPU per node, one node)
  /// when the GPU gives no rate to derive from: topo::ClusterSpec's own defaults.
  static double idle_intra_bandwidth_Bps();
  static double idle_inter_bandwidth_Bps();
};

/// The most micro-batches a global batch may give (every count is bounded so that
/// nothing downstream overflows or runs for hours).
constexpr std::int64_t kMaxMicrobatches = std::int64_t{1} << 20;

/// The most layer passes one simulated step may hold: devices × micro-batches ×
/// (layers per stage + 1). The engine runs about 3 events per layer pass at about 45
/// bytes each (measured: 64 GPUs × 4096 micro-batches × 20 layers per stage = 15.6 M
/// events, 0.7 GB, 13 s), so the limit, 2^24 layer passes, keeps a run under about
/// 2.5 GB and a minute; a scenario above it is a located error before anything is
/// allocated, not a std::bad_alloc.
constexpr std::int64_t kMaxLayerPasses = std::int64_t{1} << 24;

}  // namespace ls::wl
