// workloads/analysis/step_split.cpp — see step_split.hpp.
#include "workloads/analysis/step_split.hpp"

#include <stdexcept>

namespace ls::wl {

int split_probe_microbatches(const LayoutSpec& layout) { return layout.microbatches + (layout.pp > 1 ? layout.pp : 1); }

Result::StepSplit split_step(int m, double step_s, int probe_m, double probe_step_s) {
  if (probe_m == m) throw std::invalid_argument("split_step: the two micro-batch counts must differ");
  Result::StepSplit s;
  s.present = true;
  s.microbatches = m;
  s.probe_microbatches = probe_m;
  s.probe_step_s = probe_step_s;
  s.per_microbatch_s = (probe_step_s - step_s) / (probe_m - m);
  s.fixed_s = step_s - m * s.per_microbatch_s;
  return s;
}

}  // namespace ls::wl
