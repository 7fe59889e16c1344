// tools/study/validate_plot.cpp — `layoutsim validate --plot`: predicted vs measured step
// time on log-log axes, the y = x line and the ±10 % band, one colour per GPU group.
// Same look as tools/report/plot.cpp (white page, #333 frame, #ddd grid, 12 px sans-serif);
// coordinates use fixed decimals so the file is byte-identical run to run.
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "tools/report/plot.hpp"
#include "tools/study/validate.hpp"

namespace ls::tools {

namespace {

std::string decade_label(int k) {
  if (k >= 0 && k <= 3) return fmt::format("{:.0f} s", std::pow(10.0, k));
  if (k < 0 && k >= -3) return fmt::format("{:.{}f} s", std::pow(10.0, k), -k);
  return fmt::format("1e{} s", k);
}

}  // namespace

std::string validation_svg(const ValidationReport& r, const std::string& title) {
  const double size = 520, left = 90, top = 60, right = 190, bottom = 70;
  const double W = left + size + right, H = top + size + bottom;
  double lo = INFINITY, hi = 0;
  for (const auto& row : r.rows) {
    if (!std::isfinite(row.predicted_s)) continue;
    lo = std::min({lo, row.measured_s, row.predicted_s});
    hi = std::max({hi, row.measured_s, row.predicted_s});
  }
  if (!(hi > 0)) lo = 0.1, hi = 10;
  const int dlo = static_cast<int>(std::floor(std::log10(lo))), dhi = std::max(dlo + 1, static_cast<int>(std::ceil(std::log10(hi))));
  auto pos = [&](double v) { return (std::log10(v) - dlo) / (dhi - dlo) * size; };
  auto X = [&](double v) { return left + pos(v); };
  auto Y = [&](double v) { return top + size - pos(v); };

  std::string o;
  o += fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{:.0f}" height="{:.0f}" viewBox="0 0 {:.0f} {:.0f}" font-family="sans-serif" font-size="12">)" "\n", W, H, W, H);
  o += fmt::format(R"(<rect x="0" y="0" width="{:.0f}" height="{:.0f}" fill="white"/>)" "\n", W, H);
  o += fmt::format(R"(<text x="{:.1f}" y="28" text-anchor="middle" font-size="16" font-weight="bold">{}</text>)" "\n", W / 2, xml_escape(title));
  o += fmt::format(R"(<text x="{:.1f}" y="46" text-anchor="middle">mean |error| {:.1f}%, max {:.1f}%, signed mean {:+.1f}% over {} runs</text>)" "\n",
                   W / 2, 100 * r.all.mean_abs_error, 100 * r.all.max_abs_error, 100 * r.all.mean_error, r.all.count);
  // ±10 % band around y = x, clipped to the square.
  const double a = std::pow(10.0, dlo), b = std::pow(10.0, dhi);
  o += fmt::format(R"(<clipPath id="frame"><rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}"/></clipPath>)" "\n", left, top, size, size);
  o += fmt::format(R"svg(<polygon points="{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}" fill="#1f77b4" fill-opacity="0.12" clip-path="url(#frame)"/>)svg" "\n",
                   X(a), Y(a * 1.1), X(b / 1.1), Y(b), X(b), Y(b * 0.9), X(a), Y(a * 0.9));
  // grid, decades
  for (int k = dlo; k <= dhi; ++k) {
    const double v = std::pow(10.0, k);
    o += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#ddd"/>)" "\n", X(v), top, X(v), top + size);
    o += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#ddd"/>)" "\n", left, Y(v), left + size, Y(v));
    o += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)" "\n", X(v), top + size + 18, decade_label(k));
    o += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="end">{}</text>)" "\n", left - 8, Y(v) + 4, decade_label(k));
  }
  o += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="none" stroke="#333"/>)" "\n", left, top, size, size);
  o += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#555" stroke-dasharray="6,4"/>)" "\n", X(a), Y(a), X(b), Y(b));
  o += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle">measured step time (log)</text>)" "\n", left + size / 2, top + size + 40);
  o += fmt::format(R"svg(<text transform="translate({:.1f},{:.1f}) rotate(-90)" text-anchor="middle">predicted step time (log)</text>)svg" "\n", 24.0,
                   top + size / 2);

  // points, one colour per GPU label (first-appearance order)
  static const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
  std::vector<std::string> gpus;
  auto gpu_of = [](const RowOutcome& row) {
    for (const auto& [k, v] : row.groups)
      if (k == "gpu") return v;
    return std::string("?");
  };
  for (const auto& row : r.rows)
    if (std::find(gpus.begin(), gpus.end(), gpu_of(row)) == gpus.end()) gpus.push_back(gpu_of(row));
  for (const auto& row : r.rows) {
    if (!std::isfinite(row.predicted_s)) continue;
    const std::size_t ci = static_cast<std::size_t>(std::find(gpus.begin(), gpus.end(), gpu_of(row)) - gpus.begin()) % 8;
    o += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="3" fill="{}" fill-opacity="0.8"><title>{} {:+.1f}%</title></circle>)" "\n",
                     X(row.measured_s), Y(row.predicted_s), kColors[ci], xml_escape(row.name), 100 * row.error);
  }
  // legend
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const double ly = top + 16 + 18 * static_cast<double>(i);
    o += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="4" fill="{}"/>)" "\n", left + size + 24, ly - 4, kColors[i % 8]);
    o += fmt::format(R"(<text x="{:.1f}" y="{:.1f}">{}</text>)" "\n", left + size + 34, ly, xml_escape(gpus[i]));
  }
  const double ly = top + 16 + 18 * static_cast<double>(gpus.size());
  o += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="14" height="10" fill="#1f77b4" fill-opacity="0.12"/>)" "\n", left + size + 17, ly - 9);
  o += fmt::format(R"(<text x="{:.1f}" y="{:.1f}">±10 %</text>)" "\n", left + size + 34, ly);
  o += "</svg>\n";
  return o;
}

}  // namespace ls::tools
