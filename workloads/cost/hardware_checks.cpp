// workloads/cost/hardware_checks.cpp — see hardware_checks.hpp.
#include "workloads/cost/hardware_checks.hpp"

#include <fmt/format.h>

#include "workloads/cost/low_precision.hpp"

namespace ls::wl {

std::vector<ScenarioIssue> hardware_issues(const Scenario& s) {
  std::vector<ScenarioIssue> out;
  const ComputePrecision c = s.precision.compute;
  const std::string gpu = s.gpu.name.empty() ? std::string("custom") : s.gpu.name;
  if (fp8_gemms(c) && !(s.gpu.fp8_peak_flops > 0))
    out.push_back({"precision.compute",
                   fmt::format("{} needs FP8 tensor cores; GPU '{}' has none (no FP8 peak)", compute_precision_name(c), gpu),
                   "use bf16 on this GPU, an FP8 part (h100-sxm, h200, h800, b200, b300, gb200, gb300), or give "
                   "cluster.gpu.fp8_tflops",
                   "", true});
  else if (c == ComputePrecision::mxfp8 && !s.gpu.mx_formats)
    out.push_back({"precision.compute",
                   fmt::format("mxfp8 (32-element block scaling) runs on Blackwell tensor cores (b200 and later); GPU '{}' "
                               "has no MX formats",
                               gpu),
                   "use fp8 (per-tensor scaling) on Hopper, or cluster.gpu.mx_formats: true for a part that has them",
                   "", true});
  const auto& cl = s.cluster;
  if (cl.nvlink_domain > 0) {
    if (cl.graph)
      out.push_back({"cluster.nvlink_domain", "cannot be combined with cluster.graph",
                     "an explicit graph states its own NVLink switches and links", "", false});
    else if (cl.nvlink_domain < cl.gpus_per_node || cl.nvlink_domain % cl.gpus_per_node != 0)
      out.push_back({"cluster.nvlink_domain",
                     fmt::format("{} GPUs is not a multiple of gpus_per_node ({}): an NVLink domain is whole nodes",
                                 cl.nvlink_domain, cl.gpus_per_node),
                     "e.g. GB200 NVL72: gpus_per_node: 4, nvlink_domain: 72", "", true});
    else if (cl.nvlink_domain > cl.gpus_per_node && cl.intra.kind == "pcie")
      out.push_back({"cluster.nvlink_domain",
                     fmt::format("{} GPUs spans nodes, but cluster.intra_node.kind is pcie", cl.nvlink_domain),
                     "an NVLink domain needs intra_node.kind: nvswitch", "", true});
  }
  return out;
}

}  // namespace ls::wl
