// tools/report/training_report.hpp — how the whole-run totals (workloads/model/training_cost.hpp)
// appear in the outputs: summary lines, JSON fields, sweep and search columns.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "workloads/model/training_cost.hpp"

namespace ls::tools {

/// Long durations in the unit people plan in: "42.3 days", "7.5 h", "12 min", else seconds.
std::string human_duration(double s);

/// "1.234 M USD" (4 significant digits; the currency code after).
std::string human_money(double amount, const std::string& currency);

/// The summary table's lines ("" when the scenario has no `training` key):
///   time to train   43.21 days for 15.00 T tokens (1.234 M GPU-hours)
///   cost            3.085 M USD at 2.5 USD per GPU-hour (0.2057 USD per million tokens)
std::string training_summary_lines(const wl::TrainingCost& c);

/// Adds time_to_train_s, gpu_hours (with tokens), cost (with tokens and a price) and
/// training: {tokens, gpu_hour_price, currency, cost_per_million_tokens} to `j`.
void add_training_json(nlohmann::ordered_json& j, const wl::TrainingCost& c);

}  // namespace ls::tools
