// workloads/build/offload.cpp — see offload.hpp.
#include "workloads/build/offload.hpp"

#include <algorithm>

#include "workloads/build/stage_layers.hpp"
#include "workloads/build/stage_memory.hpp"
#include "workloads/model/headroom.hpp"
#include "workloads/spec/vocabulary.hpp"

namespace ls::wl {

double pcie_copy_rate(const Scenario& s) { return s.cluster.inter.pcie_bandwidth_Bps * kPcieCopyEfficiency; }

double pcie_copy_seconds(const Scenario& s, double bytes) { return bytes / pcie_copy_rate(s); }

double cpu_optimizer_seconds(const Scenario& s, double params) {
  const auto& p = s.precision;
  return params * (p.gradients + 2.0 * (p.master + p.optimizer) + p.weights) / kHostMemoryBandwidthPerGpu;
}

bool gradient_shards_copied_in_backward(const Scenario& s) {
  const auto& L = s.layout;
  // The shards exist where the reduction is a reduce-scatter over more than one rank.
  return L.zero >= 3 && L.offload.optimizer && s.implementation.blocking_offload_copies && s.implementation.dp_overlap &&
         zero_shard_ranks(L) > 1;
}

double optimizer_offload_bytes(const Scenario& s, double params) {
  const double down = gradient_shards_copied_in_backward(s) ? 0.0 : s.precision.gradients;
  return params * (down + s.precision.weights);
}

double offload_pcie_bytes_per_step(const Scenario& s, const BuiltProgram& bp) {
  if (!s.layout.offload.activations && !s.layout.offload.optimizer) return 0;
  const StageLayers layers = stage_layers(s);
  const DeviceParams params(s);
  double most = 0;
  for (std::size_t st = 0; st < bp.program.stages.size(); ++st) {
    double bytes = 0;
    // Overlapped copies sit on the prefetch stream, blocking ones on the compute stream.
    for (const sim::Stream on : {stream::prefetch, stream::compute})
      for (const auto& op : bp.program.stages[st].streams[static_cast<std::size_t>(on)])
        if (work_of(op) == Work::offload) bytes += op.bytes;
    if (s.layout.offload.optimizer) {
      const auto& chunks = layers.chunks[st];
      bytes += optimizer_offload_bytes(s, optimizer_params(s, stage_params(s, params, chunks, static_cast<int>(st))));
    }
    most = std::max(most, bytes);
  }
  return most;
}

void fold_offload(Result& res, const Scenario& s, const BuiltProgram& bp, double step_s) {
  if (!s.layout.offload.activations && !s.layout.offload.optimizer) return;
  res.offload.present = true;
  res.offload.pcie_bytes_per_device = offload_pcie_bytes_per_step(s, bp);
  const double rate = s.cluster.inter.pcie_bandwidth_Bps;
  res.offload.pcie_utilization = step_s > 0 && rate > 0 ? std::min(1.0, res.offload.pcie_bytes_per_device / (rate * step_s)) : 0;
}

}  // namespace ls::wl
