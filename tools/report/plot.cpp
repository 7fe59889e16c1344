// tools/report/plot.cpp — the SVG plot. Coordinates are printed with fixed decimals so the
// file is byte-identical run to run.
#include "tools/report/plot.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace ls::tools {

namespace {

std::string tick_label(double v, double step, bool percent) {
  if (percent) {
    const double p = v * 100, ps = step * 100;
    const int dec = ps >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(ps)));
    return fmt::format("{:.{}f}%", p, dec);
  }
  const int dec = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  return fmt::format("{:.{}f}", v, std::clamp(dec, 0, 9));
}

// One <text> with a <tspan> per line of `label` ('\n'-separated), anchored at (x, y).
std::string text_lines(double x, double y, const std::string& label, const std::string& extra) {
  std::string o = fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle"{}>)", x, y, extra);
  std::size_t start = 0;
  for (int line = 0;; ++line) {
    const auto nl = label.find('\n', start);
    const std::string part = label.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    o += line == 0 ? fmt::format("<tspan>{}</tspan>", xml_escape(part))
                   : fmt::format(R"(<tspan x="{:.1f}" dy="14">{}</tspan>)", x, xml_escape(part));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return o + "</text>\n";
}

std::size_t widest_line(const std::string& label) {
  std::size_t w = 0, cur = 0;
  for (char c : label) {
    if (c == '\n') cur = 0;
    else if ((c & 0xC0) != 0x80) w = std::max(w, ++cur);
  }
  return w;
}

std::size_t line_count(const std::string& label) { return 1 + static_cast<std::size_t>(std::count(label.begin(), label.end(), '\n')); }

}  // namespace

bool wants_log2_axis(const std::vector<double>& x) {
  if (x.size() < 2) return false;
  double lo = x.front(), hi = x.front();
  for (double v : x) {
    if (!(v > 0) || !std::isfinite(v)) return false;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  return hi >= 8 * lo;
}

double nice_step(double max, int target) {
  if (!(max > 0) || !std::isfinite(max)) return 1;
  const double raw = max / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= raw) return m * mag;
  }
  return 10 * mag;
}

std::string render_svg(const PlotSpec& spec) {
  const double W = 720, left = 80, right = 30, top = 50, panel_h = 220;
  const std::size_t np = std::max<std::size_t>(1, spec.panels.size());
  const double pw = W - left - right;
  const std::size_t n = spec.x_ticks.size();
  // Numeric x: position by value (log 2 or linear) between the smallest and largest.
  const bool numeric = spec.x_values.size() == n && n > 1 && (!spec.x_log2 || wants_log2_axis(spec.x_values));
  auto xmap = [&](double v) { return spec.x_log2 ? std::log2(v) : v; };
  double xlo = 0, xhi = 1;
  if (numeric) {
    xlo = xhi = xmap(spec.x_values.front());
    for (double v : spec.x_values) {
      xlo = std::min(xlo, xmap(v));
      xhi = std::max(xhi, xmap(v));
    }
  }
  auto xpos = [&](std::size_t i) {
    if (n <= 1) return left + pw / 2;
    const double f = numeric ? (xhi > xlo ? (xmap(spec.x_values[i]) - xlo) / (xhi - xlo) : 0.5)
                             : static_cast<double>(i) / static_cast<double>(n - 1);
    return left + pw * (0.05 + 0.9 * f);
  };
  // Tick labels slant when the widest would overlap its neighbour (≈ 7 px per character).
  double min_gap = pw;
  for (std::size_t i = 1; i < n; ++i) min_gap = std::min(min_gap, std::abs(xpos(i) - xpos(i - 1)));
  std::size_t widest = 0, lines = 1;
  for (const auto& t : spec.x_ticks) {
    widest = std::max(widest, widest_line(t));
    lines = std::max(lines, line_count(t));
  }
  const bool slant = n > 1 && 7.0 * static_cast<double>(widest) > min_gap;
  const double label_depth = slant ? 7.0 * static_cast<double>(widest) * 0.6 + 14.0 * static_cast<double>(lines) : 14.0 * static_cast<double>(lines);

  // Room under each panel for its tick labels and the axis name.
  const double gap = std::max(70.0, label_depth + 42), bottom = gap;
  const double H = top + np * panel_h + (np - 1) * gap + bottom;
  std::string o;
  o += fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{:.0f}" height="{:.0f}" viewBox="0 0 {:.0f} {:.0f}" font-family="sans-serif" font-size="12">)"
                   "\n",
                   W, H, W, H);
  o += fmt::format(R"(<rect x="0" y="0" width="{:.0f}" height="{:.0f}" fill="white"/>)" "\n", W, H);
  o += fmt::format(R"(<text x="{:.1f}" y="28" text-anchor="middle" font-size="16" font-weight="bold">{}</text>)" "\n", W / 2,
                   xml_escape(spec.title));

  for (std::size_t k = 0; k < spec.panels.size(); ++k) {
    const PlotPanel& p = spec.panels[k];
    const double y0 = top + k * (panel_h + gap);  // panel top
    const double y1 = y0 + panel_h;                // panel bottom (value 0)
    double ymax = 0;
    for (const auto& s : p.series)
      for (double v : s.y)
        if (std::isfinite(v)) ymax = std::max(ymax, v);
    const double step = nice_step(ymax > 0 ? ymax : 1, 5);
    const double top_v = std::max(step, std::ceil((ymax > 0 ? ymax : 1) / step - 1e-9) * step);
    auto ypos = [&](double v) { return y1 - panel_h * v / top_v; };

    // frame, grid and y ticks
    o += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="none" stroke="#333"/>)" "\n", left, y0, pw,
                     panel_h);
    for (int t = 0; t * step <= top_v * (1 + 1e-9); ++t) {
      const double v = t * step, y = ypos(v);
      o += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#ddd"/>)" "\n", left, y, left + pw, y);
      o += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#333"/>)" "\n", left - 5, y, left, y);
      o += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="end">{}</text>)" "\n", left - 8, y + 4, tick_label(v, step, p.percent));
    }
    o += fmt::format(R"svg(<text transform="translate({:.1f},{:.1f}) rotate(-90)" text-anchor="middle">{}</text>)svg" "\n", 22.0,
                     (y0 + y1) / 2, xml_escape(p.y_label));
    // x ticks
    for (std::size_t i = 0; i < n; ++i) {
      const double x = xpos(i);
      o += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#333"/>)" "\n", x, y1, x, y1 + 5);
      if (slant)
        o += text_lines(x, y1 + 18, spec.x_ticks[i],
                        fmt::format(R"svg( transform="rotate(-35 {:.1f} {:.1f})" style="text-anchor:end")svg", x, y1 + 18));
      else
        o += text_lines(x, y1 + 18, spec.x_ticks[i], "");
    }
    o += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)" "\n", left + pw / 2, y1 + 24 + label_depth,
                     xml_escape(spec.x_label + (numeric && spec.x_log2 ? " (log 2 scale)" : "")));

    // Legend in the upper corner the curves leave free: top right for falling
    // curves (bubble vs micro-batches), top left for rising ones (step time).
    double first = 0, last = 0;
    for (const auto& s : p.series) {
      if (!s.y.empty() && std::isfinite(s.y.front())) first += s.y.front();
      if (!s.y.empty() && std::isfinite(s.y.back())) last += s.y.back();
    }
    const double legend_x = first >= last ? left + pw - 170 : left + 15;

    // series: polyline through the finite points, a marker on each
    for (std::size_t si = 0; si < p.series.size(); ++si) {
      const PlotSeries& s = p.series[si];
      std::string pts;
      for (std::size_t i = 0; i < n && i < s.y.size(); ++i) {
        if (!std::isfinite(s.y[i])) continue;
        pts += fmt::format("{}{:.1f},{:.1f}", pts.empty() ? "" : " ", xpos(i), ypos(s.y[i]));
      }
      o += fmt::format(R"(<polyline points="{}" fill="none" stroke="{}" stroke-width="2"{}/>)" "\n", pts, s.color,
                       s.dashed ? R"( stroke-dasharray="6,4")" : "");
      for (std::size_t i = 0; i < n && i < s.y.size(); ++i) {
        if (!std::isfinite(s.y[i])) continue;
        o += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="3" fill="{}"/>)" "\n", xpos(i), ypos(s.y[i]), s.color);
      }
      // legend, top right inside the panel
      const double ly = y0 + 16 + 16 * static_cast<double>(si);
      const double lx = legend_x;
      o += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="{}" stroke-width="2"{}/>)" "\n", lx, ly - 4,
                       lx + 24, ly - 4, s.color, s.dashed ? R"( stroke-dasharray="6,4")" : "");
      o += fmt::format(R"(<text x="{:.1f}" y="{:.1f}">{}</text>)" "\n", lx + 30, ly, xml_escape(s.label));
    }
  }
  o += "</svg>\n";
  return o;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

}  // namespace ls::tools
