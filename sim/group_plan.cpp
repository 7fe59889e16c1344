// sim/group_plan.cpp — see group_plan.hpp.
#include "sim/group_plan.hpp"

#include <vector>

namespace ls::sim {

const CommPlan& group_collective_plan(CommPlanner& planner, const Program& program, std::span<const std::int32_t> devices,
                                      CollOp coll, double bytes, std::uint8_t variant) {
  if (coll != CollOp::all_to_all) return planner.collective(devices, coll, bytes);
  if (program.node_dispatch.active()) return planner.node_limited_all_to_all(devices, bytes, program.node_dispatch);
  const auto& weight = program.all_to_all_weight;
  const std::size_t n = devices.size();
  if (weight.size() != n) return planner.collective(devices, coll, bytes);
  // Weighted all-to-all: member i sends S·w[j] to j (dispatch) or S·w[i] (combine).
  std::vector<double> m(n * n, 0.0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      if (i != j) m[i * n + j] = bytes * weight[variant == 0 ? j : i];
  return planner.all_to_all_matrix(devices, m);
}

}  // namespace ls::sim
