// tools/report/html_report.cpp — the `run --html` page: sections, timeline and memory SVG.
#include "tools/report/html_report.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tools/report/html_page.hpp"
#include "tools/report/human_units.hpp"
#include "tools/report/plot.hpp"
#include "tools/report/report_json.hpp"
#include "tools/report/summary.hpp"
#include "tools/report/trace.hpp"

namespace ls::tools {

namespace {

// Geometry of the timeline, in SVG pixels.
constexpr double kLabelWidth = 330;
constexpr double kPlotWidth = 1000;
constexpr double kRowHeight = 13;
constexpr double kRowGap = 2;
constexpr double kDeviceGap = 7;
constexpr double kAxisHeight = 24;

// Rows of a device top to bottom: the compute stream first, then the collectives that
// block it, then the streams beside it.
constexpr std::array<std::uint8_t, wl::track::kCount> kTrackOrder{wl::track::compute, wl::track::tp, wl::track::cp, wl::track::ep,
                                                                  wl::track::pp_send, wl::track::pp_recv, wl::track::dp,
                                                                  wl::track::prefetch};

struct Colour {
  const char* css;
  const char* label;
};

// One colour per kind of work (compute) or per stream (communication): the legend's entries.
constexpr Colour kForward{"#4c8bf5", "forward"};
constexpr Colour kBackward{"#2da44e", "backward"};
constexpr Colour kWeightGrad{"#8fd19e", "weight gradient"};
constexpr Colour kRecompute{"#a371f7", "recompute"};
constexpr Colour kOptimizer{"#e16f24", "optimizer"};
constexpr Colour kOtherCompute{"#8c959f", "other compute"};
constexpr Colour kTp{"#d4a72c", "tp / cp collective"};
constexpr Colour kEp{"#cf222e", "ep all-to-all"};
constexpr Colour kPp{"#54aeff", "pipeline send / receive"};
constexpr Colour kDp{"#57606a", "dp gradient reduction"};
constexpr Colour kGather{"#bf8700", "parameter gather"};
constexpr std::array<Colour, 11> kLegend{kForward, kBackward, kWeightGrad, kRecompute, kOptimizer, kOtherCompute,
                                         kTp,      kEp,       kPp,         kDp,        kGather};

Colour colour_of(const wl::Span& s) {
  if (s.kind == sim::OpKind::compute) {
    switch (s.work) {
      case wl::Work::forward: return kForward;
      case wl::Work::backward:
      case wl::Work::backward_input: return kBackward;
      case wl::Work::backward_weight: return kWeightGrad;
      case wl::Work::recompute: return kRecompute;
      case wl::Work::optimizer: return kOptimizer;
      default: return kOtherCompute;
    }
  }
  switch (s.track) {
    case wl::track::ep: return kEp;
    case wl::track::pp_send:
    case wl::track::pp_recv: return kPp;
    case wl::track::dp: return kDp;
    case wl::track::prefetch: return kGather;
    default: return kTp;
  }
}

std::string device_name(const wl::Result& r, std::int32_t d) {
  if (d >= 0 && static_cast<std::size_t>(d) < r.device_names.size()) return r.device_names[static_cast<std::size_t>(d)];
  return fmt::format("gpu{}", d);
}

int stage_of(const wl::Result& r, std::int32_t d) {
  return d >= 0 && static_cast<std::size_t>(d) < r.device_stage.size() ? r.device_stage[static_cast<std::size_t>(d)] : 0;
}

const wl::PerturbedDevice* perturbation_of(const wl::Result& r, std::int32_t d) {
  for (const auto& p : r.perturbed_devices)
    if (p.device == d) return &p;
  return nullptr;
}


// ---- summary

std::string figures_table(const wl::Result& r) {
  HtmlTable t{.id = "figures", .header = {}, .rows = {}, .numeric = {}};
  auto row = [&](const std::string& k, const std::string& v) { t.rows.push_back({xml_escape(k), xml_escape(v)}); };
  const std::string band = step_time_band_text(r);
  row("step time", human_seconds(r.step_time_s) + "  " + (band.empty() ? "(no held-out published run like this one)" : band));
  if (r.scale_noise.factor > 1)
    row("scale noise", fmt::format("+{} of it: the slowest of {} GPUs", human_seconds(r.scale_noise.cost_s), r.devices));
  row("tokens/s", human_count(r.tokens_per_s));
  row("MFU / HFU", percent(r.mfu) + " / " + percent(r.hfu));
  row("pipeline", fmt::format("{}, {} stage{}, {} micro-batch{}", r.schedule, r.stages, r.stages == 1 ? "" : "s", r.microbatches,
                              r.microbatches == 1 ? "" : "es"));
  row("bubble (mean)", percent(r.bubble_fraction) + " measured, " + percent(r.bubble_fraction_analytic) + " analytic");
  row("memory", fmt::format("{}, peak {} of {} (usable {})", r.memory_verdict, human_bytes(r.max_peak_bytes),
                            human_bytes(r.memory_capacity_bytes), human_bytes(r.memory_usable_bytes)));
  row("bottleneck link", link_bottleneck_text(r));
  row("warnings", fmt::format("{}", r.warnings.size()));
  return render_table(t);
}

std::string stages_table(const wl::Result& r) {
  HtmlTable t{.id = "stages-table",
              .header = {"stage", "layers", "compute", "bubble", "analytic", "idle", "slowest rank"},
              .rows = {},
              .numeric = {true, true, true, true, true, true, false}};
  for (const auto& s : r.per_stage)
    t.rows.push_back({fmt::format("{}", s.stage), fmt::format("{}", s.layers), human_seconds(s.compute_s), percent(s.bubble_fraction),
                      percent(s.bubble_fraction_analytic), percent(s.idle_fraction), xml_escape(slowest_rank_text(r, s))});
  return render_table(t);
}

// ---- memory

struct MemoryTerm {
  const char* name;
  const char* css;
  double wl::MemoryTerms::*field;
};
constexpr std::array<MemoryTerm, 6> kMemoryTerms{{{"weights", "#4c8bf5", &wl::MemoryTerms::weights},
                                                  {"gradients", "#2da44e", &wl::MemoryTerms::gradients},
                                                  {"master", "#8fd19e", &wl::MemoryTerms::master},
                                                  {"optimizer", "#e16f24", &wl::MemoryTerms::optimizer},
                                                  {"activations", "#a371f7", &wl::MemoryTerms::activations},
                                                  {"buffers", "#8c959f", &wl::MemoryTerms::buffers}}};

std::string memory_table(const wl::Result& r) {
  HtmlTable t{.id = "memory-table", .header = {"stage"}, .rows = {}, .numeric = {true}};
  for (const auto& term : kMemoryTerms) t.header.push_back(term.name);
  t.header.insert(t.header.end(), {"peak", "of usable"});
  t.numeric.assign(t.header.size(), true);
  for (const auto& m : r.memory_per_stage) {
    std::vector<std::string> row{fmt::format("{}", m.stage)};
    for (const auto& term : kMemoryTerms) row.push_back(human_bytes(m.*term.field));
    row.push_back(human_bytes(m.peak));
    row.push_back(r.memory_usable_bytes > 0 ? percent(m.peak / r.memory_usable_bytes) : std::string("-"));
    t.rows.push_back(std::move(row));
  }
  return render_table(t);
}

std::string legend(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string out = "<p class=\"legend\">";
  for (const auto& [css, label] : entries) out += fmt::format("<span><i style=\"background:{}\"></i>{}</span>", css, xml_escape(label));
  return out + "</p>\n";
}

// ---- links

std::string links_section(const wl::Result& r) {
  std::string out = "<p id=\"bottleneck\">Bottleneck: " + xml_escape(link_bottleneck_text(r)) + ".</p>\n";
  HtmlTable kinds{.id = "links-by-kind",
                  .header = {"kind", "count", "payload", "wire", "mean util", "max util"},
                  .rows = {},
                  .numeric = {false, true, true, true, true, true}};
  for (const auto& k : r.links_by_kind)
    kinds.rows.push_back({xml_escape(k.kind), fmt::format("{}", k.count), human_bytes(k.payload_bytes), human_bytes(k.bytes),
                          percent(k.mean_utilization), percent(k.max_utilization)});
  out += render_table(kinds);
  HtmlTable groups{.id = "link-groups",
                   .header = {"links", "kind", "count", "payload/link", "wire/link", "util", "busy", "util busy", "bottleneck"},
                   .rows = {},
                   .numeric = {false, false, true, true, true, true, true, true, true}};
  for (const auto& g : r.link_groups)
    groups.rows.push_back({xml_escape(g.pattern) + (g.busiest_of_class ? " <b title=\"busiest of its class\">+</b>" : ""), xml_escape(g.kind),
                           fmt::format("{}", g.count), human_bytes(g.payload_bytes), human_bytes(g.bytes), percent(g.utilization),
                           percent(g.busy_fraction), percent(g.busy_utilization), percent(g.bottleneck_fraction)});
  if (!groups.rows.empty())
    out += fmt::format("<p>Link groups ({} in all; busiest first, by time as a flow's bottleneck; + = busiest of its class)</p>\n",
                       r.link_group_count) +
           render_table(groups);
  return out;
}

std::string warnings_section(const wl::Result& r) {
  if (r.warnings.empty()) return "<p>None.</p>\n";
  std::string out;
  for (const auto& w : r.warnings)
    out += fmt::format("<div class=\"warning\" data-code=\"{}\"><code>{}</code> {}</div>\n", xml_escape(w.code), xml_escape(w.code),
                       xml_escape(w.message));
  return out;
}

}  // namespace

std::string timeline_svg(const wl::Result& r) {
  // Devices and their tracks, in drawing order.
  std::map<std::int32_t, std::set<std::uint8_t>> tracks;
  sim::Time t_end = sim::Time::zero();
  for (const auto& s : r.spans) {
    tracks[s.device].insert(s.track);
    t_end = std::max(t_end, s.end);
  }
  std::vector<std::int32_t> devices;
  for (const auto& [d, _] : tracks) devices.push_back(d);
  std::stable_sort(devices.begin(), devices.end(), [&](std::int32_t a, std::int32_t b) { return stage_of(r, a) < stage_of(r, b); });

  std::map<std::pair<std::int32_t, std::uint8_t>, double> row_y;
  double y = kAxisHeight;
  std::string labels, marks;
  for (const std::int32_t d : devices) {
    const wl::PerturbedDevice* p = perturbation_of(r, d);
    const double device_top = y;
    for (const std::uint8_t tr : kTrackOrder) {
      if (!tracks[d].count(tr)) continue;
      row_y[{d, tr}] = y;
      const bool first = y == device_top;
      std::string label = first ? fmt::format("stage {} · {} · {}", stage_of(r, d), device_name(r, d), track_name(tr)) : track_name(tr);
      std::string extra;
      if (first && p != nullptr)
        extra = p->compute_slowdown != 1.0 ? fmt::format(" ⚠ {:.2f}× slower", p->compute_slowdown) : std::string(" ⚠ perturbed");
      labels += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\"{}>{}{}</text>\n", svg_number(kLabelWidth - 6),
                            svg_number(y + kRowHeight - 3), p != nullptr && first ? " class=\"straggler-label\"" : "",
                            xml_escape(label), xml_escape(extra));
      y += kRowHeight + kRowGap;
    }
    if (p != nullptr)
      marks += fmt::format("<rect class=\"straggler-mark\" x=\"{}\" y=\"{}\" width=\"3\" height=\"{}\" fill=\"#cf222e\"/>\n",
                           svg_number(kLabelWidth - 3), svg_number(device_top), svg_number(y - kRowGap - device_top));
    y += kDeviceGap;
  }
  const double height = y + 4;
  const double width = kLabelWidth + kPlotWidth + 20;
  const double span_s = t_end.seconds();
  auto x_of = [&](sim::Time t) { return kLabelWidth + (span_s > 0 ? t.seconds() / span_s * kPlotWidth : 0.0); };

  std::string out = fmt::format(
      "<svg id=\"timeline-svg\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\">\n"
      "<defs><pattern id=\"hatch\" width=\"5\" height=\"5\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
      "<rect width=\"5\" height=\"5\" fill=\"#f6f8fa\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"5\" stroke=\"#d0d7de\" stroke-width=\"2\"/>"
      "</pattern></defs>\n",
      svg_number(width), svg_number(height), svg_number(width), svg_number(height));
  // Time axis: ticks at a round step.
  if (span_s > 0) {
    const double step = nice_step(span_s, 8);
    for (double t = 0; t <= span_s * (1 + 1e-9); t += step) {
      const double x = kLabelWidth + t / span_s * kPlotWidth;
      out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#eaeef2\"/><text x=\"{0}\" y=\"14\" "
                         "text-anchor=\"middle\">{3}</text>\n",
                         svg_number(x), svg_number(kAxisHeight - 4), svg_number(height), xml_escape(human_seconds(t)));
    }
  }
  out += labels + marks;

  // Idle time on each compute row: the gaps between its spans over the step (one pass
  // over the spans, so a trace of every device stays O(spans · log)).
  std::map<std::int32_t, std::vector<std::pair<sim::Time, sim::Time>>> compute_busy;
  for (const auto& s : r.spans)
    if (s.track == wl::track::compute) compute_busy[s.device].emplace_back(s.start, s.end);
  for (const std::int32_t d : devices) {
    const auto it = row_y.find({d, wl::track::compute});
    if (it == row_y.end()) continue;
    auto& busy = compute_busy[d];
    std::sort(busy.begin(), busy.end());
    sim::Time cursor = sim::Time::zero();
    auto gap = [&](sim::Time a, sim::Time b) {
      if (b <= a) return;
      out += fmt::format("<rect class=\"bubble\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" data-hover=\"1\"><title>{} idle {} "
                         "(bubble or waiting)</title></rect>\n",
                         svg_number(x_of(a)), svg_number(it->second), svg_number(std::max(0.3, x_of(b) - x_of(a))), svg_number(kRowHeight),
                         xml_escape(device_name(r, d)), xml_escape(human_seconds((b - a).seconds())));
    };
    for (const auto& [a, b] : busy) {
      gap(cursor, a);
      cursor = std::max(cursor, b);
    }
    gap(cursor, t_end);
  }

  // The spans, in the trace's order of tracks: one rect each.
  for (const auto& s : r.spans) {
    const auto it = row_y.find({s.device, s.track});
    if (it == row_y.end()) continue;  // a track the timeline has no row for (none today)
    const Colour c = colour_of(s);
    out += fmt::format("<rect class=\"span{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"{}><title>{} · {} {} · {} → {} "
                       "({}){}</title></rect>\n",
                       s.critical ? " critical" : "", svg_number(x_of(s.start)), svg_number(it->second),
                       svg_number(std::max(0.3, x_of(s.end) - x_of(s.start))), svg_number(kRowHeight), c.css,
                       s.microbatch >= 0 ? fmt::format(" data-mb=\"{}\"", s.microbatch) : std::string(), xml_escape(span_name(s)),
                       xml_escape(device_name(r, s.device)), xml_escape(track_name(s.track)), xml_escape(human_seconds(s.start.seconds())),
                       xml_escape(human_seconds(s.end.seconds())), xml_escape(human_seconds((s.end - s.start).seconds())),
                       s.critical ? " · on the critical path" : "");
  }
  out += "</svg>\n";
  return out;
}

std::string memory_svg(const wl::Result& r) {
  constexpr double kBarHeight = 18, kBarGap = 6, kLeft = 70, kWidth = 800, kTop = 8;
  double scale_max = std::max(r.memory_capacity_bytes, r.max_peak_bytes);
  for (const auto& m : r.memory_per_stage) {
    double sum = 0;
    for (const auto& term : kMemoryTerms) sum += m.*term.field;
    scale_max = std::max(scale_max, sum);
  }
  const double height = kTop + static_cast<double>(r.memory_per_stage.size()) * (kBarHeight + kBarGap) + 24;
  auto x_of = [&](double bytes) { return kLeft + (scale_max > 0 ? bytes / scale_max * kWidth : 0.0); };
  std::string out = fmt::format("<svg id=\"memory-svg\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
                                "viewBox=\"0 0 {0} {1}\">\n",
                                svg_number(kLeft + kWidth + 160), svg_number(height));
  double y = kTop;
  for (const auto& m : r.memory_per_stage) {
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">stage {}</text>\n", svg_number(kLeft - 6), svg_number(y + kBarHeight - 5), m.stage);
    double at = 0;
    for (const auto& term : kMemoryTerms) {
      const double v = m.*term.field;
      if (!(v > 0)) continue;
      out += fmt::format("<rect class=\"memory-term\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" data-hover=\"1\">"
                         "<title>stage {} {}: {}</title></rect>\n",
                         svg_number(x_of(at)), svg_number(y), svg_number(x_of(at + v) - x_of(at)), svg_number(kBarHeight), term.css, m.stage, term.name,
                         xml_escape(human_bytes(v)));
      at += v;
    }
    out += fmt::format("<text x=\"{}\" y=\"{}\">peak {}</text>\n", svg_number(x_of(std::max(at, m.peak)) + 6), svg_number(y + kBarHeight - 5),
                       xml_escape(human_bytes(m.peak)));
    y += kBarHeight + kBarGap;
  }
  // The usable budget's label ends at its line, the capacity's starts at its own, so they never overlap.
  auto vline = [&](double bytes, const char* css, const char* dash, const char* anchor, const std::string& label) {
    out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"{3}\" stroke-dasharray=\"{4}\"/><text x=\"{0}\" "
                       "y=\"{5}\" text-anchor=\"{6}\">{7}</text>\n",
                       svg_number(x_of(bytes)), svg_number(kTop - 4), svg_number(y), css, dash, svg_number(y + 14), anchor, xml_escape(label));
  };
  if (r.memory_usable_bytes > 0) vline(r.memory_usable_bytes, "#9a6700", "4 3", "end", "usable " + human_bytes(r.memory_usable_bytes) + " ");
  if (r.memory_capacity_bytes > 0) vline(r.memory_capacity_bytes, "#cf222e", "none", "start", " capacity " + human_bytes(r.memory_capacity_bytes));
  out += "</svg>\n";
  return out;
}

std::string run_html_report(const wl::Result& r) {
  std::string body;
  body += html_section("summary", "Summary", figures_table(r) + "<details><summary>The text summary</summary><pre>" +
                                                  xml_escape(format_summary(r)) + "</pre></details>\n");

  std::string timeline;
  if (r.spans.empty()) {
    timeline = "<p>No spans were recorded for this run.</p>\n";
  } else {
    std::vector<std::pair<std::string, std::string>> entries;
    for (const auto& c : kLegend) entries.emplace_back(c.css, c.label);
    // The SVG's hatch pattern, drawn for the legend in CSS.
    entries.emplace_back("repeating-linear-gradient(45deg,#f6f8fa 0 3px,#d0d7de 3px 5px)", "idle (bubble or waiting)");
    std::set<std::int32_t> traced;
    for (const auto& s : r.spans) traced.insert(s.device);
    timeline = fmt::format("<p>One step of {} traced device{} (of {}), by stage and stream; a dark outline marks the critical "
                           "path{}. Point at a span for its details; click one to pick out its micro-batch.</p>\n",
                           traced.size(), traced.size() == 1 ? "" : "s", r.devices,
                           r.perturbed_devices.empty() ? "" : ", a red bar and label a perturbed device") +
               legend(entries) + "<p id=\"details-line\"></p>\n<div class=\"scroll\">" + timeline_svg(r) + "</div>\n";
  }
  body += html_section("timeline", "Timeline of one step", timeline);
  body += html_section("stages", "Pipeline stages", stages_table(r));

  std::vector<std::pair<std::string, std::string>> terms;
  for (const auto& t : kMemoryTerms) terms.emplace_back(t.css, t.name);
  body += html_section("memory",
                       fmt::format("Memory per GPU ({}: capacity {}, usable {})", r.memory_verdict, human_bytes(r.memory_capacity_bytes),
                                   human_bytes(r.memory_usable_bytes)),
                       legend(terms) + memory_svg(r) + memory_table(r));
  body += html_section("links", "Links", links_section(r));
  body += html_section("warnings", fmt::format("Warnings ({})", r.warnings.size()), warnings_section(r));

  HtmlPage page;
  page.title = "layoutsim: " + r.scenario;
  page.subtitle = setup_description(r);
  page.body = std::move(body);
  page.data_json = to_json_string(r);
  return render_page(page);
}

}  // namespace ls::tools
