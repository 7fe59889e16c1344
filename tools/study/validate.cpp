// tools/study/validate.cpp — runs files, parallel evaluation, error statistics and the
// text / JSON reports of `layoutsim validate` (the SVG is in validate_plot.cpp).
// yaml-cpp is used here for the runs file itself; each scenario in it goes through
// the scenario loader (tools/scenario/scenario.hpp) like any other scenario.
#include "tools/study/validate.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include "tools/scenario/scenario.hpp"
#include "tools/report/atomic_file.hpp"
#include "tools/report/human_units.hpp"
#include "tools/study/sweep.hpp"
#include "tools/scenario/units.hpp"
#include "workloads/model/headroom.hpp"
#include "workloads/model/schedule.hpp"
#include "workloads/simulate.hpp"

namespace ls::tools {

namespace {

std::string where(const std::string& path, const YAML::Node& n) {
  const auto m = n.Mark();
  return m.is_null() ? path : fmt::format("{}:{}:{}", path, m.line + 1, m.column + 1);
}

// The scenario's text with every map's keys sorted, less the keys that differ between
// the rows of one micro-batch series (validate_series.hpp). Scalars are length-prefixed,
// so no two different trees give one text.
void series_text(const YAML::Node& n, const std::string& path, std::string& out) {
  static const std::set<std::string> kVaried = {"name", "cluster.nodes", "layout.dp", "layout.microbatches", "layout.global_batch"};
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      std::map<std::string, YAML::Node> sorted;
      for (const auto& kv : n) sorted.emplace(kv.first.as<std::string>(), kv.second);
      out += '{';
      for (const auto& [key, value] : sorted) {
        const std::string p = path.empty() ? key : path + "." + key;
        if (kVaried.count(p) != 0) continue;
        out += fmt::format("{}:{}=", key.size(), key);
        series_text(value, p, out);
        out += ',';
      }
      out += '}';
      break;
    }
    case YAML::NodeType::Sequence:
      out += '[';
      for (const auto& item : n) {
        series_text(item, path + "[]", out);
        out += ',';
      }
      out += ']';
      break;
    case YAML::NodeType::Scalar:
      out += fmt::format("{}:{}", n.Scalar().size(), n.Scalar());
      break;
    default:
      out += '~';
  }
}

std::string series_key(const YAML::Node& scenario, const std::string& framework_version) {
  std::string out = fmt::format("{}:{}|", framework_version.size(), framework_version);
  try {
    series_text(scenario, "", out);
  } catch (const YAML::Exception&) {
    return "";  // a key that is not a string: the row joins no series
  }
  return out;
}

// "SOURCE MODEL tT·pP[·vV][·cpC] SCHEDULE mbs B": what tells one series from another in a report.
std::string series_label(const RunRow& row) {
  const auto& L = row.scenario.layout;
  std::string label;
  for (const std::string& part : {group_label(row.groups, "source"), row.scenario.model.name})
    if (!part.empty()) label += part + " ";
  label += fmt::format("t{}·p{}", L.tp, L.pp);
  if (L.virtual_stages > 1) label += fmt::format("·v{}", L.virtual_stages);
  if (L.cp > 1) label += fmt::format("·cp{}", L.cp);
  if (L.pp > 1) label += fmt::format(" {}", wl::schedule_name(L.schedule));
  return label + fmt::format(" mbs {}", L.microbatch_size);
}

// One run entry → RunRow; problems are appended to `errors` (all of them, not just the first).
// Returns false (and leaves `row` partly filled) when the entry has errors.
bool read_run(const std::string& path, const YAML::Node& entry, std::size_t index, RunRow& row, std::vector<std::string>& errors) {
  const std::size_t before = errors.size();
  auto err = [&](const YAML::Node& n, const std::string& what) { errors.push_back(fmt::format("{}: error: {}", where(path, n), what)); };
  if (!entry.IsMap()) {
    err(entry, fmt::format("runs[{}]: expected a map with name, scenario or file, measured", index));
    return false;
  }
  static const std::vector<std::string> kKeys = {"name", "scenario", "file", "measured", "groups", "outlier", "citation", "metadata"};
  row.origin = where(path, entry);
  // Default-constructed YAML::Nodes count as defined (null), so presence is tracked apart.
  YAML::Node scenario, file, measured;
  bool has_scenario = false, has_file = false, has_measured = false;
  std::string framework_version;
  for (const auto& kv : entry) {
    const std::string key = kv.first.as<std::string>();
    if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
      const std::string near = closest_match(key, kKeys);
      err(kv.first, fmt::format("runs[{}]: unknown key '{}'{}", index, key, near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near)));
    } else if (key == "name") {
      if (kv.second.IsScalar()) row.name = kv.second.as<std::string>();
      else err(kv.second, fmt::format("runs[{}].name: expected a string", index));
    } else if (key == "scenario") {
      scenario = kv.second;
      has_scenario = true;
    } else if (key == "file") {
      file = kv.second;
      has_file = true;
    } else if (key == "measured") {
      measured = kv.second;
      has_measured = true;
    } else if (key == "outlier") {
      if (kv.second.IsScalar() && !kv.second.as<std::string>().empty()) row.outlier = kv.second.as<std::string>();
      else err(kv.second, fmt::format("runs[{}].outlier: expected the reason (the sibling run that contradicts it, and how)", index));
    } else if (key == "groups") {
      if (!kv.second.IsMap()) {
        err(kv.second, fmt::format("runs[{}].groups: expected a map KIND: LABEL", index));
        continue;
      }
      for (const auto& g : kv.second) {
        if (!g.second.IsScalar()) err(g.second, fmt::format("runs[{}].groups.{}: expected a label", index, g.first.as<std::string>()));
        else row.groups.emplace_back(g.first.as<std::string>(), g.second.as<std::string>());
      }
    } else if (key == "metadata" && kv.second.IsMap() && kv.second["framework_version"] && kv.second["framework_version"].IsScalar()) {
      // Rows of one layout on two releases of a framework are no micro-batch series.
      framework_version = kv.second["framework_version"].Scalar();
    }
    // citation and the rest of metadata: provenance for people, not read by the simulator.
  }
  const std::string label = row.name.empty() ? fmt::format("runs[{}]", index) : fmt::format("run '{}'", row.name);
  if (row.name.empty()) err(entry, fmt::format("runs[{}]: missing key name", index));

  // measured: exactly one of step_time (a time) and tokens_per_s (whole job); beside it,
  // optionally, the peak memory per GPU the source prints and its convention.
  double tokens_per_s = 0;
  if (!has_measured) {
    err(entry, label + ": missing key measured");
  } else if (!measured.IsMap()) {
    err(measured, label + ": measured: expected one of {step_time: \"3.2 s\"} or {tokens_per_s: N}");
  } else {
    int timings = 0;
    for (const auto& kv : measured) {
      const std::string key = kv.first.as<std::string>();
      const std::string text = kv.second.IsScalar() ? kv.second.as<std::string>() : "";
      try {
        if (key == "step_time") {
          ++timings;
          row.measured_step_s = parse_time(text).seconds();
          if (!(row.measured_step_s > 0)) err(kv.second, label + ": measured.step_time: must be > 0");
        } else if (key == "tokens_per_s") {
          ++timings;
          std::size_t used = 0;
          tokens_per_s = std::stod(text, &used);
          if (used != text.size() || !(tokens_per_s > 0) || !std::isfinite(tokens_per_s))
            err(kv.second, label + ": measured.tokens_per_s: expected a number > 0");
        } else if (key == "peak_memory") {
          row.measured_peak_bytes = parse_bytes(text);
          if (!(row.measured_peak_bytes > 0)) err(kv.second, label + ": measured.peak_memory: must be > 0");
        } else if (key == "memory_convention") {
          row.memory_convention = text;
          if (text != "allocated" && text != "reserved")
            err(kv.second, label + ": measured.memory_convention: expected allocated or reserved (what the source's peak counts)");
        } else {
          err(kv.first, fmt::format("{}: measured: unknown key '{}' (expected step_time or tokens_per_s, and optionally "
                                    "peak_memory, memory_convention)", label, key));
        }
      } catch (const UnitError& e) {
        err(kv.second, fmt::format("{}: measured.{}: {}", label, key, e.what()));
      } catch (const std::exception&) {
        err(kv.second, label + ": measured.tokens_per_s: expected a number > 0");
      }
    }
    if (timings != 1) err(measured, label + ": measured: expected one of {step_time: \"3.2 s\"} or {tokens_per_s: N}");
  }

  // The scenario: inline map (re-emitted as YAML text for the loader) or a file.
  if (has_scenario == has_file) {
    err(entry, label + ": give exactly one of scenario (a map) and file (a path)");
  } else {
    try {
      if (has_scenario) {
        if (!scenario.IsMap()) {
          err(scenario, label + ": scenario: expected a map (a scenario in layoutsim's format)");
        } else {
          YAML::Emitter out;
          out << scenario;
          // Locations in loader messages are lines of this run's scenario block.
          row.scenario = load_scenario_string(out.c_str(), fmt::format("{}[{}].scenario", path, row.name));
          row.series_key = series_key(scenario, framework_version);
        }
      } else {
        const std::filesystem::path p(file.as<std::string>());
        const auto full = p.is_absolute() ? p : std::filesystem::path(path).parent_path() / p;
        row.scenario = load_scenario_file(full.string());
        try {
          row.series_key = series_key(YAML::Load(read_input(full.string(), kMaxRunsFileBytes)), framework_version);
        } catch (const std::exception&) {
          row.series_key.clear();  // loaded once already; a row that cannot be read again joins no series
        }
      }
    } catch (const ScenarioError& e) {
      std::string msg = e.what();
      while (!msg.empty() && msg.back() == '\n') msg.pop_back();
      errors.push_back(fmt::format("{}: error: {}: scenario does not load:\n{}", row.origin, label, msg));
    }
  }
  if (errors.size() != before) return false;
  if (tokens_per_s > 0) row.measured_step_s = tokens_per_step(row.scenario) / tokens_per_s;
  if (std::none_of(row.groups.begin(), row.groups.end(), [](const auto& g) { return g.first == "gpu"; }))
    row.groups.insert(row.groups.begin(), {"gpu", row.scenario.gpu.name});
  return true;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}

// Mean, |mean| and the worst of one error field over the rows where it is finite; an
// outlier counts in the means and is left out of the worst.
ErrorStats stats_of(const std::vector<RowOutcome>& rows, double RowOutcome::*field) {
  ErrorStats s;
  std::vector<double> abs_err, err;
  for (const auto& r : rows) {
    const double e = r.*field;
    if (!std::isfinite(e)) continue;
    abs_err.push_back(std::abs(e));
    err.push_back(e);
    if (!r.outlier.empty()) {
      ++s.outliers;
      continue;
    }
    if (std::abs(e) > s.max_abs_error || s.worst.empty()) {
      s.max_abs_error = std::abs(e);
      s.worst = r.name;
    }
  }
  s.count = static_cast<int>(err.size());
  s.mean_abs_error = mean(abs_err);
  s.mean_error = mean(err);
  return s;
}

// Least-squares slope of the signed error against log2(GPUs), over rows with both; 0
// without two GPU counts to tell apart.
double slope_per_doubling(const std::vector<RowOutcome>& rows) {
  std::vector<double> x, y;
  for (const auto& r : rows)
    if (std::isfinite(r.error) && r.devices > 0) {
      x.push_back(std::log2(static_cast<double>(r.devices)));
      y.push_back(r.error);
    }
  if (std::set<double>(x.begin(), x.end()).size() < 2) return 0;
  return fit_line(x, y).slope;
}

LeaveOutReport leave_out_report(const std::vector<RowOutcome>& rows, const std::string& by) {
  LeaveOutReport rep;
  rep.by = by;
  std::map<std::string, std::vector<RowOutcome>> members;  // sorted by label
  std::map<std::string, bool> fitted;
  std::set<std::string> fitted_sources;
  std::vector<RowOutcome> held;
  for (const auto& r : rows) {
    std::string label = group_label(r.groups, by);
    if (label.empty()) label = "(no " + by + ")";
    members[label].push_back(r);
    fitted[label] = fitted[label] || r.fitted;
    if (r.fitted) fitted_sources.insert(group_label(r.groups, "source"));
    if (!r.fitted) held.push_back(r);
  }
  double sum = 0;
  int n = 0;
  for (const auto& [label, rs] : members) {
    rep.groups.push_back({label, error_stats(rs), fitted[label]});
    if (!fitted[label] && rep.groups.back().stats.count > 0) {
      sum += rep.groups.back().stats.mean_error;
      ++n;
    }
  }
  rep.held_out = error_stats(held);
  rep.held_out_source_mean_error = n > 0 ? sum / n : 0;
  rep.slope_per_doubling = slope_per_doubling(held);
  rep.fitted_sources.assign(fitted_sources.begin(), fitted_sources.end());
  return rep;
}

}  // namespace

double tokens_per_step(const wl::Scenario& s) {
  return static_cast<double>(s.layout.dp) * s.layout.microbatch_size * s.layout.microbatches * static_cast<double>(s.model.seq_len);
}

std::vector<RunRow> read_runs_file(const std::string& path) {
  std::string text;
  try {
    text = read_input(path, kMaxRunsFileBytes);  // bounded (a hostile or wrong file), gzip welcome
  } catch (const IoError& e) {
    throw RunsFileError(fmt::format("{}: error: {}", path, e.what()));
  }
  return read_runs_text(text, path);
}

std::vector<RunRow> read_runs_text(const std::string& text, const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw RunsFileError(fmt::format("{}:{}:{}: error: {}", path, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  std::vector<std::string> errors;
  if (!root.IsMap() || !root["runs"] || !root["runs"].IsSequence()) {
    throw RunsFileError(fmt::format("{}: error: expected a map with key runs: [ ... ]", where(path, root)));
  }
  std::string source;   // the file's source: each row's groups.source unless it names one
  bool fitted = false;  // the shipped constants were fitted on this source
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    if (key == "source") {
      const YAML::Node& s = kv.second;
      if (!s.IsMap()) {
        errors.push_back(fmt::format("{}: error: source: expected {{id: NAME, fitted: BOOL}}", where(path, s)));
        continue;
      }
      for (const auto& f : s) {
        const std::string k = f.first.as<std::string>();
        if (k == "id" && f.second.IsScalar()) source = f.second.as<std::string>();
        else if (k == "fitted" && f.second.IsScalar() && (f.second.as<std::string>() == "true" || f.second.as<std::string>() == "false"))
          fitted = f.second.as<std::string>() == "true";
        else
          errors.push_back(fmt::format("{}: error: source.{}: expected id: NAME or fitted: true | false", where(path, f.first), k));
      }
    } else if (key != "runs") {
      errors.push_back(fmt::format("{}: error: unknown key '{}' (expected runs, source)", where(path, kv.first), key));
    }
  }
  std::vector<RunRow> rows;
  std::set<std::string> names;
  std::size_t index = 0;
  for (const auto& entry : root["runs"]) {
    RunRow& row = rows.emplace_back();
    if (!read_run(path, entry, index, row, errors)) {
      rows.pop_back();
      ++index;
      continue;
    }
    if (!source.empty() && group_label(row.groups, "source").empty()) row.groups.emplace_back("source", source);
    row.fitted = fitted;
    if (!names.insert(row.name).second) {
      errors.push_back(fmt::format("{}: error: duplicate run name '{}'", row.origin, row.name));
    }
    ++index;
  }
  if (!errors.empty()) {
    // Every error up to a page of them; a wholesale mistake repeats on every run.
    constexpr std::size_t kShow = 20;
    std::string all;
    for (std::size_t i = 0; i < errors.size() && i < kShow; ++i) all += errors[i] + "\n";
    if (errors.size() > kShow) all += fmt::format("{}: ... and {} more errors\n", path, errors.size() - kShow);
    throw RunsFileError(all);
  }
  return rows;
}

double row_cost_estimate(const RunRow& row) {
  const auto& L = row.scenario.layout;
  const double ranks = static_cast<double>(L.tp) * L.cp * L.pp * (row.scenario.model.moe.experts > 0 ? std::max(1, L.ep) : 1);
  const auto& inter = row.scenario.cluster.inter;
  const bool several_leaves = !row.scenario.cluster.graph && inter.nodes_per_leaf > 0 && row.scenario.cluster.nodes > inter.nodes_per_leaf;
  const double replicas_run = several_leaves && !inter.routes_by_destination() ? std::max(1, L.dp) : 1;
  return ranks * replicas_run * std::max(1, L.microbatches) *
         std::max(1.0, static_cast<double>(row.scenario.model.layers) / std::max(1, L.pp));
}

std::vector<RowOutcome> evaluate_runs(const std::vector<RunRow>& rows, int jobs, const std::function<void(wl::Scenario&)>& adjust,
                                      const RowProgress& progress) {
  // The sweep runner gives ordered results, per-point exception capture and the
  // progress; a point here is just the row's index. The dearest rows start first: a
  // costly row begun last would leave the other threads idle while it runs alone (each
  // result still lands in its row's slot).
  std::vector<std::size_t> order(rows.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::vector<double> cost(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) cost[i] = row_cost_estimate(rows[i]);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return cost[a] > cost[b]; });
  std::vector<SweepPoint> points;
  points.reserve(rows.size());
  for (const std::size_t i : order) points.push_back({{"row", std::to_string(i)}});
  const auto outcomes = run_sweep(
      points,
      [&](const SweepPoint& p) {
        wl::Scenario sc = rows[std::stoul(p.front().second)].scenario;
        if (adjust) adjust(sc);
        wl::SimOptions opt;
        opt.what_if = false;  // the predicted step is all validation needs
        opt.critical_path = false;
        opt.links = false;
        return wl::simulate(wl::resolve(std::move(sc)), opt);
      },
      jobs, [&](std::size_t j, std::size_t done, std::size_t total) {
        if (progress) progress(order[j], done, total);
      });
  std::vector<const SweepOutcome*> outcome_of(rows.size());
  for (std::size_t j = 0; j < order.size(); ++j) outcome_of[order[j]] = &outcomes[j];
  std::vector<RowOutcome> out(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const SweepOutcome& oc = *outcome_of[i];
    RowOutcome& o = out[i];
    o.name = rows[i].name;
    o.groups = rows[i].groups;
    o.measured_s = rows[i].measured_step_s;
    o.outlier = rows[i].outlier;
    o.fitted = rows[i].fitted;
    o.features = wl::band_features(rows[i].scenario);
    o.microbatches = rows[i].scenario.layout.microbatches;
    o.series_key = rows[i].series_key;
    o.series_label = series_label(rows[i]);
    o.memory_convention = rows[i].memory_convention;
    if (rows[i].measured_peak_bytes > 0) o.measured_peak_bytes = rows[i].measured_peak_bytes;
    if (oc.result) {
      const wl::Result& r = *oc.result;
      o.devices = r.devices;
      o.predicted_s = r.step_time_s;
      o.error = (o.predicted_s - o.measured_s) / o.measured_s;
      o.predicted_peak_bytes = r.max_peak_bytes;
      o.memory_verdict = r.memory_verdict;
      if (rows[i].measured_peak_bytes > 0) o.memory_error = (o.predicted_peak_bytes - o.measured_peak_bytes) / o.measured_peak_bytes;
    } else {
      o.failure = oc.error_message;
    }
  }
  return out;
}

ErrorStats error_stats(const std::vector<RowOutcome>& rows) { return stats_of(rows, &RowOutcome::error); }

ErrorStats memory_error_stats(const std::vector<RowOutcome>& rows) { return stats_of(rows, &RowOutcome::memory_error); }

std::string group_label(const std::vector<std::pair<std::string, std::string>>& groups, const std::string& kind) {
  for (const auto& [k, label] : groups)
    if (k == kind) return label;
  return "";
}

ValidationReport summarize(std::vector<RowOutcome> rows, const std::string& leave_out_by) {
  ValidationReport rep;
  std::map<std::string, std::vector<RowOutcome>> by_group;  // sorted by name
  for (const auto& r : rows) {
    if (!r.failure.empty()) ++rep.failed;
    for (const auto& [kind, label] : r.groups) by_group[kind + ":" + label].push_back(r);
  }
  rep.all = error_stats(rows);
  rep.memory = memory_error_stats(rows);
  for (const auto& r : rows) {
    if (!r.failure.empty()) continue;
    if (r.memory_verdict == wl::memory_verdict_name(wl::MemoryVerdict::fits)) ++rep.verdicts.fits;
    else if (r.memory_verdict == wl::memory_verdict_name(wl::MemoryVerdict::tight)) ++rep.verdicts.tight;
    else if (r.memory_verdict == wl::memory_verdict_name(wl::MemoryVerdict::does_not_fit)) {
      ++rep.verdicts.does_not_fit;
      rep.verdicts.does_not_fit_rows.push_back(r.name);
    }
  }
  for (const auto& [name, members] : by_group) rep.groups.emplace_back(name, error_stats(members));
  if (!leave_out_by.empty()) rep.leave_out = leave_out_report(rows, leave_out_by);
  rep.series = microbatch_series(rows);
  rep.rows = std::move(rows);
  return rep;
}

std::string format_validation(const ValidationReport& r) {
  std::size_t w = 3;
  for (const auto& row : r.rows) w = std::max(w, row.name.size());
  std::string o = fmt::format("{:<{}}  {:>10}  {:>10}  {:>8}\n", "run", w, "measured", "predicted", "error");
  for (const auto& row : r.rows) {
    if (row.failure.empty()) {
      std::string extra;
      if (std::isfinite(row.memory_error))
        extra += fmt::format("  memory {} vs {} {:+.1f}%", human_bytes(row.predicted_peak_bytes), human_bytes(row.measured_peak_bytes),
                             100 * row.memory_error);
      if (!row.outlier.empty()) extra += "  (outlier)";
      o += fmt::format("{:<{}}  {:>10}  {:>10}  {:>+7.1f}%{}\n", row.name, w, human_seconds(row.measured_s), human_seconds(row.predicted_s),
                       100 * row.error, extra);
    } else
      o += fmt::format("{:<{}}  {:>10}  {:>10}  failed: {}\n", row.name, w, human_seconds(row.measured_s), "-", row.failure);
  }
  auto stats = [](const ErrorStats& s) {
    return fmt::format("{:>5}  {:>9.1f}%  {:>9.1f}%  {:>+10.1f}%", s.count, 100 * s.mean_abs_error, 100 * s.max_abs_error, 100 * s.mean_error);
  };
  std::size_t gw = 3;
  for (const auto& [name, s] : r.groups) gw = std::max(gw, name.size());
  o += fmt::format("\n{:<{}}  {:>5}  {:>10}  {:>10}  {:>11}\n", "group", gw, "runs", "mean |err|", "max |err|", "signed mean");
  o += fmt::format("{:<{}}  {}\n", "all", gw, stats(r.all));
  for (const auto& [name, s] : r.groups) o += fmt::format("{:<{}}  {}\n", name, gw, stats(s));
  if (r.memory.count > 0)
    o += fmt::format("{:<{}}  {}\n", "peak memory", gw, stats(r.memory));
  const MemoryVerdicts& mv = r.verdicts;
  if (mv.fits + mv.tight + mv.does_not_fit > 0) {
    o += fmt::format("memory: {} fit, {} tight, {} do not fit (the predicted peak of every row that simulated)\n", mv.fits, mv.tight,
                     mv.does_not_fit);
    if (mv.does_not_fit > 0)
      o += fmt::format("  predicted not to fit, though published as run: {}\n", fmt::join(mv.does_not_fit_rows, ", "));
  }
  if (!r.leave_out.by.empty()) {
    const LeaveOutReport& lo = r.leave_out;
    std::size_t lw = 9;
    for (const auto& g : lo.groups) lw = std::max(lw, g.label.size());
    o += fmt::format("\nleave-one-{}-out: constants fitted on {}; every other {} is predicted by constants that never saw it\n",
                     lo.by, lo.fitted_sources.empty() ? std::string("no source of these rows") : fmt::format("{}", fmt::join(lo.fitted_sources, ", ")),
                     lo.by);
    o += fmt::format("{:<{}}  {:>5}  {:>10}  {:>10}  {:>11}\n", lo.by, lw, "runs", "mean |err|", "max |err|", "signed mean");
    for (const auto& g : lo.groups)
      o += fmt::format("{:<{}}  {}{}\n", g.label, lw, stats(g.stats), g.fitted ? "  (fitted: in-sample)" : "");
    o += fmt::format("{:<{}}  {}\n", "held out", lw, stats(lo.held_out));
    o += fmt::format("held out: mean of the {}s' signed means {:+.1f}%; signed error {:+.2f}% per doubling of the GPU count\n", lo.by,
                     100 * lo.held_out_source_mean_error, 100 * lo.slope_per_doubling);
  }
  o += format_series(r.series);
  if (!r.all.worst.empty()) o += fmt::format("\nworst: {}\n", r.all.worst);
  std::vector<std::string> outliers;
  for (const auto& row : r.rows)
    if (!row.outlier.empty()) outliers.push_back(fmt::format("  {}: {}", row.name, row.outlier));
  if (!outliers.empty()) o += fmt::format("outliers (in the means, not the worst):\n{}\n", fmt::join(outliers, "\n"));
  if (r.failed > 0) o += fmt::format("{} run{} failed to simulate (see above)\n", r.failed, r.failed == 1 ? "" : "s");
  return o;
}

nlohmann::ordered_json validation_json(const ValidationReport& r) {
  using nlohmann::ordered_json;
  auto num = [](double v) { return std::isfinite(v) ? ordered_json(v) : ordered_json(nullptr); };
  ordered_json rows = ordered_json::array();
  for (const auto& row : r.rows) {
    ordered_json j;
    j["id"] = row.name;
    j["measured"] = num(row.measured_s);
    j["predicted"] = num(row.predicted_s);
    j["error"] = num(row.error);
    if (!row.failure.empty()) j["failure"] = row.failure;
    if (!row.outlier.empty()) j["outlier"] = row.outlier;
    j["fitted"] = row.fitted;
    j["features"] = {{"preset", row.features.preset},
                     {"gpu_family", row.features.gpu_family},
                     {"kind", row.features.kind},
                     {"scale", row.features.scale}};
    if (std::isfinite(row.measured_peak_bytes))
      j["memory"] = {{"measured", num(row.measured_peak_bytes)},
                     {"predicted", num(row.predicted_peak_bytes)},
                     {"error", num(row.memory_error)},
                     {"convention", row.memory_convention.empty() ? ordered_json(nullptr) : ordered_json(row.memory_convention)},
                     {"verdict", row.memory_verdict}};
    rows.push_back(std::move(j));
  }
  const auto stats = error_stats_json;
  ordered_json j;
  j["rows"] = std::move(rows);
  j["count"] = r.all.count;
  j["failed"] = r.failed;
  j["mean_abs_error"] = r.all.mean_abs_error;
  j["max_abs_error"] = r.all.max_abs_error;
  j["mean_error"] = r.all.mean_error;
  j["worst"] = r.all.worst;
  ordered_json groups = ordered_json::object();
  for (const auto& [name, s] : r.groups) groups[name] = stats(s);
  j["groups"] = std::move(groups);
  if (r.memory.count > 0) j["memory"] = stats(r.memory);
  j["memory_verdicts"] = {{"fits", r.verdicts.fits},
                          {"tight", r.verdicts.tight},
                          {"does_not_fit", r.verdicts.does_not_fit},
                          {"does_not_fit_rows", r.verdicts.does_not_fit_rows}};
  if (!r.leave_out.by.empty()) {
    const LeaveOutReport& lo = r.leave_out;
    ordered_json lg = ordered_json::object();
    for (const auto& g : lo.groups) {
      ordered_json e = stats(g.stats);
      e["fitted"] = g.fitted;
      lg[g.label] = std::move(e);
    }
    j["leave_out"] = {{"by", lo.by},
                      {"held_out", stats(lo.held_out)},
                      {"mean_abs_error", lo.held_out.mean_abs_error},
                      {"max_abs_error", lo.held_out.max_abs_error},
                      {"mean_error", lo.held_out.mean_error},
                      {"source_mean_error", lo.held_out_source_mean_error},
                      {"slope_per_doubling", lo.slope_per_doubling},
                      {"fitted_sources", lo.fitted_sources},
                      {"groups", std::move(lg)}};
  }
  if (!r.series.empty()) j["series"] = series_json(r.series);
  return j;
}

nlohmann::ordered_json error_stats_json(const ErrorStats& s) {
  nlohmann::ordered_json j;
  j["count"] = s.count;
  j["mean_abs_error"] = s.mean_abs_error;
  j["max_abs_error"] = s.max_abs_error;
  j["mean_error"] = s.mean_error;
  if (s.outliers > 0) j["outliers"] = s.outliers;
  return j;
}

}  // namespace ls::tools
