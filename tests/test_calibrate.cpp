// tests/test_calibrate.cpp — tools/study/calibrate.hpp and tools/scenario/gpu_profile_file.hpp: the bounded
// Levenberg–Marquardt fit on closed-form problems, the linearised leave-one-out
// against exact refits of a linear model, recovery of known GPU constants from
// synthetic measurements, and the profile file.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "tools/study/calibrate.hpp"
#include "tools/study/levenberg_marquardt.hpp"
#include "tools/scenario/gpu_profile_file.hpp"
#include "tools/scenario/scenario.hpp"
#include "workloads/cost/hardware.hpp"
#include "workloads/simulate.hpp"

using namespace ls;
using namespace ls::tools;

TEST_CASE("fit_bounded: recovers an exponential decay, and stops at a bound") {
  // y = a·exp(−b·t) at t = 0..9 with a = 3, b = 0.4, residuals in log space: linear in (log a, b).
  auto residuals_for = [](double a_true, double b_true) {
    return [=](const Eigen::VectorXd& x) {
      Eigen::VectorXd r(10);
      for (int t = 0; t < 10; ++t) r[t] = std::log(x[0] * std::exp(-x[1] * t)) - std::log(a_true * std::exp(-b_true * t));
      return r;
    };
  };
  Eigen::VectorXd start(2), lower(2), upper(2);
  start << 1, 1;
  lower << 0.1, 0;
  upper << 10, 2;
  const LmResult fit = fit_bounded(residuals_for(3, 0.4), start, lower, upper, {});
  CHECK(fit.x[0] == doctest::Approx(3).epsilon(1e-6));
  CHECK(fit.x[1] == doctest::Approx(0.4).epsilon(1e-6));
  // b = 3 lies above its bound 2: the fit ends on the bound, a stays inside.
  const LmResult pinned = fit_bounded(residuals_for(3, 3), start, lower, upper, {});
  CHECK(pinned.x[1] == doctest::Approx(2));
  CHECK(pinned.x[0] >= lower[0]);
  CHECK(pinned.x[0] <= upper[0]);
}

TEST_CASE("leave_one_out_residuals: equals exact refits for a linear model") {
  // r_i(x) = x0 + x1·t_i − y_i: linear, so one Gauss–Newton step is the exact refit.
  const int m = 7;
  Eigen::MatrixXd J(m, 2);
  Eigen::VectorXd y(m);
  for (int i = 0; i < m; ++i) {
    J(i, 0) = 1;
    J(i, 1) = i;
    y[i] = 0.5 + 0.3 * i + (i % 2 ? 0.05 : -0.04);
  }
  const Eigen::VectorXd x = J.colPivHouseholderQr().solve(y);  // the full least-squares fit
  const Eigen::VectorXd r = J * x - y;
  Eigen::VectorXd lower(2), upper(2);
  lower << -100, -100;
  upper << 100, 100;
  const Eigen::VectorXd loo = leave_one_out_residuals(J, r, x, lower, upper);
  for (int i = 0; i < m; ++i) {
    Eigen::MatrixXd Ji(m - 1, 2);
    Eigen::VectorXd yi(m - 1);
    for (int k = 0, row = 0; k < m; ++k) {
      if (k == i) continue;
      Ji.row(row) = J.row(k);
      yi[row++] = y[k];
    }
    const Eigen::VectorXd xi = Ji.colPivHouseholderQr().solve(yi);
    CHECK(loo[i] == doctest::Approx(J.row(i).dot(xi) - y[i]).epsilon(1e-9));
  }
}

namespace {

tools::CalibrateOptions two_jobs() {
  tools::CalibrateOptions o;
  o.jobs = 2;
  return o;
}

// Small single-node scenarios (milliseconds each) that pull three kernel constants
// apart: wide layers at b·s of 8192 and 16384 tokens (GEMM-bound: the GEMM fraction),
// long sequences (FlashAttention-bound), and tiny models at 256 tokens where the
// per-kernel launch overhead is a large share of the step.
std::vector<RunRow> synthetic_rows(const wl::GpuSpec& truth) {
  struct Shape { int hidden, layers, mbs, seq; };
  const Shape shapes[] = {{512, 2, 1, 256}, {1024, 4, 1, 512}, {2048, 4, 4, 2048}, {2048, 4, 8, 2048}, {256, 2, 1, 256}, {1024, 2, 2, 4096}, {512, 2, 1, 16384}};
  std::vector<RunRow> rows;
  for (const auto& s : shapes) {
    RunRow row;
    row.name = fmt::format("h{}-l{}-b{}-s{}", s.hidden, s.layers, s.mbs, s.seq);
    row.scenario = load_scenario_string(
        fmt::format("cluster: {{gpu: h100-sxm, nodes: 1, gpus_per_node: 2}}\n"
                    "model: {{layers: {}, hidden: {}, heads: 8, vocab: 8192, seq_len: {}}}\n"
                    "layout: {{dp: 2, microbatch_size: {}, microbatches: 2}}\n",
                    s.layers, s.hidden, s.seq, s.mbs),
        row.name);
    wl::Scenario measured = row.scenario;
    measured.gpu = truth;
    wl::SimOptions opt;
    opt.what_if = false;
    row.measured_step_s = wl::simulate(wl::resolve(measured), opt).step_time_s;
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

TEST_CASE("calibrate: recovers the constants the measurements were made with") {
  wl::GpuSpec truth = *wl::gpu_preset("h100-sxm");  // preset: GEMM 0.803, flash fwd 0.60, launch 3 us
  truth.compute.gemm_sustained_fraction = 0.6;
  truth.compute.flash_fwd_efficiency = 0.45;
  truth.compute.launch_overhead_s = 6e-6;
  const auto rows = synthetic_rows(truth);
  std::vector<TunableConstant> three;
  for (const char* name : {"gemm_sustained_fraction", "flash_fwd_efficiency", "launch_overhead"})
    three.push_back(*find_constant(gpu_constants(), name));
  const Calibration c = calibrate(rows, three, two_jobs());
  REQUIRE(c.fitted.size() == 3);
  // Simulated times are rounded to picoseconds and the kernel model has kinks (memory
  // bounds), so the optimum is recovered to a fraction of a percent, not to machine precision.
  CHECK(c.fitted[0].second == doctest::Approx(0.6).epsilon(5e-3));
  CHECK(c.fitted[1].second == doctest::Approx(0.45).epsilon(5e-3));
  CHECK(c.fitted[2].second == doctest::Approx(6e-6).epsilon(5e-3));
  CHECK(c.before.mean_abs_error > 0.05);  // the preset was measurably off
  CHECK(c.fit.max_abs_error < 1e-3);
  CHECK(c.loo_mean_abs_error < 1e-2);
  CHECK(c.gpu == "h100-sxm");

  // A subset of the constants: the others stay at the starting GPU's values.
  std::vector<TunableConstant> only_gemm{*find_constant(gpu_constants(), "gemm_sustained_fraction")};
  const Calibration one = calibrate(rows, only_gemm, two_jobs());
  REQUIRE(one.fitted.size() == 1);
  CHECK(one.fitted[0].second >= 0.45);
  CHECK(one.fitted[0].second < 0.803);
  // The default set: every continuous constant, no integer one.
  for (const auto& tc : default_fit_constants()) CHECK_FALSE(tc.integer);
  CHECK(find_constant(default_fit_constants(), "sm_count") == nullptr);
}

TEST_CASE("calibrate: refuses mixed GPUs and empty input") {
  wl::GpuSpec truth = *wl::gpu_preset("h100-sxm");
  auto rows = synthetic_rows(truth);
  CHECK_THROWS_AS(calibrate({}, gpu_constants(), {}), RunsFileError);
  rows[1].scenario.gpu = *wl::gpu_preset("a100-80gb");
  CHECK_THROWS_AS(calibrate(rows, gpu_constants(), {}), RunsFileError);
}

TEST_CASE("profile file: round trip, apply, and errors") {
  GpuProfile p{"h100-sxm", {{"gemm_sustained_fraction", 0.61}, {"attention_block", 64}, {"launch_overhead", 4.25e-6}}};
  const std::string text = profile_yaml(p, "fitted for a test\nsecond line");
  CHECK(text.rfind("# fitted for a test\n# second line\ngpu: h100-sxm\n", 0) == 0);
  CHECK(text.find("launch_overhead: 4.25 us") != std::string::npos);
  const GpuProfile back = parse_profile(text, "p.yaml");
  REQUIRE(back.constants.size() == 3);
  CHECK(back.constants[2].second == doctest::Approx(4.25e-6).epsilon(1e-12));

  const std::string path =
      (std::filesystem::temp_directory_path() / ("layoutsim_profile_" + std::to_string(::getpid()) + ".yaml")).string();
  std::ofstream(path) << text;
  wl::GpuSpec gpu = *wl::gpu_preset("h100-sxm");
  apply_profile(gpu, path);
  CHECK(gpu.compute.gemm_sustained_fraction == 0.61);
  CHECK(gpu.compute.attention_block == 64);
  CHECK(gpu.compute.launch_overhead_s == doctest::Approx(4.25e-6).epsilon(1e-12));
  CHECK(gpu.compute.name == "h100-sxm");  // the other constants stay the preset's
  std::filesystem::remove(path);
  wl::GpuSpec other = *wl::gpu_preset("a100-80gb");
  CHECK_THROWS_AS(apply_profile(other, p), ProfileError);

  auto error_of = [](const std::string& t) {
    try {
      parse_profile(t, "bad.yaml");
    } catch (const ProfileError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error_of("gpu: h100-sxm\nconstants: {hbm_fracton: 0.5}\n").find("bad.yaml:2:13: error: constants.hbm_fracton: unknown constant (did you mean 'hbm_fraction'?)") != std::string::npos);
  CHECK(error_of("gpu: h100-sxm\nconstants: {hbm_fraction: 1.5}\n").find("outside [0.75, 0.95]") != std::string::npos);
  CHECK(error_of("gpu: h100-sxm\nconstants: {launch_overhead: 5}\n").find("constants.launch_overhead:") != std::string::npos);
  CHECK(error_of("constants: {}\n").find("missing key gpu") != std::string::npos);
  CHECK(error_of("gpu: x\nextra: 1\n").find("unknown key 'extra'") != std::string::npos);
}
