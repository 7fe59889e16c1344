// workloads/offload.cpp — see offload.hpp.
#include "workloads/offload.hpp"

namespace ls::wl {

double pcie_copy_rate(const Scenario& s) { return s.cluster.inter.pcie_bandwidth_Bps * kPcieCopyEfficiency; }

double pcie_copy_seconds(const Scenario& s, double bytes) { return bytes / pcie_copy_rate(s); }

double cpu_optimizer_seconds(const Scenario& s, double params) {
  const auto& p = s.precision;
  return params * (p.gradients + 2.0 * (p.master + p.optimizer) + p.weights) / kHostMemoryBandwidthPerGpu;
}

double optimizer_offload_bytes(const Scenario& s, double params) {
  return params * (s.precision.gradients + s.precision.weights);
}

}  // namespace ls::wl
