// workloads/cost/low_precision.cpp — see low_precision.hpp.
#include "workloads/cost/low_precision.hpp"

#include <array>
#include <utility>

namespace ls::wl {

namespace {
constexpr std::array<std::pair<ComputePrecision, std::string_view>, 5> kNames{{
    {ComputePrecision::bf16, "bf16"},
    {ComputePrecision::fp16, "fp16"},
    {ComputePrecision::fp8, "fp8"},
    {ComputePrecision::mxfp8, "mxfp8"},
    {ComputePrecision::fp8_blockwise, "fp8-blockwise"},
}};
}  // namespace

double quantize_bytes_per_element(ComputePrecision c) {
  switch (c) {
    case ComputePrecision::fp8: return 2.0 + 2.0 + 2 * 1.0;              // amax, cast + transpose
    case ComputePrecision::mxfp8: return 2.0 + 2 * (1.0 + 1.0 / 32.0);  // one quantize, two copies + scales
    case ComputePrecision::fp8_blockwise: return 2.0 + 2 * (1.0 + 4.0 / 128.0);  // the same, fp32 scale per 128
    case ComputePrecision::bf16:
    case ComputePrecision::fp16: return 0;
  }
  return 0;
}

double fp8_saved_bytes_per_element(ComputePrecision c) {
  switch (c) {
    case ComputePrecision::fp8: return 1.0;                // one 1-byte copy, one scale per tensor
    case ComputePrecision::mxfp8: return 1.0 + 1.0 / 32.0;  // the column-wise copy and its E8M0 scales
    case ComputePrecision::fp8_blockwise: return 1.0 + 4.0 / 128.0;  // the column-wise copy and its fp32 scales
    case ComputePrecision::bf16:
    case ComputePrecision::fp16: return 0;
  }
  return 0;
}

std::string_view compute_precision_name(ComputePrecision c) {
  for (const auto& [v, n] : kNames)
    if (v == c) return n;
  return "bf16";
}

std::optional<ComputePrecision> parse_compute_precision(std::string_view name) {
  for (const auto& [v, n] : kNames)
    if (n == name) return v;
  return std::nullopt;
}

}  // namespace ls::wl
