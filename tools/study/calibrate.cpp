// tools/study/calibrate.cpp — bounded Levenberg–Marquardt, linearised leave-one-out and
// the GPU-constant calibration built on them.
#include "tools/study/calibrate.hpp"
#include "tools/study/levenberg_marquardt.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

namespace ls::tools {

namespace {

Eigen::VectorXd clamp(const Eigen::VectorXd& x, const Eigen::VectorXd& lower, const Eigen::VectorXd& upper) {
  return x.cwiseMax(lower).cwiseMin(upper);
}

// Forward differences of 1e-3 of each constant's range (backward at the upper bound):
// large enough to step over the picosecond rounding of simulated times, small
// against any range over which the step time bends.
Eigen::MatrixXd jacobian_at(const std::function<Eigen::VectorXd(const Eigen::VectorXd&)>& residuals, const Eigen::VectorXd& x,
                            const Eigen::VectorXd& r0, const Eigen::VectorXd& lower, const Eigen::VectorXd& upper, int& evaluations) {
  Eigen::MatrixXd jac(r0.size(), x.size());
  for (Eigen::Index k = 0; k < x.size(); ++k) {
    double h = 1e-3 * (upper[k] - lower[k]);
    if (x[k] + h > upper[k]) h = -h;
    Eigen::VectorXd xk = x;
    xk[k] += h;
    jac.col(k) = (residuals(xk) - r0) / h;
    ++evaluations;
  }
  return jac;
}

double abs_fraction(double log_residual) { return std::abs(std::expm1(log_residual)); }

}  // namespace

LmResult fit_bounded(const std::function<Eigen::VectorXd(const Eigen::VectorXd&)>& residuals, const Eigen::VectorXd& start,
                     const Eigen::VectorXd& lower, const Eigen::VectorXd& upper, const CalibrateOptions& opt) {
  LmResult out;
  out.x = clamp(start, lower, upper);
  out.residuals = residuals(out.x);
  out.evaluations = 1;
  double cost = out.residuals.squaredNorm();
  double lambda = 1e-2;
  const Eigen::Index n = out.x.size();
  for (int it = 0; it < opt.max_iterations; ++it) {
    out.jacobian = jacobian_at(residuals, out.x, out.residuals, lower, upper, out.evaluations);
    const Eigen::MatrixXd A = out.jacobian.transpose() * out.jacobian;
    const Eigen::VectorXd g = out.jacobian.transpose() * out.residuals;
    // Marquardt scaling by diag(A), floored so that a constant the runs do not
    // depend on (a zero column) gets a finite, tiny step instead of a singular system.
    const double floor = 1e-12 * std::max(1.0, A.diagonal().maxCoeff());
    bool accepted = false;
    double gain = 0;
    // Active set: a constant on a bound whose gradient points outward is held there
    // for this iteration, so the others are solved for as if it were fixed (a
    // clipped step would otherwise keep shrinking towards zero progress).
    std::vector<bool> held(static_cast<std::size_t>(n), false);
    for (Eigen::Index k = 0; k < n; ++k)
      held[static_cast<std::size_t>(k)] = (out.x[k] <= lower[k] && g[k] > 0) || (out.x[k] >= upper[k] && g[k] < 0);
    for (int tries = 0; tries < 12 && !accepted; ++tries) {
      Eigen::MatrixXd M = A;
      Eigen::VectorXd rhs = -g;
      for (Eigen::Index k = 0; k < n; ++k) {
        M(k, k) += lambda * std::max(A(k, k), floor);
        if (held[static_cast<std::size_t>(k)]) {
          M.row(k).setZero();
          M.col(k).setZero();
          M(k, k) = 1;
          rhs[k] = 0;
        }
      }
      const Eigen::VectorXd step = M.ldlt().solve(rhs);
      const Eigen::VectorXd xn = clamp(out.x + step, lower, upper);
      if ((xn - out.x).cwiseAbs().maxCoeff() == 0) break;  // pinned at the bounds
      const Eigen::VectorXd rn = residuals(xn);
      ++out.evaluations;
      const double cn = rn.allFinite() ? rn.squaredNorm() : INFINITY;
      if (cn < cost) {
        gain = (cost - cn) / std::max(cost, 1e-300);
        out.x = xn;
        out.residuals = rn;
        cost = cn;
        lambda = std::max(lambda / 3, 1e-9);
        accepted = true;
      } else {
        lambda *= 4;
      }
    }
    out.iterations = it + 1;
    if (!accepted || gain < opt.tolerance) break;
  }
  // The Jacobian reported is the one at the final point (leave-one-out uses it).
  out.jacobian = jacobian_at(residuals, out.x, out.residuals, lower, upper, out.evaluations);
  return out;
}

Eigen::VectorXd leave_one_out_residuals(const Eigen::MatrixXd& jacobian, const Eigen::VectorXd& residuals, const Eigen::VectorXd& x,
                                        const Eigen::VectorXd& lower, const Eigen::VectorXd& upper) {
  const Eigen::Index m = residuals.size(), n = x.size();
  Eigen::VectorXd loo(m);
  const Eigen::MatrixXd A = jacobian.transpose() * jacobian;
  const Eigen::VectorXd g = jacobian.transpose() * residuals;
  const double floor = 1e-12 * std::max(1.0, A.diagonal().maxCoeff());
  for (Eigen::Index i = 0; i < m; ++i) {
    // Drop row i from the normal equations (a rank-one downdate), one Gauss–Newton step.
    Eigen::MatrixXd Ai = A - jacobian.row(i).transpose() * jacobian.row(i);
    for (Eigen::Index k = 0; k < n; ++k) Ai(k, k) += floor;
    const Eigen::VectorXd gi = g - jacobian.row(i).transpose() * residuals[i];
    const Eigen::VectorXd step = clamp(x + Ai.ldlt().solve(-gi), lower, upper) - x;
    loo[i] = residuals[i] + jacobian.row(i).dot(step);
  }
  return loo;
}

std::string model_key(const wl::Scenario& s) {
  const auto& m = s.model;
  if (!m.name.empty()) return m.name;
  return fmt::format("L{}-h{}-a{}-f{}-v{}", m.layers, m.hidden, m.heads, m.ffn_hidden, m.vocab);
}

namespace {

/// One bounded fit of `constants` on `rows` from `start`; `last` receives the rows as
/// predicted at the last evaluation.
struct RowFit {
  LmResult lm;
  std::vector<RowOutcome> outcomes;
};

// evaluate_runs' per-row callback → CalibrateOptions::on_simulation.
RowProgress simulation_counter(const CalibrateOptions& opt) {
  if (!opt.on_simulation) return {};
  return [&opt](std::size_t, std::size_t, std::size_t) { opt.on_simulation(); };
}

RowFit fit_rows(const std::vector<RunRow>& rows, const std::vector<TunableConstant>& constants, const Eigen::VectorXd& start,
                const Eigen::VectorXd& lower, const Eigen::VectorXd& upper, const CalibrateOptions& opt) {
  const auto n = static_cast<Eigen::Index>(constants.size());
  RowFit out;
  auto evaluate = [&](const Eigen::VectorXd& x) {
    out.outcomes = evaluate_runs(
        rows, opt.jobs, [&](wl::Scenario& sc) { for (Eigen::Index k = 0; k < n; ++k) constants[static_cast<std::size_t>(k)].set(sc, x[k]); },
        simulation_counter(opt));
    Eigen::VectorXd r(static_cast<Eigen::Index>(out.outcomes.size()));
    for (std::size_t i = 0; i < out.outcomes.size(); ++i) {
      const auto& o = out.outcomes[i];
      if (!o.failure.empty())
        throw std::invalid_argument(fmt::format("calibrate: run '{}' failed to simulate: {}", o.name, o.failure));
      r[static_cast<Eigen::Index>(i)] = std::log(o.predicted_s / o.measured_s);
    }
    return r;
  };
  out.lm = fit_bounded(evaluate, start, lower, upper, opt);
  evaluate(out.lm.x);  // the rows as predicted with the fitted constants
  return out;
}

std::vector<RowOutcome> predict_rows(const std::vector<RunRow>& rows, const std::vector<TunableConstant>& constants,
                                     const Eigen::VectorXd& x, const CalibrateOptions& opt) {
  return evaluate_runs(
      rows, opt.jobs,
      [&](wl::Scenario& sc) {
        for (std::size_t k = 0; k < constants.size(); ++k) constants[k].set(sc, x[static_cast<Eigen::Index>(k)]);
      },
      simulation_counter(opt));
}

}  // namespace

Calibration calibrate(const std::vector<RunRow>& rows, const std::vector<TunableConstant>& constants, const CalibrateOptions& opt) {
  if (rows.empty()) throw RunsFileError("calibrate: no runs to fit");
  if (constants.empty()) throw RunsFileError("calibrate: no constants to fit");
  Calibration c;
  c.gpu = rows.front().scenario.gpu.name;
  for (const auto& row : rows)
    if (row.scenario.gpu.name != c.gpu)
      throw RunsFileError(fmt::format("calibrate: runs use GPU '{}' and '{}'; choose one with --gpu", c.gpu, row.scenario.gpu.name));

  const auto n = static_cast<Eigen::Index>(constants.size());
  Eigen::VectorXd start(n), lower(n), upper(n);
  for (Eigen::Index k = 0; k < n; ++k) {
    const auto& tc = constants[static_cast<std::size_t>(k)];
    start[k] = tc.get(rows.front().scenario);
    lower[k] = tc.lower;
    upper[k] = tc.upper;
    c.start.emplace_back(tc.name, start[k]);
  }

  c.before = error_stats(evaluate_runs(rows, opt.jobs, {}, simulation_counter(opt)));
  const RowFit full = fit_rows(rows, constants, start, lower, upper, opt);
  const LmResult& lm = full.lm;
  c.iterations = lm.iterations;
  c.evaluations = lm.evaluations + 2;
  for (Eigen::Index k = 0; k < n; ++k) c.fitted.emplace_back(constants[static_cast<std::size_t>(k)].name, lm.x[k]);
  c.rows = full.outcomes;
  c.fit = error_stats(c.rows);

  const Eigen::VectorXd loo = leave_one_out_residuals(lm.jacobian, lm.residuals, lm.x, lower, upper);
  for (Eigen::Index i = 0; i < loo.size(); ++i) {
    c.loo_mean_abs_error += abs_fraction(loo[i]) / static_cast<double>(loo.size());
    c.loo_max_abs_error = std::max(c.loo_max_abs_error, abs_fraction(loo[i]));
  }

  if (opt.leave_out.empty()) return c;
  c.leave_out = opt.leave_out;
  // Leave-one-model-out: a model's rows share its shape (FLOPs per token, kernel sizes),
  // so holding all of them out asks whether the constants transfer to a model the fit
  // never saw; leave-one-source-out asks the same of a source's whole setup (framework,
  // cluster, how it measured). Labels in first-appearance order; one alone cannot be held out.
  const auto label_of = [&](const RunRow& row) {
    if (opt.leave_out == "model") return model_key(row.scenario);
    const std::string label = group_label(row.groups, opt.leave_out);
    return label.empty() ? "(no " + opt.leave_out + ")" : label;
  };
  std::vector<std::string> models;
  for (const auto& row : rows)
    if (std::find(models.begin(), models.end(), label_of(row)) == models.end()) models.push_back(label_of(row));
  std::vector<RowOutcome> all_held;
  for (const auto& model : models) {
    if (models.size() < 2) break;
    std::vector<RunRow> train, held;
    for (const auto& row : rows) (label_of(row) == model ? held : train).push_back(row);
    const RowFit fit = fit_rows(train, constants, lm.x, lower, upper, opt);
    c.evaluations += fit.lm.evaluations + 1;
    std::vector<RowOutcome> predicted = predict_rows(held, constants, fit.lm.x, opt);
    ++c.evaluations;
    Calibration::HeldOut h{model, error_stats(predicted), {}};
    for (Eigen::Index k = 0; k < n; ++k) h.fitted.emplace_back(constants[static_cast<std::size_t>(k)].name, fit.lm.x[k]);
    c.held_out.push_back(std::move(h));
    all_held.insert(all_held.end(), predicted.begin(), predicted.end());
  }
  c.held_out_all = error_stats(all_held);
  return c;
}

std::string format_calibration(const Calibration& c, const std::vector<TunableConstant>& constants) {
  std::string o = fmt::format("calibrated {} on {} runs ({} iterations, {} evaluations of every run)\n\n", c.gpu, c.fit.count, c.iterations,
                              c.evaluations);
  o += fmt::format("{:<20}  {:>14}  {:>14}  {:>22}\n", "constant", "before", "fitted", "bounds");
  for (std::size_t k = 0; k < c.fitted.size(); ++k) {
    const TunableConstant& tc = constants[k];
    o += fmt::format("{:<20}  {:>14}  {:>14}  {:>22}\n", tc.name, format_constant(tc, c.start[k].second), format_constant(tc, c.fitted[k].second),
                     fmt::format("[{}, {}]", format_constant(tc, tc.lower), format_constant(tc, tc.upper)));
  }
  o += fmt::format("\n{:<26}  {:>10}  {:>10}  {:>11}\n", "step-time error", "mean |err|", "max |err|", "signed mean");
  o += fmt::format("{:<26}  {:>9.1f}%  {:>9.1f}%  {:>+10.1f}%\n", "before (preset constants)", 100 * c.before.mean_abs_error,
                   100 * c.before.max_abs_error, 100 * c.before.mean_error);
  o += fmt::format("{:<26}  {:>9.1f}%  {:>9.1f}%  {:>+10.1f}%\n", "fit", 100 * c.fit.mean_abs_error, 100 * c.fit.max_abs_error,
                   100 * c.fit.mean_error);
  o += fmt::format("{:<26}  {:>9.1f}%  {:>9.1f}%\n", "leave-one-out (linearised)", 100 * c.loo_mean_abs_error, 100 * c.loo_max_abs_error);
  if (c.held_out.empty()) return o;
  o += fmt::format("{:<26}  {:>9.1f}%  {:>9.1f}%  {:>+10.1f}%\n", "leave-one-" + c.leave_out + "-out", 100 * c.held_out_all.mean_abs_error,
                   100 * c.held_out_all.max_abs_error, 100 * c.held_out_all.mean_error);
  for (const auto& h : c.held_out)
    o += fmt::format("  {:<24}  {:>9.1f}%  {:>9.1f}%  {:>+10.1f}%  ({} runs)\n", h.model, 100 * h.stats.mean_abs_error,
                     100 * h.stats.max_abs_error, 100 * h.stats.mean_error, h.stats.count);
  return o;
}

nlohmann::ordered_json calibration_json(const Calibration& c) {
  using nlohmann::ordered_json;
  auto values = [](const std::vector<std::pair<std::string, double>>& v) {
    ordered_json j = ordered_json::object();
    for (const auto& [name, value] : v) j[name] = value;
    return j;
  };
  const auto stats = error_stats_json;
  ordered_json j;
  j["gpu"] = c.gpu;
  j["constants"] = values(c.fitted);
  j["start"] = values(c.start);
  j["fit"] = stats(c.fit);
  j["before"] = stats(c.before);
  j["leave_one_out"] = {{"mean_abs_error", c.loo_mean_abs_error}, {"max_abs_error", c.loo_max_abs_error}};
  if (!c.held_out.empty()) {
    ordered_json models = ordered_json::object();
    for (const auto& h : c.held_out) {
      ordered_json m = stats(h.stats);
      m["constants"] = values(h.fitted);
      models[h.model] = m;
    }
    if (c.leave_out == "model") j["leave_one_model_out"] = {{"all", stats(c.held_out_all)}, {"models", models}};
    else j["leave_out"] = {{"by", c.leave_out}, {"all", stats(c.held_out_all)}, {"groups", models}};
  }
  j["iterations"] = c.iterations;
  j["evaluations"] = c.evaluations;
  return j;
}

GpuProfile calibration_profile(const Calibration& c) {
  // A GPU profile carries GPU constants only; fitted implementation constants belong in
  // workloads/spec/implementation_profile.cpp (the report and the JSON show them).
  GpuProfile p{c.gpu, {}};
  for (const auto& [name, value] : c.fitted)
    if (find_constant(gpu_constants(), name)) p.constants.emplace_back(name, value);
  return p;
}

}  // namespace ls::tools
