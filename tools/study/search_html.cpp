// tools/study/search_html.cpp — `layoutsim search --html`: the ranking, why the winner
// wins, and step time against peak memory, as one self-contained page.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tools/report/html_page.hpp"
#include "tools/report/human_units.hpp"
#include "tools/report/plot.hpp"
#include "tools/study/search.hpp"

namespace ls::tools {

namespace {

std::string ranking_table(const SearchReport& r, const std::vector<DegreeGroup>& groups, int top) {
  HtmlTable t{.id = "ranking",
              .header = {"#", "layout", "step time", "tokens/s", "MFU", "peak memory", "bubble", "exposed comm tp / pp / dp / ep",
                         "variants"},
              .rows = {},
              .numeric = {true, false, true, true, true, true, true, false, false}};
  for (std::size_t g = 0; g < groups.size() && g < static_cast<std::size_t>(std::max(0, top)); ++g) {
    const auto& members = groups[g].members;
    const CandidateOutcome& c = r.ranked[members.front()];
    std::string variants;
    if (members.size() > 1) {
      variants = fmt::format("{} more: ", members.size() - 1);
      for (std::size_t k = 1; k < members.size() && k <= 4; ++k)
        variants += fmt::format("{}{} ({}{})", k > 1 ? ", " : "", xml_escape(compact_layout(r.ranked[members[k]].layout)),
                                r.ranked[members[k]].simulated ? "" : "estimate ", human_seconds(r.ranked[members[k]].step_time_s));
      if (members.size() > 5) variants += ", …";
    }
    const bool tie = within_band(r, c);
    t.rows.push_back({fmt::format("{}{}", members.front() + 1, tie ? " <span class=\"tie\" title=\"within the best's error band\">≈</span>" : ""),
                      xml_escape(compact_layout(c.layout)), human_seconds(c.step_time_s), human_count(c.tokens_per_s), percent(c.mfu),
                      human_bytes(c.peak_memory_bytes) + (c.fits ? "" : " (does not fit)"), percent(c.bubble_fraction), exposed_comm_text(c),
                      variants});
  }
  return render_table(t);
}

std::string band_paragraph(const SearchReport& r) {
  if (r.ranked.empty()) return {};
  return fmt::format("<p id=\"band\">{}{}.</p>\n", r.best_band.rows > 0 ? "<span class=\"tie\">≈</span> " : "", xml_escape(best_band_note(r)));
}

// Step time (x) against peak memory (y) of the simulated candidates; the Pareto front
// joined by a line, the usable memory as a dashed line.
std::string pareto_svg(const SearchReport& r) {
  constexpr double kLeft = 70, kTop = 10, kWidth = 700, kHeight = 300;
  std::vector<const CandidateOutcome*> sim;
  for (const auto& c : r.ranked)
    if (c.simulated) sim.push_back(&c);
  if (sim.empty()) return "<p>No candidate was simulated.</p>\n";
  double t_lo = sim.front()->step_time_s, t_hi = t_lo, m_hi = r.memory_usable_bytes;
  for (const auto* c : sim) {
    t_lo = std::min(t_lo, c->step_time_s);
    t_hi = std::max(t_hi, c->step_time_s);
    m_hi = std::max(m_hi, c->peak_memory_bytes);
  }
  const double pad = std::max(1e-9, (t_hi - t_lo) * 0.05);
  t_lo = std::max(0.0, t_lo - pad);
  t_hi += pad;
  auto x_of = [&](double t) { return kLeft + (t - t_lo) / (t_hi - t_lo) * kWidth; };
  auto y_of = [&](double m) { return kTop + kHeight - (m_hi > 0 ? m / m_hi * kHeight : 0.0); };
  const auto n = svg_number;
  std::string out = fmt::format("<svg id=\"pareto-svg\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 "
                                "{0} {1}\">\n",
                                n(kLeft + kWidth + 20), n(kTop + kHeight + 40));
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#d0d7de\"/>\n", n(kLeft), n(kTop), n(kWidth),
                     n(kHeight));
  out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">step time (s): {} … {}</text>\n", n(kLeft + kWidth / 2),
                     n(kTop + kHeight + 30), xml_escape(human_seconds(t_lo)), xml_escape(human_seconds(t_hi)));
  out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">0</text>\n", n(kLeft - 6),
                     n(kTop + 10), xml_escape(human_bytes(m_hi)), n(kLeft - 6), n(kTop + kHeight));
  if (r.memory_usable_bytes > 0)
    out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#9a6700\" stroke-dasharray=\"4 3\"/><text x=\"{2}\" "
                       "y=\"{3}\" text-anchor=\"end\">usable memory</text>\n",
                       n(kLeft), n(y_of(r.memory_usable_bytes)), n(kLeft + kWidth), n(y_of(r.memory_usable_bytes) - 4));
  std::string front_path;
  for (const std::size_t i : pareto_front(r)) {
    const auto& c = r.ranked[i];
    front_path += fmt::format("{}{},{}", front_path.empty() ? "M" : " L", n(x_of(c.step_time_s)), n(y_of(c.peak_memory_bytes)));
  }
  if (!front_path.empty()) out += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"#2da44e\" stroke-width=\"1.5\"/>\n", front_path);
  // The winner last, so that no other point covers it.
  std::stable_partition(sim.begin(), sim.end(), [&](const CandidateOutcome* c) { return c != &r.ranked.front(); });
  for (const auto* c : sim) {
    const std::size_t rank = static_cast<std::size_t>(c - r.ranked.data()) + 1;
    out += fmt::format("<circle class=\"candidate\" cx=\"{}\" cy=\"{}\" r=\"3.5\" fill=\"{}\" data-hover=\"1\"><title>#{} {}: {}, peak {}"
                       "</title></circle>\n",
                       n(x_of(c->step_time_s)), n(y_of(c->peak_memory_bytes)), rank == 1 ? "#cf222e" : c->fits ? "#4c8bf5" : "#8c959f",
                       rank, xml_escape(compact_layout(c->layout)), xml_escape(human_seconds(c->step_time_s)),
                       xml_escape(human_bytes(c->peak_memory_bytes)));
  }
  return out + "</svg>\n";
}

std::string counts_paragraph(const SearchReport& r) {
  std::string reasons;
  for (const auto& [why, count] : r.rejected_by_reason) reasons += fmt::format("{}{} {}", reasons.empty() ? "" : ", ", why, count);
  const std::string check = estimate_check_text(r);
  return fmt::format("<p id=\"counts\">{} candidates evaluated: {} rejected{}, {} kept, {} simulated.</p>\n{}", r.evaluated,
                     r.evaluated - r.ranked.size(), reasons.empty() ? "" : " (" + xml_escape(reasons) + ")", r.ranked.size(), r.simulated,
                     check.empty() ? "" : "<p id=\"estimate-check\">" + xml_escape(check) + ".</p>\n");
}

}  // namespace

std::string search_html_report(const SearchReport& r, int top) {
  const std::vector<DegreeGroup> groups = degree_groups(r);
  std::string body;
  body += html_section("ranking-section",
                       fmt::format("Ranking (the best of each set of degrees; {} sets, {} candidates kept)", groups.size(), r.ranked.size()),
                       ranking_table(r, groups, top) + band_paragraph(r));
  const std::string why = explain_winner(r);
  body += html_section("explanation", "Why the winner wins",
                       why.empty() ? "<p>Fewer than two layouts with different degrees were simulated: nothing to compare.</p>\n"
                                   : "<pre>" + xml_escape(why.substr(why.find_first_not_of('\n'))) + "</pre>\n");
  body += html_section("pareto", "Step time against peak memory (simulated candidates; the Pareto front in green, the winner in red)",
                       "<p id=\"details-line\"></p>\n" + pareto_svg(r));
  body += html_section("counts-section", "Candidates", counts_paragraph(r));

  HtmlPage page;
  page.title = "layoutsim search: " + r.scenario;
  page.subtitle = fmt::format("{} GPUs · global batch {} × {} tokens · objective {}", r.devices, r.global_batch, r.seq_len,
                              objective_name(r.objective));
  page.body = std::move(body);
  page.data_json = search_json(r).dump();
  return render_page(page);
}

}  // namespace ls::tools
