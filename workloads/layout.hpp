// workloads/layout.hpp — layout rules and the rank <-> mesh-coordinate map.
#pragma once

#include <string>
#include <vector>

#include "workloads/spec.hpp"

namespace ls::wl {

/// A broken rule. key_path is the scenario key to blame ("layout.tp"), so the loader
/// can point at its file:line:column; message names the rule and the numbers.
struct LayoutError {
  std::string key_path;
  std::string message;
  std::string hint;
};

/// Every rule the scenario breaks (empty: valid). Checks, among others:
/// dp·tp·pp == devices; tp divides heads, kv_heads, ffn_hidden; pp·v divides layers
/// (auto) or stage_layers sums to layers; ep divides dp and experts; microbatches
/// ≥ 1; interleaved needs v > 1 and m a multiple of pp; zero in 0..3.
std::vector<LayoutError> validate(const Scenario& s);

/// Number of GPUs the cluster spec describes (nodes·gpus_per_node, or the graph's GPUs).
int device_count(const topo::ClusterSpec& c);

struct Coord { int dp = 0, tp = 0, pp = 0; };

/// Maps ranks to mesh coordinates following `placement` (fastest-varying axis first).
class Mesh {
public:
  Mesh(int dp, int tp, int pp, const std::vector<std::string>& placement);
  int size() const { return dp_ * tp_ * pp_; }
  Coord coord(int rank) const;
  int rank(Coord c) const;
  int dp() const { return dp_; }
  int tp() const { return tp_; }
  int pp() const { return pp_; }
private:
  int dp_, tp_, pp_;
  int stride_dp_, stride_tp_, stride_pp_;
};

}  // namespace ls::wl
