// tools/report/plot.hpp — a plain SVG line plot for sweeps (`layoutsim sweep --plot F.svg`):
// two stacked panels sharing the x axis — step time (top) and bubble fraction,
// measured and analytic (bottom) — with axis labels, ticks and a legend. No
// dependencies: the SVG is written as text and opens in any browser.
#pragma once

#include <string>
#include <vector>

namespace ls::tools {

struct PlotSeries {
  std::string label;
  std::vector<double> y;   // one per x point; NaN = missing (point skipped)
  std::string color;       // CSS colour, e.g. "#1f77b4"
  bool dashed = false;
};

struct PlotPanel {
  std::string y_label;     // e.g. "step time (s)"
  std::vector<PlotSeries> series;
  bool percent = false;    // y ticks as percentages (values are fractions)
};

struct PlotSpec {
  std::string title;
  std::string x_label;                // e.g. "layout.microbatches"
  std::vector<std::string> x_ticks;   // one label per point; '\n' splits a label into lines
  std::vector<PlotPanel> panels;      // drawn top to bottom
  /// Numeric x (one per point, all > 0 for a log axis): points placed by value, not
  /// evenly; empty = categorical (evenly spaced in input order).
  std::vector<double> x_values;
  bool x_log2 = false;                // x_values on a base-2 log scale
};

/// Chooses the x scale of a swept numeric axis: log 2 when the values span 8× or
/// more (8, 16, …, 128 read evenly as doublings), else linear.
bool wants_log2_axis(const std::vector<double>& x);

/// The SVG document (deterministic text). Points are placed along x by x_values when
/// given (linear or log 2), else evenly in input order. Labels too wide for the space
/// between points are drawn slanted. O(points · series).
std::string render_svg(const PlotSpec& spec);

/// Escapes <, >, & and " for SVG text and attributes.
std::string xml_escape(const std::string& s);

/// "nice" tick step (1, 2 or 5 × 10^k) giving about `target` ticks over [0, max].
double nice_step(double max, int target);

}  // namespace ls::tools
