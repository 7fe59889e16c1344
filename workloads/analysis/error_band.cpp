// workloads/analysis/error_band.cpp — see error_band.hpp.
#include "workloads/analysis/error_band.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "workloads/cost/hardware.hpp"
#include "workloads/model/layout.hpp"

namespace ls::tools::embedded {
extern const std::string_view error_bands_csv_text;  // generated from validation/error_bands.csv
}

namespace ls::wl {

namespace {

// The order statistics that bound a new draw with probability ≥ coverage (header).
std::pair<double, double> prediction_interval(std::vector<double> v, double coverage) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  // (1 − 0.8) is 0.19999…96 in binary: a hair of slack keeps ⌊30 · 0.1⌋ at 3.
  const auto k = std::max<std::size_t>(1, static_cast<std::size_t>(std::floor((static_cast<double>(n) + 1) * (1 - coverage) / 2 + 1e-9)));
  return {v[k - 1], v[n - k]};
}

}  // namespace

BandFeatures band_features(const Scenario& s) {
  BandFeatures f;
  f.preset = s.implementation.preset;
  f.gpu_family = gpu_family_name(gpu_family(s.gpu));
  const auto& L = s.layout;
  f.kind = L.pp > 1 ? "pipeline" : L.tp > 1 ? "tensor" : L.zero >= 3 ? "sharded" : "data";
  const int n = device_count(s.cluster);
  f.scale = n <= 64 ? "<=64" : n <= 512 ? "<=512" : n <= 2048 ? "<=2048" : ">2048";
  return f;
}

ErrorBand error_band(double predicted_s, const BandFeatures& f, const std::vector<BandResidual>& residuals) {
  // From the most specific group to all rows: drop the last feature each time.
  const std::vector<std::string> mine = {f.preset, f.gpu_family, f.kind, f.scale};
  for (int depth = 4; depth >= 0; --depth) {
    std::vector<double> errors;
    for (const auto& r : residuals) {
      const std::vector<std::string> theirs = {r.features.preset, r.features.gpu_family, r.features.kind, r.features.scale};
      if (std::equal(mine.begin(), mine.begin() + depth, theirs.begin())) errors.push_back(r.error);
    }
    if (static_cast<int>(errors.size()) < kMinBandRows) continue;
    const auto [lo_e, hi_e] = prediction_interval(errors, kBandCoverage);
    ErrorBand b;
    b.rows = static_cast<int>(errors.size());
    b.lo_s = predicted_s / (1 + hi_e);
    b.hi_s = predicted_s / (1 + lo_e);
    std::string group;
    for (int k = 0; k < depth; ++k) group += (k ? " · " : "") + mine[static_cast<std::size_t>(k)];
    b.group = depth == 0 ? "all held-out runs" : group;
    return b;
  }
  return {};
}

std::vector<BandResidual> parse_residuals(std::string_view csv) {
  std::vector<BandResidual> out;
  bool header = true;
  std::size_t line_no = 0;
  while (!csv.empty()) {
    const auto nl = csv.find('\n');
    std::string_view line = csv.substr(0, nl);
    csv = nl == std::string_view::npos ? std::string_view() : csv.substr(nl + 1);
    ++line_no;
    if (line.empty()) continue;
    std::vector<std::string> cells;
    for (std::size_t at = 0;;) {
      const auto comma = line.find(',', at);
      cells.emplace_back(line.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at));
      if (comma == std::string_view::npos) break;
      at = comma + 1;
    }
    if (cells.size() != 6) throw std::invalid_argument(fmt::format("error bands: line {}: expected 6 fields, got {}", line_no, cells.size()));
    if (header) {
      if (cells[0] != "id" || cells[1] != "error") throw std::invalid_argument("error bands: expected the header id,error,preset,gpu_family,kind,scale");
      header = false;
      continue;
    }
    BandResidual b;
    b.id = cells[0];
    std::size_t used = 0;
    b.error = std::stod(cells[1], &used);
    if (used != cells[1].size() || !std::isfinite(b.error) || b.error <= -1)
      throw std::invalid_argument(fmt::format("error bands: line {}: error '{}' out of range", line_no, cells[1]));
    b.features = {cells[2], cells[3], cells[4], cells[5]};
    out.push_back(std::move(b));
  }
  return out;
}

const std::vector<BandResidual>& shipped_residuals() {
  // Parsed once per process from the embedded table: immutable afterwards, so safe to
  // share between threads (a function-local static's initialisation is thread-safe).
  static const std::vector<BandResidual> table = parse_residuals(tools::embedded::error_bands_csv_text);
  return table;
}

}  // namespace ls::wl
