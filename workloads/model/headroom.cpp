// workloads/model/headroom.cpp — see headroom.hpp.
#include "workloads/model/headroom.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "workloads/model/schedule.hpp"

namespace ls::wl {

double default_reserved_memory() { return 2e9; }

double reserved_memory_bytes(const GpuSpec& gpu) {
  return gpu.reserved_memory_bytes >= 0 ? gpu.reserved_memory_bytes : default_reserved_memory();
}

double usable_memory_bytes(const Scenario& s) {
  const double cap = s.gpu.memory_bytes;
  return std::max(0.0, cap - reserved_memory_bytes(s.gpu) - s.memory.fragmentation * cap);
}

double tensor_memory_bytes(const Scenario& s) { return std::max(0.0, s.gpu.memory_bytes - reserved_memory_bytes(s.gpu)); }

const char* memory_verdict_name(MemoryVerdict v) {
  switch (v) {
    case MemoryVerdict::fits: return "fits";
    case MemoryVerdict::tight: return "tight";
    case MemoryVerdict::does_not_fit: return "does-not-fit";
  }
  return "?";
}

MemoryVerdict memory_verdict(const Scenario& s, double peak_bytes) {
  if (peak_bytes <= usable_memory_bytes(s)) return MemoryVerdict::fits;
  if (peak_bytes <= tensor_memory_bytes(s)) return MemoryVerdict::tight;
  return MemoryVerdict::does_not_fit;
}

bool memory_fits(const Scenario& s, double peak_bytes) { return memory_verdict(s, peak_bytes) != MemoryVerdict::does_not_fit; }

int shard_degree(const LayoutSpec& L) { return L.shard_group > 0 ? L.shard_group : std::max(1, L.dp); }

int zero_shard_ranks(const LayoutSpec& L) { return shard_degree(L) * (L.shard_over_cp ? std::max(1, L.cp) : 1); }

int replica_degree(const LayoutSpec& L) {
  return std::max(1, std::max(1, L.dp) / shard_degree(L)) * (L.shard_over_cp ? 1 : std::max(1, L.cp));
}

std::vector<MemoryOptionError> validate_memory_options(const Scenario& s) {
  std::vector<MemoryOptionError> e;
  const auto& L = s.layout;
  const double cap = s.gpu.memory_bytes;
  const double reserved = s.gpu.reserved_memory_bytes;
  if (reserved >= 0 && cap > 0 && reserved > cap / 4)
    e.push_back({"cluster.gpu.reserved_memory",
                 fmt::format("reserved_memory ({:.3g} GB) must be at most a quarter of the GPU's memory ({:.3g} GB)", reserved / 1e9,
                             cap / 1e9),
                 "CUDA context, NCCL buffers and workspaces take 1-3 GB in practice"});
  const double bucket = s.implementation.gather_bucket_bytes;
  if (!(bucket >= 1e6 && bucket <= 1e10))
    e.push_back({"implementation.gather_bucket", fmt::format("gather_bucket must be in [1 MB, 10 GB], got {:.4g} B", bucket),
                 "DeepSpeed's prefetch buckets are 5e7 elements, Megatron's gradient buckets 40 M parameters"});
  const double f = s.memory.fragmentation;
  if (!(f >= 0 && f <= 0.5))
    e.push_back({"memory.fragmentation", fmt::format("fragmentation must be in [0, 0.5], got {}", f),
                 "PyTorch's caching allocator loses a few percent; 0.05 is the default"});
  if (L.shard_group != 0) {
    if (L.shard_group < 1)
      e.push_back({"layout.shard_group", fmt::format("shard_group must be >= 1, got {}", L.shard_group), "omit it to shard over all of dp"});
    else if (L.dp >= 1 && L.dp % L.shard_group != 0)
      e.push_back({"layout.shard_group", fmt::format("shard_group ({}) must divide dp ({})", L.shard_group, L.dp),
                   "HSDP shards within groups of shard_group ranks and replicates across dp / shard_group groups"});
    if (L.zero < 1)
      e.push_back({"layout.shard_group", fmt::format("shard_group needs zero >= 1 (zero is {})", L.zero),
                   "without ZeRO nothing is sharded; set zero: 1, 2 or 3"});
    if (s.model.moe.experts > 0 && L.shard_group < L.dp)
      e.push_back({"layout.shard_group", "HSDP is not modelled for MoE models (expert state shards over the expert-data-parallel group)",
                   "omit shard_group for MoE models"});
    if (L.cp > 1 && L.shard_group < L.dp && L.shard_over_cp)
      e.push_back({"layout.shard_group", "HSDP with ZeRO sharding over the dp·cp group is not modelled",
                   "omit shard_group, set cp: 1, or shard over dp alone: shard_over: [dp]"});
  }
  if (L.offload.activations && splits_backward(L.schedule))
    e.push_back({"layout.offload.activations", fmt::format("activation offload is not modelled with schedule {}", schedule_name(L.schedule)),
                 "use 1f1b, interleaved-1f1b or gpipe"});
  if ((L.offload.activations || L.offload.optimizer) && !(s.cluster.inter.pcie_bandwidth_Bps > 0))
    e.push_back({"layout.offload", "offload needs a PCIe link between GPU and host",
                 "set cluster.inter_node.pcie_bandwidth (64 GB/s for PCIe Gen5 x16)"});
  return e;
}

}  // namespace ls::wl
