// tools/report/training_report.cpp — see training_report.hpp.
#include "tools/report/training_report.hpp"

#include <cmath>

#include <fmt/format.h>

#include "tools/report/human_units.hpp"

namespace ls::tools {

std::string human_duration(double s) {
  if (!std::isfinite(s)) return "n/a";
  constexpr double kMinute = 60, kHour = 3600, kDay = 86400, kYear = 365.25 * kDay;
  if (s >= 2 * kYear) return fmt::format("{:.1f} years", s / kYear);
  if (s >= 2 * kDay) return fmt::format("{:.1f} days", s / kDay);
  if (s >= 2 * kHour) return fmt::format("{:.1f} h", s / kHour);
  if (s >= 2 * kMinute) return fmt::format("{:.1f} min", s / kMinute);
  return human_seconds(s);
}

std::string human_money(double amount, const std::string& currency) {
  return fmt::format("{} {}", human_count(amount), currency);
}

std::string training_summary_lines(const wl::TrainingCost& c) {
  std::string out;
  if (c.has_tokens) {
    const std::string ideal =
        c.goodput < 1 ? fmt::format("; {} at 100 % goodput, {:.2f} % here", human_duration(c.time_to_train_ideal_s), 100 * c.goodput) : "";
    out += fmt::format("  {:<22} {} for {} tokens ({} GPU-hours{})\n", "time to train", human_duration(c.time_to_train_s),
                       human_count(c.tokens), human_count(c.gpu_hours), ideal);
  }
  if (c.has_price) {
    const std::string per_m = fmt::format("{} per million tokens", human_money(c.cost_per_million_tokens, c.currency));
    if (c.has_tokens)
      out += fmt::format("  {:<22} {} at {} {} per GPU-hour ({})\n", "cost", human_money(c.cost, c.currency),
                         fmt::format("{}", c.gpu_hour_price), c.currency, per_m);
    else
      out += fmt::format("  {:<22} {} at {} {} per GPU-hour\n", "cost", per_m, fmt::format("{}", c.gpu_hour_price), c.currency);
  }
  return out;
}

void add_training_json(nlohmann::ordered_json& j, const wl::TrainingCost& c) {
  if (!c.has_tokens && !c.has_price) return;
  if (c.has_tokens) {
    j["time_to_train_s"] = c.time_to_train_s;
    j["time_to_train_ideal_s"] = c.time_to_train_ideal_s;
    j["gpu_hours"] = c.gpu_hours;
  }
  if (c.has_tokens && c.has_price) j["cost"] = c.cost;
  nlohmann::ordered_json t;
  if (c.has_tokens) t["tokens"] = c.tokens;
  if (c.has_price) {
    t["gpu_hour_price"] = c.gpu_hour_price;
    t["currency"] = c.currency;
    t["cost_per_million_tokens"] = c.cost_per_million_tokens;
  }
  j["training"] = std::move(t);
}

}  // namespace ls::tools
