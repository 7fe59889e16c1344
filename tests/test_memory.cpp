// tests/test_memory.cpp — ZeRO state sharding and Korthikanti activation memory.
#include <doctest/doctest.h>

#include <stdexcept>
#include <tuple>

#include "workloads/model/memory.hpp"

using namespace ls::wl;

namespace {
const PrecisionSpec k18{2, 4, 4, 8, 2};  // bf16 w, fp32 grad, fp32 master, 2×fp32 Adam
const PrecisionSpec k16{2, 2, 4, 8, 2};  // bf16 w and grad
}  // namespace

TEST_CASE("seed example: full sharding gives bytes·N/D whatever the layout") {
  // N = 70e9 parameters, 18 B/param, 64 GPUs: 18·70e9/64 = 19.6875e9 B ≈ 19.7 GB per
  // device, for t8·p4·d2 and t8·p2·d4 alike (params on device N/(t·p), ZeRO-3 over d).
  const double N = 70e9;
  for (auto [t, p, d] : {std::tuple{8, 4, 2}, std::tuple{8, 2, 4}}) {
    const StateBytes s = state_bytes(N / (t * p), k18, 3, d);
    CHECK(s.total() == doctest::Approx(19.6875e9).epsilon(1e-12));
  }
  // 16 B/param on 512 GPUs (dp 8, tp 8, pp 8): 16·70e9/512 = 2.1875e9 ≈ 2.2 GB.
  CHECK(state_bytes(N / 64, k16, 3, 8).total() == doctest::Approx(2.1875e9).epsilon(1e-12));
}

TEST_CASE("ZeRO stages shard master+optimizer, then gradients, then weights") {
  // P = 1e9 params on the device, dp = 4, 18 B/param.
  const double P = 1e9;
  const StateBytes z0 = state_bytes(P, k18, 0, 4);
  CHECK(z0.weights == 2e9);
  CHECK(z0.gradients == 4e9);
  CHECK(z0.master == 4e9);
  CHECK(z0.optimizer == 8e9);
  CHECK(z0.total() == 18e9);
  // ZeRO-1: 2 + 4 + (4 + 8)/4 = 9 B/param.
  CHECK(state_bytes(P, k18, 1, 4).total() == doctest::Approx(9e9));
  // ZeRO-2: 2 + (4 + 4 + 8)/4 = 6 B/param.
  CHECK(state_bytes(P, k18, 2, 4).total() == doctest::Approx(6e9));
  // ZeRO-3: 18/4 = 4.5 B/param.
  CHECK(state_bytes(P, k18, 3, 4).total() == doctest::Approx(4.5e9));
  // dp = 1: sharding changes nothing.
  CHECK(state_bytes(P, k18, 3, 1).total() == doctest::Approx(18e9));
  CHECK_THROWS_AS(state_bytes(P, k18, 4, 4), std::invalid_argument);
  CHECK_THROWS_AS(state_bytes(P, k18, 1, 0), std::invalid_argument);
}

TEST_CASE("Korthikanti activation formulas for a small shape") {
  // s = 1024, h = 1024, a = 16, b = 2, t = 4: sbh = 1024·2·1024 = 2,097,152;
  // 5as/h = 5·16·1024/1024 = 80.
  ModelSpec m;
  m.hidden = 1024;
  m.heads = 16;
  m.seq_len = 1024;
  const double sbh = 1024.0 * 2 * 1024;
  // No TP: sbh(34 + 80) = 114·sbh.
  CHECK(activation_bytes_per_layer(m, 2, 1, false, Recompute::none) == doctest::Approx(114 * sbh));
  CHECK(activation_bytes_per_layer(m, 2, 1, true, Recompute::none) == doctest::Approx(114 * sbh));
  // TP 4 without SP: sbh(10 + 24/4 + 80/4) = 36·sbh.
  CHECK(activation_bytes_per_layer(m, 2, 4, false, Recompute::none) == doctest::Approx(36 * sbh));
  // TP 4 with SP: 114·sbh/4 = 28.5·sbh.
  CHECK(activation_bytes_per_layer(m, 2, 4, true, Recompute::none) == doctest::Approx(28.5 * sbh));
  // Selective with SP: 34·sbh/4; without SP: sbh(10 + 6) = 16·sbh.
  CHECK(activation_bytes_per_layer(m, 2, 4, true, Recompute::selective) == doctest::Approx(8.5 * sbh));
  CHECK(activation_bytes_per_layer(m, 2, 4, false, Recompute::selective) == doctest::Approx(16 * sbh));
  // Full: 2·sbh (÷ t with SP).
  CHECK(activation_bytes_per_layer(m, 2, 4, false, Recompute::full) == doctest::Approx(2 * sbh));
  CHECK(activation_bytes_per_layer(m, 2, 4, true, Recompute::full) == doctest::Approx(0.5 * sbh));
  // Every second matmul: the input 2sbh (÷ t with SP) + q, v, attention output and the
  // 4h-wide up projection per TP rank, 14sbh/t: 2 + 3.5 and 0.5 + 3.5.
  CHECK(activation_bytes_per_layer(m, 2, 4, false, Recompute::every_second_matmul) == doctest::Approx(5.5 * sbh));
  CHECK(activation_bytes_per_layer(m, 2, 4, true, Recompute::every_second_matmul) == doctest::Approx(4 * sbh));
  // b multiplies everything.
  CHECK(activation_bytes_per_layer(m, 1, 4, true, Recompute::none) == doctest::Approx(14.25 * sbh));
  CHECK_THROWS_AS(activation_bytes_per_layer(m, 0, 4, true, Recompute::none), std::invalid_argument);
}
