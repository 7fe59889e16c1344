// tools/study/levenberg_marquardt.hpp — the bounded least-squares fit calibrate.cpp
// runs, on Eigen matrices (Eigen stays inside tools/study/: only this header, which the
// calibration and its test include, names it).
#pragma once

#include <functional>

#include <Eigen/Dense>

#include "tools/study/calibrate.hpp"

namespace ls::tools {

/// Bounded Levenberg–Marquardt on residuals(x) (x in SI units, one per constant).
/// Generic: knows nothing of GPUs. Returns the best x found; `jacobian` (if given)
/// receives the finite-difference Jacobian at that x (rows = residuals), `evaluations`
/// the number of residual evaluations.
struct LmResult {
  Eigen::VectorXd x;
  Eigen::VectorXd residuals;
  Eigen::MatrixXd jacobian;
  int iterations = 0;
  int evaluations = 0;
};
LmResult fit_bounded(const std::function<Eigen::VectorXd(const Eigen::VectorXd&)>& residuals, const Eigen::VectorXd& start,
                     const Eigen::VectorXd& lower, const Eigen::VectorXd& upper, const CalibrateOptions& opt);

/// Linearised leave-one-out (see above): per row, the predicted log residual of that
/// row after refitting without it. Size: residuals.size().
Eigen::VectorXd leave_one_out_residuals(const Eigen::MatrixXd& jacobian, const Eigen::VectorXd& residuals, const Eigen::VectorXd& x,
                                        const Eigen::VectorXd& lower, const Eigen::VectorXd& upper);

}  // namespace ls::tools
