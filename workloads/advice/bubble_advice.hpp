// workloads/advice/bubble_advice.hpp — remedies for a large pipeline bubble that respect the
// batch the user fixed.
//
// The analytic bubble (p−1)/(v·m+p−1) falls with more micro-batches m, more virtual
// stages v (interleaved 1F1B) or fewer stages p. With `layout.global_batch` given,
// m = global_batch / (microbatch_size·dp) is not free: the remedies then keep the
// global batch (interleaving; a smaller micro-batch size, which raises m; fewer stages,
// which raises dp on the same GPUs and lowers m) and never change the batch. Only when
// the user gave `microbatches` instead is "more micro-batches" offered, with the
// global batch it implies.
#pragma once

#include <string>
#include <vector>

#include "workloads/build/result.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

/// "; keeping the global batch of 512 sequences: schedule: interleaved-1f1b with
/// virtual_stages: 2 (6.2%), microbatch_size: 1 (m = 32, 5.3%); ..." — every candidate
/// passes validate() and is listed with its analytic bubble; the first of each kind
/// below `target` (else the best that improves). Empty when nothing improves.
/// Fewer stages are offered only if each GPU's parameter state, which grows by pp/pp'
/// (the same model over fewer stages), still fits next to today's activations and
/// buffers: max over `memory` of state·pp/pp' + activations + buffers ≤ gpu.memory_bytes.
std::string bubble_remedies(const Scenario& s, double target, const std::vector<MemoryTerms>& memory);

}  // namespace ls::wl
