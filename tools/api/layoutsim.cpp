// tools/api/layoutsim.cpp — the public API (tools/api/layoutsim.hpp): forwards to the loader, the layout report, simulate
// and the report writers the command uses; adds only the layout report's JSON and the sweep's
// flat rows, which the command has no form for.
#include "tools/api/layoutsim.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <filesystem>
#include <iterator>

#include <algorithm>
#include <cmath>

#include "tools/report/output_check.hpp"
#include "tools/report/report_json.hpp"
#include "tools/report/summary.hpp"
#include "tools/report/trace.hpp"

namespace ls::api {

namespace {

// JSON has no NaN or infinity: written as null, as the JSON summary does.
nlohmann::ordered_json number(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json memory_json(const wl::MemoryTerms& m) {
  return {{"stage", m.stage},         {"weights", number(m.weights)},
          {"gradients", number(m.gradients)}, {"master", number(m.master)},
          {"optimizer", number(m.optimizer)}, {"activations", number(m.activations)},
          {"buffers", number(m.buffers)},     {"peak", number(m.peak)}};
}

}  // namespace

std::vector<std::string> override_sets(const Overrides& overrides) {
  std::vector<std::string> sets;
  sets.reserve(overrides.size());
  for (const auto& [key, value] : overrides) sets.push_back(key + "=" + value);
  return sets;
}

ScenarioSource ScenarioSource::builtin() { return {Kind::builtin, {}, "<default>"}; }
ScenarioSource ScenarioSource::file(std::string path) { return {Kind::file, {}, std::move(path)}; }
ScenarioSource ScenarioSource::text(std::string yaml, std::string name) {
  return {Kind::text, std::move(yaml), std::move(name)};
}

ResolvedScenario ScenarioSource::resolve(const Overrides& overrides) const { return resolve_sets(override_sets(overrides)); }

tools::SearchBase ScenarioSource::resolve_search_base(const std::vector<std::string>& sets) const {
  switch (kind_) {
    case Kind::builtin: return tools::load_default_search_base(sets);
    case Kind::file: return tools::load_search_base_file(name_, sets);
    case Kind::text: break;
  }
  return tools::load_search_base_string(yaml_, name_, sets);
}

ResolvedScenario ScenarioSource::resolve_sets(const std::vector<std::string>& sets) const {
  switch (kind_) {
    case Kind::builtin: return tools::load_default_scenario(sets);
    case Kind::file: return tools::load_scenario_file(name_, sets);
    case Kind::text: break;
  }
  return tools::load_scenario_string(yaml_, name_, sets);
}

std::string check_text(const ResolvedScenario& scenario, const LayoutReport& report) {
  return tools::format_layout_report(scenario.scenario(), report);
}

nlohmann::ordered_json check_json(const ResolvedScenario& scenario, const LayoutReport& report) {
  nlohmann::ordered_json j;
  j["scenario"] = scenario->name;
  j["devices"] = report.devices;
  j["stage_layers"] = report.stage_layers;
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  for (const auto& g : report.groups)
    groups.push_back({{"axis", g.axis}, {"devices", g.devices}, {"crosses_nodes", g.crosses_nodes}, {"link_kinds", g.link_kinds}});
  j["groups"] = std::move(groups);
  j["bubble_fraction_analytic"] = number(report.bubble_fraction_analytic);
  j["memory_capacity_bytes"] = number(report.memory_capacity_bytes);
  j["memory_usable_bytes"] = number(report.memory_usable_bytes);
  nlohmann::ordered_json memory = nlohmann::ordered_json::array();
  for (const auto& m : report.memory_per_stage) memory.push_back(memory_json(m));
  j["memory_per_stage"] = std::move(memory);
  j["max_peak_bytes"] = number(report.max_peak_bytes);
  j["fits"] = report.fits;
  j["verdict"] = report.verdict;
  j["params_total"] = number(report.params_total);
  j["model_flops_per_step"] = number(report.model_flops_per_step);
  j["hardware_flops_per_step"] = number(report.hardware_flops_per_step);
  nlohmann::ordered_json comm;
  for (const wl::Axis a : wl::kReportedAxes) {
    nlohmann::ordered_json c = tools::axis_comm_json(report.comm[static_cast<int>(a)]);
    c.erase("exposed_s");  // only a simulation measures it
    comm[wl::axis_name(a)] = std::move(c);
  }
  j["comm"] = std::move(comm);
  nlohmann::ordered_json warnings = nlohmann::ordered_json::array();
  for (const auto& w : report.warnings) warnings.push_back({{"code", w.code}, {"message", w.message}});
  j["warnings"] = std::move(warnings);
  return j;
}

Result simulate(const ResolvedScenario& scenario, const SimOptions& options) {
  Result r = wl::simulate(scenario, options);
  tools::check_summary_numbers(tools::to_json(r));
  return r;
}

nlohmann::ordered_json summary_json(const Result& result) { return tools::to_json(result); }

std::string summary_json_text(const Result& result) { return tools::to_json_string(result); }

std::string trace_json_text(const Result& result) { return tools::chrome_trace_json(result); }

void write_trace(const Result& result, const std::string& path) { tools::write_chrome_trace(result, path); }

SweepRun sweep(const ScenarioSource& source, const std::vector<SweepAxis>& axes, int jobs, const Overrides& fixed) {
  SweepRun run;
  run.keys = tools::sweep_keys(axes);
  run.outcomes = tools::run_sweep(
      tools::expand_sweep(axes),
      [&](const tools::SweepPoint& point) {
        Overrides all = fixed;
        all.insert(all.end(), point.begin(), point.end());
        return api::simulate(source.resolve(all));
      },
      jobs);
  return run;
}

nlohmann::ordered_json sweep_json(const SweepRun& run) { return tools::sweep_json(run.outcomes); }

std::string sweep_csv(const SweepRun& run) { return tools::sweep_csv(run.keys, run.outcomes); }

nlohmann::ordered_json sweep_rows(const SweepRun& run) {
  // The swept values typed as sweep_json types them (the last override of a key applied).
  const nlohmann::ordered_json typed = tools::sweep_json(run.outcomes);
  // The CLI CSV's columns (tools::sweep_csv), the training ones when some point has them.
  const auto [tokens, cost] = tools::sweep_training_columns(run.outcomes);
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < run.outcomes.size(); ++i) {
    const SweepOutcome& o = run.outcomes[i];
    nlohmann::ordered_json row;
    for (const auto& key : run.keys) row[key] = typed[i]["set"].value(key, nlohmann::ordered_json());
    const Result* r = o.result ? &*o.result : nullptr;
    const double nan = std::nan("");
    row["global_batch"] = r ? nlohmann::ordered_json(r->setup.global_batch) : nlohmann::ordered_json(nullptr);
    row["step_time_s"] = number(r ? r->step_time_s : nan);
    row["tokens_per_s"] = number(r ? r->tokens_per_s : nan);
    row["mfu"] = number(r ? r->mfu : nan);
    row["bubble_fraction"] = number(r ? r->bubble_fraction : nan);
    row["bubble_fraction_analytic"] = number(r ? r->bubble_fraction_analytic : nan);
    row["max_peak_bytes"] = number(r ? r->max_peak_bytes : nan);
    row["fits"] = r ? nlohmann::ordered_json(r->memory_fits) : nlohmann::ordered_json(nullptr);
    const bool has_tokens = r && r->training.has_tokens;
    if (tokens) {
      row["time_to_train_s"] = number(has_tokens ? r->training.time_to_train_s : nan);
      row["gpu_hours"] = number(has_tokens ? r->training.gpu_hours : nan);
    }
    if (cost) row["cost"] = number(has_tokens && r->training.has_price ? r->training.cost : nan);
    row["error"] = r ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(o.error_message);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<RunRow> read_runs(const std::vector<std::string>& files) {
  std::vector<RunRow> rows;
  for (const auto& f : files) {
    auto more = tools::read_runs_file(f);
    rows.insert(rows.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }
  return rows;
}

std::vector<std::string> default_runs_files(const std::string& dir) {
  std::vector<std::string> files = {dir + "/llm_foundry.yaml", dir + "/megatron_bridge.yaml"};
  std::vector<std::string> corpus;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/corpus", ec))
    if (e.path().extension() == ".yaml" && e.path().filename() != "subset.yaml") corpus.push_back(e.path().string());
  std::sort(corpus.begin(), corpus.end());
  files.insert(files.end(), corpus.begin(), corpus.end());
  return files;
}

SearchOptions search_options(const ResolvedScenario& base, const std::vector<std::string>& vary,
                             const std::vector<std::string>& fix, const std::string& objective, const std::string& source) {
  SearchOptions o;
  o.axes = tools::default_axes(base.scenario());
  try {
    for (const auto& v : vary) tools::apply_axis_option(o.axes, v, false);
    for (const auto& f : fix) tools::apply_axis_option(o.axes, f, true);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (objective == "step_time") o.objective = tools::SearchObjective::step_time;
  else if (objective == "tokens_per_s") o.objective = tools::SearchObjective::tokens_per_s;
  else if (objective == "cost") o.objective = tools::SearchObjective::cost;
  else throw UsageError(fmt::format("search objective '{}': expected step_time, tokens_per_s or cost", objective));
  if (o.objective == tools::SearchObjective::cost && base->training.gpu_hour_price < 0)
    throw UsageError(fmt::format("--objective cost: {} gives no GPU-hour price (add training: {{gpu_hour_price: 2.5 USD}}, "
                                 "optionally tokens: 15T for the cost to train)", source.empty() ? base->name : source));
  if (o.axes.global_batch.size() > 1 && o.objective == tools::SearchObjective::step_time)
    throw UsageError("--vary global_batch compares steps of different sizes: rank them with --objective tokens_per_s (or cost)");
  return o;
}

std::vector<TunableConstant> calibration_constants(const std::string& fit) {
  if (fit.empty()) return tools::default_fit_constants();
  std::vector<TunableConstant> constants;
  for (const auto& tc : tools::all_constants())
    if (("," + fit + ",").find("," + tc.name + ",") != std::string::npos) constants.push_back(tc);
  if (constants.empty()) throw UsageError(fmt::format("--fit '{}': no known constant named", fit));
  return constants;
}

}  // namespace ls::api
