// tools/scenario/units.hpp — quantities with units, as scenario files write them ("300 GB/s").
//
// Accepted (README.md "Scenario reference"; case matters because b/B is bits/bytes):
//   sizes       B  KB MB GB TB (SI: powers of 1e3; "kB" also accepted)
//               KiB MiB GiB TiB (binary: powers of 1024)
//   bandwidth   b/s Kb/s Mb/s Gb/s Tb/s  (bits per second, divided by 8)
//               B/s KB/s MB/s GB/s TB/s  (bytes per second)
//   time        ps ns us (or µs) ms s
//   compute     FLOP/s KFLOP/s MFLOP/s GFLOP/s TFLOP/s PFLOP/s (also "FLOPS" spellings)
// The number may be written with or without a space before the unit, in any
// std::from_chars floating form ("2", "2.5", "1e3"). A bare number is an error:
// the whole point of units in scenario files is that nobody has to guess them.
//
// Every parser is total: any input either yields a finite, non-negative value or
// throws UnitError (never UB, never NaN/inf). Results are SI: bytes, bytes/s,
// FLOP/s, sim::Time (integer picoseconds, rounded to nearest once).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sim/time.hpp"
#include "workloads/spec/did_you_mean.hpp"

namespace ls::tools {

/// A malformed quantity. what() is the expectation ("expected a quantity with a
/// unit, like \"300 GB/s\""), hint() an optional suggestion ("did you mean 'GB/s'?"),
/// both without location: the scenario loader adds file:line:col and the key path.
class UnitError : public std::invalid_argument {
public:
  explicit UnitError(const std::string& what, std::string hint = {})
      : std::invalid_argument(what), hint_(std::move(hint)) {}
  const std::string& hint() const { return hint_; }
private:
  std::string hint_;
};

/// "80 GiB" → 85899345920.0 bytes. Throws UnitError.
double parse_bytes(std::string_view text);
/// "400 Gb/s" → 50e9 bytes/s; "300 GB/s" → 300e9 bytes/s. Throws UnitError.
double parse_bandwidth_Bps(std::string_view text);
/// "1.5 us" → 1'500'000 ps. Range: below ~9.2e6 s (int64 picoseconds). Throws UnitError.
sim::Time parse_time(std::string_view text);
/// "312 TFLOP/s" → 312e12 FLOP/s. Throws UnitError.
double parse_flops(std::string_view text);

/// A count with an optional SI multiplier, as token budgets are written: "15T" →
/// 15e12, "300B" or "300G" → 300e9, "2.5M", "800K" (also "k"), or a bare number; a
/// space before the suffix is allowed. B means billion here (never bytes). Throws UnitError.
double parse_count(std::string_view text);

/// A price with its currency: "2.5 USD" → {2.5, "USD"}. The currency is a three-letter
/// ISO 4217 code in capitals (USD, EUR, ...); a bare number is an error, since a price
/// without a currency is ambiguous. Throws UnitError.
struct Price {
  double amount = 0;
  std::string currency;
};
Price parse_price(std::string_view text);

/// The one nearest-name helper (workloads/spec/did_you_mean.hpp), used here for unit hints.
using wl::closest_match;
using wl::edit_distance;

}  // namespace ls::tools
