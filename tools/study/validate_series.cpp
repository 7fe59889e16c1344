// tools/study/validate_series.cpp — micro-batch series of a validation: the line through
// each series' measured and predicted step times.
#include "tools/study/validate_series.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "tools/report/human_units.hpp"
#include "tools/study/validate.hpp"

namespace ls::tools {

LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size()) throw std::invalid_argument("fit_line: x and y differ in size");
  if (std::set<double>(x.begin(), x.end()).size() < 2) throw std::invalid_argument("fit_line: needs two distinct x");
  const double n = static_cast<double>(x.size());
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n;
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  LineFit f;
  f.slope = sxy / sxx;
  f.intercept = my - f.slope * mx;
  for (std::size_t i = 0; i < x.size(); ++i) f.max_residual = std::max(f.max_residual, std::abs(y[i] - (f.slope * x[i] + f.intercept)));
  return f;
}

std::vector<MicrobatchSeries> microbatch_series(const std::vector<RowOutcome>& rows) {
  std::vector<std::string> order;                            // keys by first row
  std::map<std::string, std::vector<const RowOutcome*>> by_key;
  for (const auto& r : rows) {
    if (r.series_key.empty()) continue;
    auto& members = by_key[r.series_key];
    if (members.empty()) order.push_back(r.series_key);
    members.push_back(&r);
  }
  std::vector<MicrobatchSeries> out;
  for (const auto& key : order) {
    auto& members = by_key.at(key);
    // A series speaks only when every row simulated: a missing point would move the line.
    if (std::any_of(members.begin(), members.end(), [](const RowOutcome* r) { return !std::isfinite(r->predicted_s); })) continue;
    std::stable_sort(members.begin(), members.end(), [](const RowOutcome* a, const RowOutcome* b) { return a->microbatches < b->microbatches; });
    std::vector<double> m, measured, predicted;
    for (const RowOutcome* r : members) {
      m.push_back(r->microbatches);
      measured.push_back(r->measured_s);
      predicted.push_back(r->predicted_s);
    }
    if (std::set<double>(m.begin(), m.end()).size() < 2) continue;
    MicrobatchSeries s;
    s.label = members.front()->series_label;
    for (const RowOutcome* r : members) {
      s.rows.push_back(r->name);
      s.microbatches.push_back(r->microbatches);
    }
    s.measured = fit_line(m, measured);
    s.predicted = fit_line(m, predicted);
    out.push_back(std::move(s));
  }
  return out;
}

std::string format_series(const std::vector<MicrobatchSeries>& series) {
  if (series.empty()) return "";
  std::size_t w = 6;
  for (const auto& s : series) w = std::max(w, s.label.size());
  std::string o = fmt::format(
      "\nmicro-batch series (rows that differ only in micro-batches per replica, m): step = per micro-batch × m + fixed,\n"
      "fitted to the measured and to the predicted steps\n"
      "{:<{}}  {:>4}  {:>9}  {:>10}  {:>10}  {:>7}  {:>10}  {:>10}  {:>10}\n",
      "series", w, "rows", "m", "per m meas", "predicted", "error", "fixed meas", "predicted", "difference");
  for (const auto& s : series) {
    const std::string m_range = fmt::format("{}-{}", s.microbatches.front(), s.microbatches.back());
    // A measured slope of 0 (equal steps at two counts) has no relative error to give.
    const std::string slope_err = s.measured.slope != 0
                                      ? fmt::format("{:+.1f}%", 100 * (s.predicted.slope - s.measured.slope) / std::abs(s.measured.slope))
                                      : std::string("n/a");
    const double fixed_diff = s.predicted.intercept - s.measured.intercept;
    o += fmt::format("{:<{}}  {:>4}  {:>9}  {:>10}  {:>10}  {:>7}  {:>10}  {:>10}  {:>10}\n", s.label, w, s.rows.size(), m_range,
                     human_seconds(s.measured.slope), human_seconds(s.predicted.slope), slope_err,
                     human_seconds(s.measured.intercept), human_seconds(s.predicted.intercept),
                     fmt::format("{}{}", fixed_diff > 0 ? "+" : "", human_seconds(fixed_diff)));
  }
  return o;
}

nlohmann::ordered_json series_json(const std::vector<MicrobatchSeries>& series) {
  using nlohmann::ordered_json;
  auto fit = [](const LineFit& f) {
    return ordered_json{{"per_microbatch_s", f.slope}, {"fixed_s", f.intercept}, {"max_residual_s", f.max_residual}};
  };
  ordered_json out = ordered_json::array();
  for (const auto& s : series)
    out.push_back({{"label", s.label}, {"rows", s.rows}, {"microbatches", s.microbatches}, {"measured", fit(s.measured)}, {"predicted", fit(s.predicted)}});
  return out;
}

}  // namespace ls::tools
