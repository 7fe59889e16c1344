// workloads/analysis/scale_noise.hpp — the slowest of N GPUs: what per-GPU speed spread costs a
// synchronous step.
//
// GPUs of one type do not run at one speed: manufacturing spread and power management give
// each its own sustained clock under load (Sinha et al., "Not All GPUs Are Created Equal",
// SC22; the cited spread is in implementation_profile.cpp). A synchronous training step
// waits for its slowest GPU at every collective — a TP group for its slowest member, a
// pipeline for its slowest stage, the data-parallel reduction for its slowest replica — so
// the step's compute runs at the slowest of its N GPUs' speeds. With per-GPU speed
// 1/(1 + cv·Z), Z standard normal and independent per GPU, the expected slowdown is
// 1 + cv·E[max of N standard normals]: E = 0 for one GPU, 1/√π for two, ≈ 3.7 for 10^4
// (tests/test_scale_noise.cpp checks the order statistic against a seeded sample).
//
// Applied as one factor on every rank's compute (the slowest GPU is not known in advance,
// and a uniform factor keeps the symmetric fast path); what it costs is reported as
// `scale_noise_s`.
#pragma once

#include "workloads/build/result.hpp"

namespace ls::wl {

/// E[max of n independent standard normals]: ∫ x · n φ(x) Φ(x)^(n−1) dx, by Simpson's rule
/// on [−12, 12] with 4,800 intervals (error below 1e-9 for n ≤ 10^7). 0 for n ≤ 1. O(1).
double expected_max_standard_normal(long n);

/// The compute multiplier of a synchronous step on `devices` GPUs whose speeds spread with
/// coefficient of variation `cv`: 1 + cv · expected_max_standard_normal(devices).
double scale_noise_factor(double cv, long devices);

/// What the slowest of the GPUs added to the step: the compute on the step's critical path
/// ran `factor` times its nominal time, so (1 − 1/factor) of it is the noise's. Without a
/// critical path (past simulation.critical_path_ops), the busiest stage's compute stands in
/// for it, a lower bound. Call after the critical path and the per-stage compute are folded.
/// O(stages).
void fold_scale_noise(Result& res, double variability, double factor, bool have_critical_path);

}  // namespace ls::wl
