// workloads/model/headroom.hpp — how much of a GPU's memory tensors can use, and the memory
// options' rules (reserved memory, fragmentation, HSDP shard groups, offload).
//
// "Fits" everywhere (run, check, sweep, search, the warnings) is one rule in three states:
//   usable  = capacity − reserved − fragmentation · capacity
//   tensors = capacity − reserved
//   fits ⇔ peak ≤ usable;  tight ⇔ usable < peak ≤ tensors;  does-not-fit ⇔ peak > tensors
// where `reserved` is what the process holds outside its tensors (CUDA context, NCCL
// buffers, cuBLAS workspaces) and `fragmentation` the share of HBM the caching
// allocator cannot hand out as tensors. A tight layout is short only of that margin,
// which the allocator's expandable segments largely give back
// (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, PyTorch "CUDA semantics", memory
// management): published runs sit there, so it still counts as fitting (with a
// warning). Units: bytes. Cost: O(1).
#pragma once

#include <string>
#include <vector>

#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

/// Default cluster.gpu.reserved_memory, the same on every preset (the key table prints it).
/// Its parts, per GPU:
///  * CUDA context with lazy module loading (CUDA 11.7+): ~0.3–0.6 GB on A100/H100
///    (CUDA C++ Programming Guide, "Lazy Loading"; measured as nvidia-smi's usage of a
///    process that has only initialised a context);
///  * NCCL: NCCL_BUFFSIZE (4 MiB by default, NCCL environment-variable docs) per
///    channel and per peer connection, for the several communicators of a 3D layout
///    (tp, dp, pp, their rings and trees): ~0.5–1 GB;
///  * cuBLAS workspace (32 MiB per handle on Hopper, cuBLAS docs "cublasSetWorkspace"),
///    cuDNN/FlashAttention and TransformerEngine workspaces: ~0.2–0.5 GB.
/// Bounds: [0, capacity / 4]; 1–3 GB is what is seen in practice.
double default_reserved_memory();

/// cluster.gpu.reserved_memory, its default when unset (< 0).
double reserved_memory_bytes(const GpuSpec& gpu);

/// capacity − reserved − fragmentation · capacity (never below 0).
double usable_memory_bytes(const Scenario& s);

/// capacity − reserved (never below 0): what tensors could use with no fragmentation.
double tensor_memory_bytes(const Scenario& s);

enum class MemoryVerdict { fits, tight, does_not_fit };
/// "fits", "tight", "does-not-fit" (the JSON's memory.verdict).
const char* memory_verdict_name(MemoryVerdict v);
/// The three states above.
MemoryVerdict memory_verdict(const Scenario& s, double peak_bytes);

/// memory_verdict(s, peak) is fits or tight: what `fits` means in every output.
bool memory_fits(const Scenario& s, double peak_bytes);

/// Above this share of the usable bytes a layout that fits gets a `memory-tight`
/// warning: a few more percent of fragmentation or a longer sequence tips it over.
inline constexpr double kMemoryTightFraction = 0.95;

/// ZeRO's sharding degree over dp: layout.shard_group when set (HSDP), else dp.
int shard_degree(const LayoutSpec& L);
/// Ranks one ZeRO shard group spans: shard_degree · cp when it shards over cp too
/// (layout.shard_over [dp, cp], the default), shard_degree otherwise.
int zero_shard_ranks(const LayoutSpec& L);
/// Replicas of each shard: dp / shard_degree, times cp when ZeRO does not shard over cp
/// (layout.shard_over: [dp]); 1 without HSDP or a cp replica.
int replica_degree(const LayoutSpec& L);

/// Rules of reserved_memory, memory.fragmentation, shard_group, accumulate_unsharded and
/// offload: (key path, message, hint) triples, appended to `out`.
struct MemoryOptionError { std::string key_path, message, hint; };
std::vector<MemoryOptionError> validate_memory_options(const Scenario& s);

}  // namespace ls::wl
