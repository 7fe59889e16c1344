// python/layoutsim_module.cpp — the native half of the `layoutsim` Python package
// (layoutsim._core), a thin pybind11 layer over the public C++ API (tools/api/layoutsim.hpp).
//
// Results cross the boundary as the JSON text the C++ API writes, and the pure-Python
// half (layoutsim/__init__.py) parses it: Python gets exactly the JSON the command
// line writes, with no second serialiser to keep in step. Scenarios arrive as
// (kind, yaml, name): kind "builtin", "file" (name = path) or "text".
// The GIL is released while simulating, so other Python threads keep running.
#include <string>
#include <utility>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "tools/api/layoutsim.hpp"

namespace py = pybind11;

#ifndef LAYOUTSIM_VERSION
#define LAYOUTSIM_VERSION "unknown"
#endif
// The shipped validation set validate() reads when given no runs files.
#ifndef LAYOUTSIM_VALIDATION_DIR
#define LAYOUTSIM_VALIDATION_DIR "validation"
#endif

namespace {

using ls::api::Overrides;
using ls::api::ScenarioSource;

ScenarioSource source_of(const std::string& kind, std::string yaml, std::string name) {
  if (kind == "builtin") return ScenarioSource::builtin();
  if (kind == "file") return ScenarioSource::file(std::move(name));
  if (kind == "text") return ScenarioSource::text(std::move(yaml), std::move(name));
  throw py::value_error("layoutsim._core: scenario kind must be builtin, file or text, not " + kind);
}

std::string run(const std::string& kind, std::string yaml, std::string name, const Overrides& overrides, bool split) {
  const ScenarioSource source = source_of(kind, std::move(yaml), std::move(name));
  py::gil_scoped_release unlocked;
  ls::api::SimOptions options;
  options.step_split = split;
  return ls::api::summary_json_text(ls::api::simulate(source.resolve(overrides), options));
}

std::string trace(const std::string& kind, std::string yaml, std::string name, const Overrides& overrides,
                  const std::vector<std::string>& devices, const std::string& file) {
  const ScenarioSource source = source_of(kind, std::move(yaml), std::move(name));
  py::gil_scoped_release unlocked;
  ls::api::SimOptions options;
  options.trace = true;
  options.trace_devices = devices;
  const ls::api::Result result = ls::api::simulate(source.resolve(overrides), options);
  if (file.empty()) return ls::api::trace_json_text(result);
  ls::api::write_trace(result, file);
  return file;
}

std::pair<std::string, std::string> check(const std::string& kind, std::string yaml, std::string name,
                                          const Overrides& overrides) {
  const ScenarioSource source = source_of(kind, std::move(yaml), std::move(name));
  py::gil_scoped_release unlocked;
  const ls::api::ResolvedScenario scenario = source.resolve(overrides);
  const ls::api::LayoutReport plan = ls::api::check(scenario);
  return {ls::api::check_json(scenario, plan).dump(), ls::api::check_text(scenario, plan)};
}

std::string sweep(const std::string& kind, std::string yaml, std::string name, const std::vector<std::string>& keys,
                  const std::vector<std::vector<std::string>>& values, const Overrides& overrides, int jobs) {
  const ScenarioSource source = source_of(kind, std::move(yaml), std::move(name));
  std::vector<ls::api::SweepAxis> sweep_axes;
  for (std::size_t i = 0; i < keys.size() && i < values.size(); ++i) sweep_axes.push_back({keys[i], values[i]});
  py::gil_scoped_release unlocked;
  return ls::api::sweep_rows(ls::api::sweep(source, sweep_axes, jobs, overrides)).dump();
}

std::string search(const std::string& kind, std::string yaml, std::string name, const Overrides& overrides,
                   const std::vector<std::string>& vary, const std::vector<std::string>& fix, const std::string& objective,
                   int simulate_top, int jobs) {
  const ScenarioSource source = source_of(kind, std::move(yaml), std::move(name));
  py::gil_scoped_release unlocked;
  const ls::tools::SearchBase start = source.resolve_search_base(ls::api::override_sets(overrides));
  const ls::api::ResolvedScenario& base = start.scenario;
  ls::api::SearchOptions options = ls::api::search_options(base, vary, fix, objective);
  options.global_batch = start.global_batch;
  options.simulate_top = simulate_top;
  options.jobs = jobs;
  return ls::api::search_json(ls::api::search(base, options)).dump();
}

std::string validate(const std::vector<std::string>& files, int jobs, const std::string& leave_out) {
  py::gil_scoped_release unlocked;
  const std::vector<std::string> paths = files.empty() ? ls::api::default_runs_files(LAYOUTSIM_VALIDATION_DIR) : files;
  const auto rows = ls::api::read_runs(paths);
  if (rows.empty()) throw ls::UserError("validate: the runs files hold no runs");
  return ls::api::validation_json(ls::api::validate(rows, jobs, leave_out)).dump();
}

std::string calibrate(const std::vector<std::string>& files, const std::string& fit, const std::string& gpu, int jobs,
                      int iterations, const std::string& leave_out) {
  py::gil_scoped_release unlocked;
  auto rows = ls::api::read_runs(files);
  if (!gpu.empty()) std::erase_if(rows, [&](const ls::api::RunRow& r) { return r.scenario.gpu.name != gpu; });
  if (rows.empty()) throw ls::UserError("calibrate: no runs" + (gpu.empty() ? std::string() : " on GPU " + gpu));
  const auto constants = ls::api::calibration_constants(fit);
  ls::tools::CalibrateOptions options;
  options.jobs = jobs;
  options.max_iterations = iterations;
  options.leave_out = leave_out;
  return ls::api::calibration_json(ls::api::calibrate(rows, constants, options)).dump();
}

std::string diff(const std::string& text_a, const std::string& name_a, const std::string& text_b, const std::string& name_b) {
  return ls::api::diff_json(
             ls::api::diff(ls::api::read_summary(text_a, name_a), name_a, ls::api::read_summary(text_b, name_b), name_b))
      .dump();
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "layoutsim's native module; use the `layoutsim` package, which wraps it.";
  m.attr("__version__") = LAYOUTSIM_VERSION;

  // Every user error (ls::UserError: an invalid scenario, an unreadable file, a bad
  // option) is a ScenarioError carrying the command's message, located where the loader
  // locates it (FILE:LINE:COL: error: ...); anything else is an InternalError, a bug.
  static py::exception<ls::UserError> scenario_error(m, "ScenarioError", PyExc_ValueError);
  static py::exception<ls::InternalError> internal_error(m, "InternalError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ls::UserError& e) {
      scenario_error(e.message().c_str());
    } catch (const py::error_already_set&) {
      throw;
    } catch (const py::builtin_exception&) {
      throw;
    } catch (const std::exception& e) {
      internal_error(e.what());
    }
  });

  m.def("run", &run, py::arg("kind"), py::arg("yaml"), py::arg("name"), py::arg("overrides"), py::arg("split") = false,
        "Simulates a scenario; returns the JSON summary text of `layoutsim run --json` (`--split` with split).");
  m.def("trace", &trace, py::arg("kind"), py::arg("yaml"), py::arg("name"), py::arg("overrides"), py::arg("devices"),
        py::arg("file"),
        "Simulates a scenario with a trace; returns the Chrome trace's JSON text, or writes it to `file` (gzip for .gz) "
        "and returns the path.");
  m.def("check", &check, py::arg("kind"), py::arg("yaml"), py::arg("name"), py::arg("overrides"),
        "Plans a scenario; returns (plan JSON text, `layoutsim check` text).");
  m.def("sweep", &sweep, py::arg("kind"), py::arg("yaml"), py::arg("name"), py::arg("keys"), py::arg("values"),
        py::arg("overrides"), py::arg("jobs"),
        "Runs the product of the axes; returns the rows' JSON text (one flat object per point).");
  m.def("search", &search, py::arg("kind"), py::arg("yaml"), py::arg("name"), py::arg("overrides"), py::arg("vary"),
        py::arg("fix"), py::arg("objective"), py::arg("simulate_top"), py::arg("jobs"),
        "Searches the layouts of a scenario's model and cluster; returns `layoutsim search --json`'s text.");
  m.def("validate", &validate, py::arg("files"), py::arg("jobs"), py::arg("leave_out"),
        "Simulates the runs files' published runs; returns `layoutsim validate --json`'s text.");
  m.def("calibrate", &calibrate, py::arg("files"), py::arg("fit"), py::arg("gpu"), py::arg("jobs"), py::arg("iterations"),
        py::arg("leave_out"), "Fits GPU constants to runs files; returns `layoutsim calibrate --json`'s text.");
  m.def("diff", &diff, py::arg("text_a"), py::arg("name_a"), py::arg("text_b"), py::arg("name_b"),
        "Compares two JSON summaries; returns `layoutsim diff --json`'s text.");
  m.def("default_scenario_yaml", [] { return std::string(ls::tools::default_scenario_yaml()); },
        "The built-in default scenario's YAML.");
}
