// workloads/advice/cp_advice.hpp — the out-of-memory advice's context-parallel remedy.
//
// Long sequences run out of memory in their activations, which no ZeRO stage shards:
// context parallelism divides them by cp (and the attention's s² work with them). The
// remedy takes cp GPUs out of dp (dp·cp stays, so the optimizer-state sharding stays)
// and multiplies the micro-batches by cp so the global batch stays; the out-of-memory
// warning names it, and price_cp_advice simulates it like the other priced warnings.
#pragma once

#include <functional>
#include <optional>

#include "workloads/build/result.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

/// Sequences at least this long get the cp remedy (below, activations per token are
/// dominated by the linear layers that tp/pp/recompute already address).
inline constexpr std::int64_t kCpAdviceMinSeqLen = 8192;

/// The smallest cp (a power of two dividing dp, with seq_len divisible by 2·cp) whose
/// activations/cp bring `stage` under the GPU's memory, else the largest such cp;
/// nullopt when it does not apply (short sequences, MoE, dp 1, activations not the
/// largest term, cp already set). O(log dp).
std::optional<int> cp_remedy(const Scenario& s, const MemoryTerms& stage);

/// `s` with the remedy applied: cp·c, dp/c, microbatches·c (global batch kept).
Scenario with_cp(const Scenario& s, int c);

/// Appends to the out-of-memory warning of `res` the simulated step time and peak
/// memory of the cp remedy. One more simulation, only when the warning names cp.
void price_cp_advice(const Scenario& s, Result& res, const std::function<Result(const Scenario&)>& simulate_fixed);

}  // namespace ls::wl
