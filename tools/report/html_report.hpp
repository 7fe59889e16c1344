// tools/report/html_report.hpp — `layoutsim run --html FILE`: one self-contained page with
// the run's summary, a timeline of one step (a Gantt chart by stage, device and stream,
// idle time shaded, perturbed devices marked), memory per stage by term, the link
// classes and the bottleneck, and the warnings with their remedies. Inline SVG, a small
// script of our own (html_page.hpp), the JSON summary embedded; nothing is fetched.
#pragma once

#include <string>

#include "workloads/build/result.hpp"

namespace ls::tools {

/// The page. The timeline draws every span of `r.spans` (one step of the traced
/// devices, as the Chrome trace does: simulate with a trace); without spans it says
/// that none were recorded. Deterministic. O(spans + stages + links + warnings).
std::string run_html_report(const wl::Result& r);

/// The timeline alone (an <svg> element): one row per (device, track) that has spans,
/// devices ordered by stage, then index. Each span is a <rect class="span"> with a
/// <title>; idle time on each device's compute row is a <rect class="bubble">.
std::string timeline_svg(const wl::Result& r);

/// Memory per stage as stacked bars by term (weights … buffers) against the capacity
/// and the usable budget (an <svg> element).
std::string memory_svg(const wl::Result& r);

}  // namespace ls::tools
