// workloads/analysis/step_split.hpp — a step split into what each micro-batch adds and what
// the step costs once.
//
// A step of m micro-batches per replica is, for every schedule in steady state, a cost per
// micro-batch times m plus what the step pays whatever its micro-batches: the pipeline's
// fill and drain, the gradient reduction, the optimizer, the weight gathers. The split
// answers what a larger global batch (more gradient accumulation) amortises, and is what
// `validate` fits to published series (tools/study/validate_series.hpp) to say which part
// of a prediction is off. It is measured, not modelled: the step is simulated once more at
// m + Δ micro-batches (Δ = pp with a pipeline: every schedule's period, and Megatron's
// interleaved schedule needs m a multiple of pp; Δ = 1 without one), and the line through
// the two steps gives both parts. Exact where the step is linear in m (the 1F1B closed
// form (m + p − 1)·slot + once-per-step work; tests/test_step_split.cpp).
#pragma once

#include "workloads/build/result.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

/// The micro-batches per replica of the split's second simulation: m + pp with a
/// pipeline, m + 1 without.
int split_probe_microbatches(const LayoutSpec& layout);

/// The line through (m, step_s) and (probe_m, probe_step_s), probe_m ≠ m.
Result::StepSplit split_step(int m, double step_s, int probe_m, double probe_step_s);

}  // namespace ls::wl
