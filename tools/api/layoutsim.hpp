// tools/api/layoutsim.hpp — layoutsim's public C++ API: the one header a program or a language
// binding includes, and the one the `layoutsim` command (tools/cli/) goes through. It sits
// at the top of the library (sim <- topology <- workloads <- {tools/scenario,
// tools/report} <- tools/study <- tools/api), in library ls_api (`find_package(layoutsim)`,
// target layoutsim::ls_api, once installed), so a program gets the same numbers and the
// same JSON bytes as the command line:
//
//   ScenarioSource::file(path).resolve(overrides)  ≡  the loader of `run/check/sweep FILE --set ...`
//   check(scenario), check_text(...), check_json(...) ≡  `layoutsim check`
//   simulate(scenario), summary_json_text(result)  ≡  `layoutsim run --json FILE`
//   sweep(source, axes), sweep_json / sweep_csv    ≡  `layoutsim sweep --json / --csv`
//   search(scenario, options), search_*            ≡  `layoutsim search`
//   read_runs(files), validate(rows, ...)          ≡  `layoutsim validate`
//   calibrate(rows, constants, options)            ≡  `layoutsim calibrate`
//   read_summary(text), diff(a, name_a, b, name_b)  ≡  `layoutsim diff`
//
// Errors: every user error derives from ls::UserError (sim/error.hpp): an invalid
// scenario throws ScenarioError, whose what() holds one compiler-style message per line
// (FILE:LINE:COL: error: KEY.PATH: ...; see tools/scenario/scenario.hpp). Anything else
// (ls::InternalError, a deadlocked schedule) is a bug. Nothing here keeps state between
// calls: every function may be called from several threads at once on distinct arguments.
//
// Example: tools/examples/check_and_run.cpp. Python binding: python/.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/scenario/scenario.hpp"
#include "tools/study/calibrate.hpp"
#include "tools/study/diff.hpp"
#include "tools/study/search.hpp"
#include "tools/study/sweep.hpp"
#include "tools/study/validate.hpp"
#include "workloads/layout_report.hpp"
#include "workloads/resolve.hpp"
#include "workloads/build/result.hpp"
#include "workloads/simulate.hpp"

namespace ls::api {

using tools::ScenarioError;
using tools::SweepAxis;
using tools::SweepOutcome;
using wl::LayoutReport;
using wl::ResolvedScenario;
using wl::Result;
using wl::SimOptions;

/// Overrides in the order they apply (a later one of the same key wins): (KEY.PATH,
/// YAML value), e.g. {"layout.tp", "4"} — the `--set KEY=VALUE` of the command line.
using Overrides = std::vector<std::pair<std::string, std::string>>;

/// "KEY=VALUE" strings, the form tools::load_scenario_* take.
std::vector<std::string> override_sets(const Overrides& overrides);

/// Where a scenario's YAML comes from: the built-in default, a file, or text. Kept
/// unresolved so that a sweep can resolve it once per point with that point's overrides.
class ScenarioSource {
public:
  /// tools/scenario/default_scenario.yaml, embedded at build time (`layoutsim run` with no file).
  static ScenarioSource builtin();
  /// A YAML file, read at each resolve().
  static ScenarioSource file(std::string path);
  /// YAML text; `name` stands for the file name in messages ("NAME:LINE:COL") and the
  /// scenario's name defaults to it as to a file's stem.
  static ScenarioSource text(std::string yaml, std::string name = "<text>");

  /// Loads, applies `overrides` and resolves. Throws ScenarioError.
  ResolvedScenario resolve(const Overrides& overrides = {}) const;
  /// The same with overrides as the command line spells them ("KEY=VALUE", `--set`).
  ResolvedScenario resolve_sets(const std::vector<std::string>& sets) const;
  /// The base of a search (tools/scenario/scenario.hpp SearchBase): a layout that fails
  /// only the layout rules is replaced by a neutral one, the global batch kept.
  tools::SearchBase resolve_search_base(const std::vector<std::string>& sets = {}) const;

  /// The file path, the text's name, or "<default>".
  const std::string& name() const { return name_; }

private:
  enum class Kind { builtin, file, text };
  ScenarioSource(Kind kind, std::string yaml, std::string name)
      : kind_(kind), yaml_(std::move(yaml)), name_(std::move(name)) {}
  Kind kind_;
  std::string yaml_;  // the text (Kind::text only)
  std::string name_;
};

// ------------------------------------------------------------------ check (the layout report)

/// The resolved layout and the step's budget, without simulating.
inline LayoutReport check(const ResolvedScenario& scenario) { return wl::layout_report(scenario); }

/// `layoutsim check`'s text.
std::string check_text(const ResolvedScenario& scenario, const LayoutReport& report);

/// The layout report as JSON: {scenario, devices, stage_layers, groups[], bubble_fraction_analytic,
/// memory_capacity_bytes, memory_per_stage[], fits, params_total, model_flops_per_step,
/// hardware_flops_per_step, warnings[]}; bytes, FLOP, plain numbers (non-finite → null).
nlohmann::ordered_json check_json(const ResolvedScenario& scenario, const LayoutReport& report);

// ------------------------------------------------------------------ simulate (`run`)

/// Simulates one step (workloads/simulate.hpp) and checks the result's summary
/// numbers as `layoutsim run` does before writing them (no negative, NaN or infinite
/// value, no fraction above 1; tools/report/output_check.hpp): a violation throws
/// tools::OutputInvariantError, an InternalError.
Result simulate(const ResolvedScenario& scenario, const SimOptions& options = {});

/// The JSON summary, as `layoutsim run --json` writes it (README "JSON reference").
nlohmann::ordered_json summary_json(const Result& result);

/// The exact bytes `layoutsim run --json FILE` writes (trailing newline included).
std::string summary_json_text(const Result& result);

/// The Chrome trace `layoutsim run --trace FILE` writes, as text (simulate with
/// SimOptions::trace; without it the trace has no spans).
std::string trace_json_text(const Result& result);
/// Writes that trace to `path` as `run --trace` does: atomically, gzip when the name
/// ends in .gz. Throws std::runtime_error when the file cannot be written.
void write_trace(const Result& result, const std::string& path);

// ------------------------------------------------------------------ sweep

/// The outcomes of a sweep, one per point of the product of the axes, in input order.
struct SweepRun {
  std::vector<std::string> keys;          // swept keys, de-duplicated, first-appearance order
  std::vector<SweepOutcome> outcomes;     // a failed point holds error/error_message, no result
};

/// Runs the cartesian product of `axes` (first axis slowest) on `jobs` threads
/// (≤ 0: hardware threads). `fixed` overrides apply to every point, before the
/// point's own. A point whose scenario is invalid is recorded as failed, not thrown.
SweepRun sweep(const ScenarioSource& source, const std::vector<SweepAxis>& axes, int jobs = 0,
               const Overrides& fixed = {});

/// `layoutsim sweep --json`: [{set: {KEY: VALUE}, summary | error}].
nlohmann::ordered_json sweep_json(const SweepRun& run);

/// `layoutsim sweep --csv`.
std::string sweep_csv(const SweepRun& run);

/// One flat object per point, the CSV's columns as JSON values: the swept keys (numbers,
/// booleans or strings as in sweep_json), step_time_s, tokens_per_s, mfu,
/// bubble_fraction, bubble_fraction_analytic, max_peak_bytes, fits, then error (null,
/// or the message of a failed point, whose metrics are null).
nlohmann::ordered_json sweep_rows(const SweepRun& run);

// ------------------------------------------------------------------ studies
// The questions answered by many simulations. Each is the function the command runs,
// with the command's text and JSON forms; options are the study's own structs.

using tools::Calibration;
using tools::CalibrateOptions;
using tools::DiffReport;
using tools::RowOutcome;
using tools::RunRow;
using tools::SearchOptions;
using tools::SearchReport;
using tools::TunableConstant;
using tools::ValidationReport;

/// The options `layoutsim search --vary ... --fix ... --objective ...` builds: the default
/// axes of `base`, then each "KEY=V1,V2" of `vary` (that axis's values) and "KEY=V" of
/// `fix` (that axis pinned to one value); objective "step_time", "tokens_per_s" or "cost" (needs the scenario's
/// training.gpu_hour_price). Throws UsageError on a malformed axis or objective, naming
/// `source` (the scenario's file; empty: its name) where the scenario is to blame.
SearchOptions search_options(const ResolvedScenario& base, const std::vector<std::string>& vary = {},
                             const std::vector<std::string>& fix = {}, const std::string& objective = "step_time",
                             const std::string& source = "");
/// `layoutsim search`: every candidate layout of `base`'s model and cluster, ranked.
inline SearchReport search(const ResolvedScenario& base, const SearchOptions& options) { return tools::run_search(base, options); }
/// The ranked table `layoutsim search` prints (the `top` best rows).
inline std::string search_text(const SearchReport& report, int top) { return tools::format_search(report, top); }
/// `layoutsim search --json` / `--csv`.
inline nlohmann::ordered_json search_json(const SearchReport& report) { return tools::search_json(report); }
inline std::string search_csv(const SearchReport& report) { return tools::search_csv(report); }

/// Every run of every runs file, in file order. Throws tools::RunsFileError (a user error).
std::vector<RunRow> read_runs(const std::vector<std::string>& files);
/// The shipped validation set under `dir` (validation/): the two fitted tables, then
/// every source of corpus/ in name order (corpus/subset.yaml repeats rows: left out).
std::vector<std::string> default_runs_files(const std::string& dir);

/// `layoutsim validate`: simulates every row on `jobs` threads (≤ 0: hardware threads)
/// and summarises the errors, leave-one-out by `leave_out_by` (a group kind, e.g.
/// "source"; empty: none). `progress(row, done, total)` is called after each row (`row`:
/// its index), serialised.
inline ValidationReport validate(const std::vector<RunRow>& rows, int jobs = 0, const std::string& leave_out_by = "",
                                 const tools::RowProgress& progress = {}) {
  return tools::summarize(tools::evaluate_runs(rows, jobs, {}, progress), leave_out_by);
}
/// The table `layoutsim validate` prints, its --json and its --plot.
inline std::string validation_text(const ValidationReport& report) { return tools::format_validation(report); }
inline nlohmann::ordered_json validation_json(const ValidationReport& report) { return tools::validation_json(report); }
inline std::string validation_svg(const ValidationReport& report, const std::string& title) {
  return tools::validation_svg(report, title);
}

/// The constants `calibrate --fit A,B,...` names (the default fit set when `fit` is
/// empty). Throws UsageError when none is known.
std::vector<TunableConstant> calibration_constants(const std::string& fit = "");
/// `layoutsim calibrate`: fits `constants` to `rows` (Levenberg–Marquardt).
inline Calibration calibrate(const std::vector<RunRow>& rows, const std::vector<TunableConstant>& constants,
                             const CalibrateOptions& options) {
  return tools::calibrate(rows, constants, options);
}
inline std::string calibration_text(const Calibration& c, const std::vector<TunableConstant>& constants) {
  return tools::format_calibration(c, constants);
}
inline nlohmann::ordered_json calibration_json(const Calibration& c) { return tools::calibration_json(c); }

/// A `run --json` summary parsed and checked; `name` is used in messages. Throws
/// tools::DiffInputError (a user error) on a text that is not a summary.
inline nlohmann::json read_summary(const std::string& text, const std::string& name) { return tools::read_summary(text, name); }
/// `layoutsim diff`: two summaries side by side.
inline DiffReport diff(const nlohmann::json& a, const std::string& name_a, const nlohmann::json& b, const std::string& name_b) {
  return tools::diff_summaries(a, b, name_a, name_b);
}
inline std::string diff_text(const DiffReport& report) { return tools::format_diff(report); }
inline nlohmann::ordered_json diff_json(const DiffReport& report) { return tools::diff_json(report); }

}  // namespace ls::api
