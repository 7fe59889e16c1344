// tests/test_hardware.cpp — GPU presets and the roofline compute-time model.
#include <doctest/doctest.h>

#include <stdexcept>

#include "workloads/cost/hardware.hpp"

using namespace ls::wl;

TEST_CASE("presets carry the datasheet figures") {
  // Exact equality: the figures are written as decimal literals times powers of ten.
  const auto a40 = gpu_preset("a100-40gb");
  REQUIRE(a40);
  CHECK(a40->peak_flops == doctest::Approx(312e12));
  // Memory: NVML's total (MiB) where it was read, the datasheet's decimal figure elsewhere.
  constexpr double MiB = 1024.0 * 1024.0;
  CHECK(a40->memory_bytes == doctest::Approx(40960 * MiB));  // 42.9 GB: "40 GB" is 40 GiB
  CHECK(a40->hbm_bandwidth_Bps == doctest::Approx(1.555e12));
  CHECK(a40->nvlink_bandwidth_Bps == doctest::Approx(300e9));
  CHECK(a40->nic_bandwidth_Bps == doctest::Approx(25e9));  // 200 Gb/s HDR
  const auto a80 = gpu_preset("a100-80gb");
  REQUIRE(a80);
  CHECK(a80->memory_bytes == doctest::Approx(81920 * MiB));
  CHECK(a80->hbm_bandwidth_Bps == doctest::Approx(2.039e12));
  const auto h100 = gpu_preset("h100-sxm");
  REQUIRE(h100);
  CHECK(h100->peak_flops == doctest::Approx(989e12));
  CHECK(h100->memory_bytes == doctest::Approx(81559 * MiB));  // 85.5 GB
  CHECK(h100->hbm_bandwidth_Bps == doctest::Approx(3.35e12));
  CHECK(h100->nvlink_bandwidth_Bps == doctest::Approx(450e9));
  CHECK(h100->nic_bandwidth_Bps == doctest::Approx(50e9));  // 400 Gb/s NDR
  const auto h200 = gpu_preset("h200");
  REQUIRE(h200);
  CHECK(h200->memory_bytes == doctest::Approx(143771 * MiB));
  CHECK(h200->hbm_bandwidth_Bps == doctest::Approx(4.8e12));
  // The export part: H100 compute and memory, NVLink 400 GB/s total (200 per direction).
  const auto h800 = gpu_preset("h800");
  REQUIRE(h800);
  CHECK(h800->peak_flops == h100->peak_flops);
  CHECK(h800->hbm_bandwidth_Bps == h100->hbm_bandwidth_Bps);
  CHECK(h800->nvlink_bandwidth_Bps == doctest::Approx(200e9));
  CHECK(h800->nic_bandwidth_Bps == doctest::Approx(50e9));
  const auto b200 = gpu_preset("b200");
  REQUIRE(b200);
  CHECK(b200->peak_flops == doctest::Approx(2250e12));
  CHECK(b200->hbm_bandwidth_Bps == doctest::Approx(8e12));
  CHECK(b200->nvlink_bandwidth_Bps == doctest::Approx(900e9));
  CHECK_FALSE(gpu_preset("v100"));
  CHECK(gpu_preset_names() ==
        std::vector<std::string>{"a100-40gb", "a100-80gb", "h100-sxm", "h200", "h800", "b200", "b300", "gb200", "gb300"});
  for (const auto& n : gpu_preset_names()) {
    const auto g = gpu_preset(n);
    CHECK(g->matmul_efficiency > 0.5);
    CHECK(g->matmul_efficiency <= 1.0);
    CHECK(g->name == n);
  }
}

TEST_CASE("matmul efficiency falls linearly below saturation_rows") {
  GpuSpec g;
  g.matmul_efficiency = 0.8;
  g.saturation_rows = 1000;
  CHECK(matmul_efficiency(g, 4000) == doctest::Approx(0.8));
  CHECK(matmul_efficiency(g, 1000) == doctest::Approx(0.8));
  CHECK(matmul_efficiency(g, 250) == doctest::Approx(0.2));  // 0.8 · 250/1000
  CHECK(matmul_efficiency(g, 0) == doctest::Approx(0.8));    // not a matmul: no floor
  g.saturation_rows = 0;
  CHECK(matmul_efficiency(g, 10) == doctest::Approx(0.8));
}

TEST_CASE("compute_time is the roofline plus the kernel overhead") {
  GpuSpec g;
  g.peak_flops = 100e12;
  g.hbm_bandwidth_Bps = 1e12;
  g.matmul_efficiency = 0.5;
  g.saturation_rows = 1000;
  g.kernel_overhead = ls::sim::us(5);
  // Compute-bound: 1e12 FLOP / (100e12 · 0.5) = 20 ms; bytes 1e9 / 1e12 = 1 ms.
  CHECK(compute_time(g, 1e12, 1e9, 4096).ps() == 20'000'000'000 + 5'000'000);
  // Small matmul: efficiency 0.5 · 100/1000 = 0.05 -> 1e12 / 5e12 = 200 ms.
  CHECK(compute_time(g, 1e12, 1e9, 100).ps() == 200'000'000'000 + 5'000'000);
  // Memory-bound: 1e9 FLOP -> 20 µs; 1e9 B -> 1 ms.
  CHECK(compute_time(g, 1e9, 1e9, 4096).ps() == 1'000'000'000 + 5'000'000);
  // No work: no kernel.
  CHECK(compute_time(g, 0, 0, 0) == ls::sim::Time::zero());
  GpuSpec broken;
  broken.peak_flops = 0;
  CHECK_THROWS_AS(compute_time(broken, 1e9, 0, 100), std::invalid_argument);
}
