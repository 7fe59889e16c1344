// tools/study/search_report.cpp — what `layoutsim search` writes: the ranked table, the
// Pareto front, CSV and JSON rows, and the winner as a runnable scenario file.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <tuple>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tools/study/search.hpp"
#include "tools/report/csv.hpp"
#include "tools/report/human_units.hpp"
#include "tools/report/training_report.hpp"
#include "tools/scenario/yaml_tree.hpp"
#include "workloads/model/schedule.hpp"

namespace ls::tools {

namespace {


bool has_training(const SearchReport& r) { return r.training.tokens > 0 || r.training.gpu_hour_price >= 0; }

wl::TrainingCost cost_of(const SearchReport& r, const CandidateOutcome& c) {
  return wl::training_cost(r.training, r.devices, c.tokens_per_s);
}

/// The table's extra cells: time to train (with tokens) and cost (to train, or per
/// million tokens without a token budget).
std::string training_cells(const SearchReport& r, const CandidateOutcome* c) {
  if (!has_training(r)) return "";
  std::string s;
  if (r.training.tokens > 0) s += fmt::format(" {:>13}", c ? human_duration(cost_of(r, *c).time_to_train_s) : "time to train");
  if (r.training.gpu_hour_price >= 0) {
    const wl::TrainingCost t = c ? cost_of(r, *c) : wl::TrainingCost{};
    s += fmt::format(" {:>14}", !c ? (r.training.tokens > 0 ? "cost" : "cost per M tok")
                                  : human_money(r.training.tokens > 0 ? t.cost : t.cost_per_million_tokens, r.training.currency));
  }
  return s;
}

std::string placement_text(const std::vector<std::string>& p, const char* sep) {
  std::string s;
  for (std::size_t i = 0; i < p.size(); ++i) s += (i ? sep : "") + p[i];
  return s;
}

/// The sequences per step a candidate ran: its own when the search varies the batch.
std::int64_t batch_of(const SearchReport& r, const SearchLayout& l) { return l.global_batch > 0 ? l.global_batch : r.global_batch; }

/// Shortest round-trip text of a double (CSV cells; JSON uses nlohmann's own).
std::string num(double v) { return fmt::format("{}", v); }

nlohmann::ordered_json layout_json(const SearchLayout& l) {
  nlohmann::ordered_json j;
  j["dp"] = l.dp;
  j["tp"] = l.tp;
  j["pp"] = l.pp;
  j["cp"] = l.cp;
  j["ep"] = l.ep;
  j["zero"] = l.zero;
  j["sequence_parallel"] = l.sequence_parallel;
  j["recompute"] = wl::name_of(wl::kRecomputeNames, l.recompute);
  j["microbatch_size"] = l.microbatch_size;
  j["microbatches"] = l.microbatches;
  j["schedule"] = wl::schedule_name(l.schedule);
  j["virtual_stages"] = l.virtual_stages;
  j["stage_layers"] = stage_layers_name(l.stage_layers_mode);
  j["placement"] = l.placement;
  j["shard_group"] = l.shard_group;  // 0: shard over all of dp
  if (l.global_batch > 0) j["global_batch"] = l.global_batch;  // a searched batch
  j["offload"] = {{"activations", l.offload.activations}, {"optimizer", l.offload.optimizer}};
  j["tp_comm_overlap"] = l.tp_comm_overlap;
  j["dp_overlap"] = l.dp_overlap;
  return j;
}

}  // namespace

namespace {

/// 1-based ranks, ties at their mean rank.
std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<std::size_t> order(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    const double mean = (static_cast<double>(i) + static_cast<double>(j)) / 2 + 1;
    for (std::size_t k = i; k <= j; ++k) r[order[k]] = mean;
    i = j + 1;
  }
  return r;
}

}  // namespace

double spearman(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 2) return 0;
  // Pearson's correlation of the ranks (exact with ties, unlike 1 − 6Σd²/(n(n²−1))).
  const std::vector<double> rx = ranks(x), ry = ranks(y);
  const double n = static_cast<double>(x.size()), mean = (n + 1) / 2;
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < rx.size(); ++i) {
    sxy += (rx[i] - mean) * (ry[i] - mean);
    sxx += (rx[i] - mean) * (rx[i] - mean);
    syy += (ry[i] - mean) * (ry[i] - mean);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0;
}

EstimateCheck estimate_check(const SearchReport& r) {
  EstimateCheck e;
  std::vector<double> est, sim;
  for (const auto& c : r.ranked) {
    if (!c.simulated || !(c.step_time_s > 0) || !(c.analytic_step_s > 0)) continue;
    est.push_back(c.analytic_step_s);
    sim.push_back(c.step_time_s);
    const double gap = c.analytic_step_s / c.step_time_s - 1;
    e.mean_gap += gap;
    e.mean_abs_gap += std::abs(gap);
  }
  e.count = est.size();
  if (e.count > 0) e.mean_gap /= static_cast<double>(e.count), e.mean_abs_gap /= static_cast<double>(e.count);
  e.rank_correlation = spearman(est, sim);
  return e;
}

std::string estimate_check_text(const SearchReport& r) {
  const EstimateCheck ec = estimate_check(r);
  if (ec.count < 2) return "";
  return fmt::format("Estimate against simulation ({} simulated): rank correlation {:.2f}; the estimate is {:.1f} % {} the simulated "
                     "step on average (mean |gap| {:.1f} %)",
                     ec.count, ec.rank_correlation, std::abs(ec.mean_gap) * 100, ec.mean_gap < 0 ? "under" : "over", ec.mean_abs_gap * 100);
}

const char* objective_name(SearchObjective o) {
  return o == SearchObjective::tokens_per_s ? "tokens_per_s" : o == SearchObjective::cost ? "cost" : "step_time";
}

std::vector<std::size_t> pareto_front(const SearchReport& r) {
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < r.ranked.size(); ++i)
    if (r.ranked[i].simulated && r.ranked[i].fits) idx.push_back(i);
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
    const auto &ca = r.ranked[a], &cb = r.ranked[b];
    if (ca.step_time_s != cb.step_time_s) return ca.step_time_s < cb.step_time_s;
    if (ca.peak_memory_bytes != cb.peak_memory_bytes) return ca.peak_memory_bytes < cb.peak_memory_bytes;
    return ca.index < cb.index;
  });
  std::vector<std::size_t> front;
  double best_mem = std::numeric_limits<double>::infinity();
  for (std::size_t i : idx)
    if (r.ranked[i].peak_memory_bytes < best_mem) {
      front.push_back(i);
      best_mem = r.ranked[i].peak_memory_bytes;
    }
  return front;
}

bool within_band(const SearchReport& r, const CandidateOutcome& c) {
  if (r.best_band.rows == 0 || r.ranked.empty() || &c == &r.ranked.front()) return false;
  // Either side: a faster candidate ranked lower (one that does not fit, or an estimate) too.
  // The band's width relative to the best's step, against the relative gap in throughput:
  // the same as comparing step times at one global batch, and meaningful across batches.
  const CandidateOutcome& best = r.ranked.front();
  if (!(best.step_time_s > 0) || !(c.tokens_per_s > 0)) return false;
  return std::abs(best.tokens_per_s / c.tokens_per_s - 1) < (r.best_band.hi_s - r.best_band.lo_s) / best.step_time_s;
}

std::string exposed_comm_text(const CandidateOutcome& c) {
  if (!c.simulated) return "(estimate, not simulated)";
  return fmt::format("{} / {} / {} / {}", human_seconds(c.exposed.tp), human_seconds(c.exposed.pp), human_seconds(c.exposed.dp),
                     human_seconds(c.exposed.ep));
}

std::string best_band_note(const SearchReport& r) {
  const auto& b = r.best_band;
  if (b.rows == 0) return "no error band: no held-out published runs like the best candidate, so how far to trust its lead is unknown";
  std::size_t close = 0;
  for (const auto& c : r.ranked) close += within_band(r, c) ? 1 : 0;
  return fmt::format("within the best's error band: its measured step time would lie in {} … {} (80 % of {} held-out runs like it: {}); "
                     "{} other candidate(s) closer to it than that width ({}) are not told apart from it by the model's accuracy",
                     human_seconds(b.lo_s), human_seconds(b.hi_s), b.rows, b.group, close, human_seconds(b.hi_s - b.lo_s));
}

std::string explain_winner(const SearchReport& r) {
  if (r.ranked.empty() || !r.ranked.front().simulated) return {};
  const CandidateOutcome& a = r.ranked.front();
  const auto degrees = [](const SearchLayout& l) { return std::array<int, 6>{l.tp, l.pp, l.dp, l.cp, l.ep, l.zero}; };
  std::size_t k = 1;
  // The runner-up runs the winner's global batch (when the search varies it), so that the
  // parts of the two steps compare.
  while (k < r.ranked.size() && r.ranked[k].simulated &&
         (degrees(r.ranked[k].layout) == degrees(a.layout) || r.ranked[k].layout.global_batch != a.layout.global_batch))
    ++k;
  if (k >= r.ranked.size() || !r.ranked[k].simulated) return {};
  const CandidateOutcome& b = r.ranked[k];
  const auto delta = [](double x, double y) {
    return x == y ? std::string("same") : fmt::format("{}{}", x > y ? "+" : "-", human_seconds(std::abs(x - y)));
  };
  const auto line = [](const std::string& what, const std::string& va, const std::string& vb, const std::string& d) {
    return fmt::format("  {:<26} {:>10} vs {:>10}   {}\n", what, va, vb, d);
  };
  std::string s = fmt::format("\nWhy #1 over #{} ({}), the best with other degrees:\n", k + 1, compact_layout(b.layout));
  s += line("step time", human_seconds(a.step_time_s), human_seconds(b.step_time_s),
            fmt::format("{} ({:+.1f}%)", delta(a.step_time_s, b.step_time_s), 100 * (a.step_time_s - b.step_time_s) / b.step_time_s));
  s += line("compute (busiest stage)", human_seconds(a.compute_s), human_seconds(b.compute_s), delta(a.compute_s, b.compute_s));
  s += line("pipeline bubble", percent(a.bubble_fraction), percent(b.bubble_fraction),
            fmt::format("{:+.1f} points", 100 * (a.bubble_fraction - b.bubble_fraction)));
  const std::pair<const char*, double ExposedComm::*> axes[] = {
      {"tp", &ExposedComm::tp}, {"pp", &ExposedComm::pp}, {"dp", &ExposedComm::dp}, {"ep", &ExposedComm::ep}, {"cp", &ExposedComm::cp}};
  for (const auto& [name, field] : axes) {
    const double x = a.exposed.*field, y = b.exposed.*field;
    if (x == 0 && y == 0) continue;
    s += line(fmt::format("exposed {} communication", name), human_seconds(x), human_seconds(y), delta(x, y));
  }
  s += line("peak memory", human_bytes(a.peak_memory_bytes), human_bytes(b.peak_memory_bytes),
            fmt::format("{}{}{}", a.peak_memory_bytes >= b.peak_memory_bytes ? "+" : "-",
                        human_bytes(std::abs(a.peak_memory_bytes - b.peak_memory_bytes)),
                        a.fits && b.fits ? " (both fit)" : a.fits ? " (only #1 fits)" : b.fits ? " (only the other fits)" : " (neither fits)"));
  return s;
}

std::vector<DegreeGroup> degree_groups(const SearchReport& r) {
  using Degrees = std::tuple<int, int, int, int, int>;
  auto degrees = [](const SearchLayout& l) { return Degrees{l.tp, l.pp, l.dp, l.cp, l.ep}; };
  std::map<Degrees, std::size_t> group_of;
  std::vector<DegreeGroup> groups;
  for (std::size_t i = 0; i < r.ranked.size(); ++i) {
    const auto [it, fresh] = group_of.emplace(degrees(r.ranked[i].layout), groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].members.push_back(i);
  }
  return groups;
}

std::string format_search(const SearchReport& r, int top) {
  std::string s;
  std::string batches = fmt::format("{}", r.global_batch);
  if (!r.global_batches.empty()) {
    batches.clear();
    for (std::size_t i = 0; i < r.global_batches.size(); ++i) batches += fmt::format("{}{}", i ? ", " : "", r.global_batches[i]);
  }
  s += fmt::format("layoutsim search {}: {} GPUs, global batch {} × {} tokens, objective {}{}\n\n", r.scenario, r.devices,
                   batches, r.seq_len, objective_name(r.objective),
                   r.shard_count > 1 ? fmt::format(", shard {}/{}", r.shard_index, r.shard_count) : "");
  const std::vector<DegreeGroup> groups = degree_groups(r);
  std::vector<std::size_t> shown;
  for (std::size_t g = 0; g < groups.size() && g < static_cast<std::size_t>(std::max(0, top)); ++g) shown.push_back(groups[g].members.front());
  const std::size_t rows = shown.size();
  // The layout column fits its longest entry (compact strings hold multi-byte '·').
  auto width_of = [](const std::string& t) {
    return static_cast<std::size_t>(std::count_if(t.begin(), t.end(), [](char ch) { return (ch & 0xC0) != 0x80; }));
  };
  std::size_t w = 24;
  for (std::size_t i : shown) w = std::max(w, width_of(compact_layout(r.ranked[i].layout)));
  for (std::size_t i : pareto_front(r)) w = std::max(w, width_of(compact_layout(r.ranked[i].layout)));
  auto pad = [&](const std::string& t) { return t + std::string(w - std::min(w, width_of(t)), ' '); };
  s += fmt::format("{:>4}  {} {:>10} {:>10} {:>7} {:>10} {:>10} {:>7}{}  {}\n", "#", pad("layout"), "step time", "tokens/s", "MFU",
                   "peak mem", "headroom", "bubble", training_cells(r, nullptr), "exposed comm tp / pp / dp / ep");
  std::size_t listed = 0, listed_groups = 0;
  for (std::size_t i : shown) {
    const auto& c = r.ranked[i];
    s += fmt::format("{:>4}{} {} {:>10} {:>10} {:>7} {:>10} {:>10} {:>7}{}  {}\n", i + 1, within_band(r, c) ? "≈" : " ", pad(compact_layout(c.layout)),
                     human_seconds(c.step_time_s), human_count(c.tokens_per_s), percent(c.mfu), human_bytes(c.peak_memory_bytes),
                     c.fits ? human_bytes(r.memory_usable_bytes - c.peak_memory_bytes) : "NO FIT", percent(c.bubble_fraction),
                     training_cells(r, &c), exposed_comm_text(c));
    const auto& v = groups[listed_groups++].members;
    listed += v.size();
    if (v.size() > 1) {
      std::string ranks;
      for (std::size_t k = 1; k < v.size() && k <= 5; ++k) ranks += fmt::format("{}#{}", k > 1 ? ", " : "", v[k] + 1);
      if (v.size() > 6) ranks += ", ...";
      s += fmt::format("      + {} variant{} of these degrees ({}): {} … {}\n", v.size() - 1, v.size() == 2 ? "" : "s", ranks,
                       human_seconds(r.ranked[v[1]].step_time_s), human_seconds(r.ranked[v.back()].step_time_s));
    }
  }
  if (r.ranked.size() > listed)
    s += fmt::format("      ... {} more candidates in {} other sets of degrees (--top K shows more; --csv/--json hold all)\n",
                     r.ranked.size() - listed, groups.size() - rows);
  if (!r.ranked.empty()) s += (r.best_band.rows > 0 ? "   ≈  " : "      ") + best_band_note(r) + "\n";

  s += explain_winner(r);

  const auto front = pareto_front(r);
  if (!front.empty()) {
    s += "\nPareto front, step time vs peak memory (simulated candidates):\n";
    for (std::size_t i : front) {
      const auto& c = r.ranked[i];
      s += fmt::format("      {} {:>10} {:>10}\n", pad(compact_layout(c.layout)), human_seconds(c.step_time_s),
                       human_bytes(c.peak_memory_bytes));
    }
  }
  std::string reasons;
  for (const auto& [why, n] : r.rejected_by_reason) reasons += fmt::format("{}{} {}", reasons.empty() ? "" : ", ", why, n);
  s += fmt::format("\nCandidates: {} evaluated = {} rejected{} + {} kept; {} simulated\n", r.evaluated,
                   r.evaluated - r.ranked.size(), reasons.empty() ? "" : " (" + reasons + ")", r.ranked.size(), r.simulated);
  if (const std::string check = estimate_check_text(r); !check.empty()) s += check + "\n";
  const std::size_t analysed = r.evaluated;
  s += fmt::format("Wall time: {} (analytic {}: {} candidates/s; simulation {}: {} simulated/s; {} threads)\n",
                   human_seconds(r.wall_s), human_seconds(r.analytic_wall_s),
                   human_count(r.analytic_wall_s > 0 ? analysed / r.analytic_wall_s : 0.0), human_seconds(r.simulate_wall_s),
                   human_count(r.simulate_wall_s > 0 ? r.simulated / r.simulate_wall_s : 0.0), r.threads);
  return s;
}

std::string search_csv(const SearchReport& r) {
  std::string s =
      "tier,step_time_s,index,layout,tp,pp,dp,cp,ep,zero,sequence_parallel,recompute,microbatch_size,microbatches,global_batch,schedule,"
      "virtual_stages,stage_layers,placement,tp_comm_overlap,dp_overlap,outcome,simulated,tokens_per_s,mfu,peak_memory_bytes,headroom_bytes,fits,"
      "bubble_fraction,exposed_tp_s,exposed_pp_s,exposed_dp_s,exposed_ep_s,analytic_step_time_s";
  const bool training = has_training(r);
  s += training ? ",time_to_train_s,gpu_hours,cost,cost_per_million_tokens\n" : "\n";
  auto training_csv = [&](const CandidateOutcome* c) -> std::string {
    if (!training) return "";
    if (!c) return ",,,,";
    const wl::TrainingCost t = cost_of(r, *c);
    return fmt::format(",{},{},{},{}", t.has_tokens ? num(t.time_to_train_s) : "", t.has_tokens ? num(t.gpu_hours) : "",
                       t.has_tokens && t.has_price ? num(t.cost) : "", t.has_price ? num(t.cost_per_million_tokens) : "");
  };
  auto layout_cells = [&r](const SearchLayout& l) {
    return fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}", csv_cell(compact_layout(l)), l.tp, l.pp, l.dp, l.cp, l.ep,
                       l.zero, l.sequence_parallel ? "true" : "false", wl::name_of(wl::kRecomputeNames, l.recompute), l.microbatch_size,
                       l.microbatches, batch_of(r, l), wl::schedule_name(l.schedule), l.virtual_stages,
                       stage_layers_name(l.stage_layers_mode), placement_text(l.placement, "/"), l.tp_comm_overlap ? "true" : "false",
                       l.dp_overlap ? "true" : "false");
  };
  for (const auto& c : r.ranked) {
    const int tier = c.simulated ? (c.fits ? 0 : 1) : 2;
    s += fmt::format("{},{},{},{},kept,{},{},{},{},{},{},{},{},{},{},{},{}{}\n", tier, num(c.step_time_s), c.index,
                     layout_cells(c.layout), c.simulated ? "true" : "false", num(c.tokens_per_s), num(c.mfu),
                     num(c.peak_memory_bytes), num(r.memory_usable_bytes - c.peak_memory_bytes), c.fits ? "true" : "false",
                     num(c.bubble_fraction), c.simulated ? num(c.exposed.tp) : "", c.simulated ? num(c.exposed.pp) : "",
                     c.simulated ? num(c.exposed.dp) : "", c.simulated ? num(c.exposed.ep) : "", num(c.analytic_step_s),
                     training_csv(&c));
  }
  for (const auto& c : r.rejected)
    s += fmt::format("3,,{},{},{},false,,,,,,,,,,,{}\n", c.index, layout_cells(c.layout), csv_cell(c.rejected), training_csv(nullptr));
  return s;
}

nlohmann::ordered_json search_json(const SearchReport& r) {
  nlohmann::ordered_json j;
  j["scenario"] = r.scenario;
  j["devices"] = r.devices;
  j["global_batch"] = r.global_batch;
  if (!r.global_batches.empty()) j["global_batches"] = r.global_batches;
  j["seq_len"] = r.seq_len;
  j["objective"] = objective_name(r.objective);
  if (r.shard_count > 1) j["shard"] = {{"index", r.shard_index}, {"count", r.shard_count}};
  j["memory_capacity_bytes"] = r.memory_capacity_bytes;
  j["memory_usable_bytes"] = r.memory_usable_bytes;
  if (r.best_band.rows > 0)
    j["best_band"] = {{"lo_s", r.best_band.lo_s}, {"hi_s", r.best_band.hi_s}, {"rows", r.best_band.rows}, {"group", r.best_band.group}};
  else
    j["best_band"] = {{"lo_s", nullptr}, {"hi_s", nullptr}, {"rows", 0}, {"group", nullptr}};
  auto& cands = j["candidates"] = nlohmann::ordered_json::array();
  for (const auto& c : r.ranked) {
    nlohmann::ordered_json e;
    e["index"] = c.index;
    e["layout"] = layout_json(c.layout);
    e["compact"] = compact_layout(c.layout);
    e["step_time_s"] = c.step_time_s;
    e["tokens_per_s"] = c.tokens_per_s;
    e["mfu"] = c.mfu;
    e["peak_memory_bytes"] = c.peak_memory_bytes;
    e["headroom_bytes"] = r.memory_usable_bytes - c.peak_memory_bytes;
    e["fits"] = c.fits;
    e["simulated"] = c.simulated;
    e["bubble_fraction"] = c.bubble_fraction;
    if (c.simulated)
      e["exposed_comm_s"] = {{"tp", c.exposed.tp}, {"pp", c.exposed.pp}, {"dp", c.exposed.dp}, {"ep", c.exposed.ep}, {"cp", c.exposed.cp}};
    e["analytic_step_time_s"] = c.analytic_step_s;
    e["analytic_peak_memory_bytes"] = c.analytic_peak_bytes;
    e["within_band"] = within_band(r, c);
    if (!c.origin.empty()) e["origin"] = c.origin;
    add_training_json(e, cost_of(r, c));  // time_to_train_s, gpu_hours, cost: with a `training` key
    cands.push_back(std::move(e));
  }
  auto& front = j["pareto"] = nlohmann::ordered_json::array();
  for (std::size_t i : pareto_front(r)) front.push_back(r.ranked[i].index);
  nlohmann::ordered_json rejected = nlohmann::ordered_json::object();
  for (const auto& [why, n] : r.rejected_by_reason) rejected[why] = n;
  j["counts"] = {{"evaluated", r.evaluated}, {"kept", r.ranked.size()}, {"rejected", rejected}, {"simulated", r.simulated}};
  const EstimateCheck ec = estimate_check(r);
  j["estimate_check"] = {{"simulated", ec.count},
                         {"rank_correlation", ec.count >= 2 ? nlohmann::ordered_json(ec.rank_correlation) : nlohmann::ordered_json()},
                         {"mean_gap", ec.count > 0 ? nlohmann::ordered_json(ec.mean_gap) : nlohmann::ordered_json()},
                         {"mean_abs_gap", ec.count > 0 ? nlohmann::ordered_json(ec.mean_abs_gap) : nlohmann::ordered_json()}};
  // Why the best beats the best layout of other degrees, the table's paragraph ("" when
  // fewer than two such layouts were simulated).
  std::string why = explain_winner(r);
  why.erase(0, std::min(why.size(), why.find_first_not_of('\n')));
  j["explanation"] = why;
  j["wall_s"] = r.wall_s;
  j["analytic_wall_s"] = r.analytic_wall_s;
  j["simulate_wall_s"] = r.simulate_wall_s;
  return j;
}

namespace {

/// The tree `text` parses to; an empty tree when it does not parse.
YNode read_back(const std::string& text, const std::string& source) {
  try {
    return parse_scenario_yaml(text, source);
  } catch (const std::exception&) {
    return {};
  }
}

/// Same keys, values and order (locations aside).
bool same_tree(const YNode& a, const YNode& b) {
  if (a.kind != b.kind || a.scalar != b.scalar || a.items.size() != b.items.size() || a.entries.size() != b.entries.size()) return false;
  for (std::size_t i = 0; i < a.items.size(); ++i)
    if (!same_tree(a.items[i], b.items[i])) return false;
  for (std::size_t i = 0; i < a.entries.size(); ++i)
    if (a.entries[i].key != b.entries[i].key || !same_tree(a.entries[i].value, b.entries[i].value)) return false;
  return true;
}

}  // namespace

std::string emit_scenario_yaml(const std::string& text, const std::string& source, const SearchReport& r,
                               const CandidateOutcome& best) {
  // Lines [first, end) of the file are the top-level `layout:` block (0-based);
  // comment and blank lines just before the next top-level key stay with that key.
  const YNode root = parse_scenario_yaml(text, source);
  std::vector<std::string> lines;
  {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  std::size_t first = lines.size(), end = lines.size();
  for (std::size_t i = 0; i < root.entries.size(); ++i) {
    if (root.entries[i].key != "layout") continue;
    first = static_cast<std::size_t>(root.entries[i].key_loc.line - 1);
    if (i + 1 < root.entries.size()) end = static_cast<std::size_t>(root.entries[i + 1].key_loc.line - 1);
    auto blank_or_comment = [&](std::size_t k) {
      const auto pos = lines[k].find_first_not_of(" \t");
      return pos == std::string::npos || lines[k][pos] == '#';
    };
    while (end > first + 1 && blank_or_comment(end - 1)) --end;
  }
  const SearchLayout& l = best.layout;
  std::string block = "layout:\n";
  block += fmt::format("  tp: {}\n  pp: {}\n  dp: {}\n  ep: {}\n  zero: {}\n  sequence_parallel: {}\n  recompute: {}\n", l.tp, l.pp,
                       l.dp, l.ep, l.zero, l.sequence_parallel ? "true" : "false", wl::name_of(wl::kRecomputeNames, l.recompute));
  block += fmt::format("  microbatch_size: {}\n  global_batch: {}   # {} micro-batches\n  schedule: {}\n", l.microbatch_size,
                       batch_of(r, l), l.microbatches, wl::schedule_name(l.schedule));
  if (l.schedule == wl::Schedule::interleaved_1f1b) block += fmt::format("  virtual_stages: {}\n", l.virtual_stages);
  if (l.cp > 1) block += fmt::format("  cp: {}\n", l.cp);
  if (r.cp_all_gather) block += "  cp_kind: all-gather\n";
  block += fmt::format("  stage_layers: {}\n  placement: [{}]\n", stage_layers_name(l.stage_layers_mode), placement_text(l.placement, ", "));
  // What a remedy candidate changed (HSDP shard groups, offload).
  if (l.shard_group > 0 && l.shard_group < l.dp) block += fmt::format("  shard_group: {}\n", l.shard_group);
  if (l.offload.activations || l.offload.optimizer)
    block += fmt::format("  offload: {{activations: {}, optimizer: {}}}\n", l.offload.activations, l.offload.optimizer);
  // The two layout keys the search does not vary, carried over from the base.
  block += fmt::format("  dp_bucket: {} B\n", num(r.dp_bucket_bytes));
  if (r.embedding_free) block += "  embedding_free: true\n";

  const std::string header = fmt::format(
      "# Written by `layoutsim search {}`: the best of {} candidates ({} simulated),\n"
      "# {} — {} per step{}, peak memory {}.\n"
      "# Only the layout block below differs from {}.\n",
      source, r.evaluated, r.simulated, compact_layout(l), human_seconds(best.step_time_s), best.simulated ? " (simulated)" : " (estimate)",
      human_bytes(best.peak_memory_bytes), source);
  // The splice keeps the file's comments and spelling; it holds for a block-style
  // file, and is kept only when it reads back as the base with the new layout block.
  std::string out = header;
  for (std::size_t i = 0; i < first && i < lines.size(); ++i) out += lines[i] + "\n";
  out += block;
  for (std::size_t i = end; i < lines.size(); ++i) out += lines[i] + "\n";
  YNode expected = root;
  const YNode layout = parse_scenario_yaml(block, "<layout>").entries.front().value;
  if (YEntry* e = expected.find("layout")) e->value = layout;
  else {
    YEntry added;
    added.key = "layout";
    added.value = layout;
    expected.entries.push_back(std::move(added));
  }
  // The implementation switches the search set, where they differ from the base's.
  bool switches_changed = false;
  auto set_switch = [&](const char* key, bool value, bool base_value) {
    if (value == base_value) return;
    switches_changed = true;
    YEntry* impl = expected.find("implementation");
    if (!impl) {
      YEntry added;
      added.key = "implementation";
      added.value.kind = YNode::Kind::map;
      expected.entries.push_back(std::move(added));
      impl = &expected.entries.back();
    }
    YNode scalar;
    scalar.kind = YNode::Kind::scalar;
    scalar.scalar = value ? "true" : "false";
    if (YEntry* e = impl->value.find(key)) e->value = scalar;
    else {
      YEntry added;
      added.key = key;
      added.value = scalar;
      impl->value.entries.push_back(std::move(added));
    }
  };
  set_switch("tp_comm_overlap", l.tp_comm_overlap, r.base_tp_comm_overlap);
  set_switch("dp_overlap", l.dp_overlap, r.base_dp_overlap);
  if (switches_changed) {
    // The splice keeps one block only: the whole tree, with the note saying what changed.
    std::string note = header;
    note.replace(note.find("Only the layout block below differs"), 35,
                 "Only the layout block and the implementation switches differ");
    return note + yaml_block_text(expected);
  }
  if (same_tree(read_back(out, source), expected)) return out;
  // Any other style (flow, a byte-order mark, layout on one line): the tree itself.
  return header + yaml_block_text(expected);
}

}  // namespace ls::tools
