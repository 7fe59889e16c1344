// tools/report/output_check.cpp — see output_check.hpp.
#include "tools/report/output_check.hpp"

#include <cmath>
#include <string_view>

#include <fmt/format.h>

namespace ls::tools {
namespace {

// Rounding in the summary's ratios may exceed 1 by a few ulps: not a violation.
constexpr double kFractionSlack = 1e-9;

bool starts_with(const std::string& s, std::string_view prefix) { return s.rfind(prefix, 0) == 0; }

/// The fields the JSON reference documents as number-or-null: a straggler's or perturbed
/// device's cost not priced (more slow devices than are priced one by one, or a device
/// that is not slower), the band when no published run is like this one, a device the
/// critical path or a stage names when there is none (an empty critical path), the
/// slowest link of an axis that moves nothing over a link.
/// Anywhere else a null stands for a NaN or an infinity.
bool may_be_null(const std::string& path, const std::string& key) {
  if (key == "cost_s") return starts_with(path, "stragglers[") || starts_with(path, "perturbed_devices[");
  if (key == "device" || key == "device_name") return starts_with(path, "critical_path.") || starts_with(path, "stragglers[") ||
                                                       starts_with(path, "perturbed_devices[");
  if (key == "slowest_device") return starts_with(path, "pipeline.per_stage[");
  if (key == "slowest_link") return starts_with(path, "comm.");
  return starts_with(path, "step_time_band");
}

template <typename Json>
void walk(const Json& v, const std::string& path, const std::string& key) {
  if (v.is_object()) {
    for (const auto& [k, child] : v.items()) {
      if (k == "warnings") continue;  // text, not numbers
      walk(child, path.empty() ? k : path + "." + k, k);
    }
    return;
  }
  if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i) walk(v[i], fmt::format("{}[{}]", path, i), key);
    return;
  }
  if (v.is_null() && may_be_null(path, key)) return;
  if (v.is_null()) throw OutputInvariantError(fmt::format("summary field {} is not a finite number (NaN or infinity)", path));
  if (!v.is_number()) return;
  const double x = v.template get<double>();
  if (!std::isfinite(x)) throw OutputInvariantError(fmt::format("summary field {} = {} is not finite", path, x));
  // headroom_bytes (usable − peak) is negative exactly when the layout does not fit; a
  // step split's fixed part where one more micro-batch costs more than its average share.
  const bool may_be_negative = key == "headroom_bytes" || (key == "fixed_s" && starts_with(path, "step_split."));
  if (x < 0 && !may_be_negative) throw OutputInvariantError(fmt::format("summary field {} = {} is negative", path, x));
  if (is_fraction_key(key) && x > 1 + kFractionSlack)
    throw OutputInvariantError(fmt::format("summary field {} = {} is a fraction above 1", path, x));
}

}  // namespace

bool is_fraction_key(const std::string& key) {
  return key == "mfu" || key == "hfu" || key.find("fraction") != std::string::npos ||
         key.find("utilization") != std::string::npos || key.rfind("share_", 0) == 0;
}

void check_summary_numbers(const nlohmann::ordered_json& summary) { walk(summary, "", ""); }
void check_summary_numbers(const nlohmann::json& summary) { walk(summary, "", ""); }

}  // namespace ls::tools
