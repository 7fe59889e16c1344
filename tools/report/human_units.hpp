// tools/report/human_units.hpp — numbers for people: units are SI and chosen per value
// ("1.234 s", "19.69 GB", "312.0 TFLOP/s"); every formatter prints 4 significant
// digits. Pure functions.
#pragma once

#include <string>

namespace ls::tools {

/// 0.0123 → "12.30 ms"; 1.5 → "1.500 s"; 3e-7 → "300.0 ns". Non-finite → "n/a".
std::string human_seconds(double s);
/// Decimal (SI) units: 19.69e9 → "19.69 GB"; 512 → "512 B".
std::string human_bytes(double bytes);
/// 1234567 → "1.235 M"; 999 → "999.0". For counts and rates (tokens/s).
std::string human_count(double v);
/// FLOP/s with SI prefix: 312e12 → "312.0 TFLOP/s".
std::string human_flops(double flop_per_s);
/// 0.1234 → "12.34%".
std::string percent(double fraction);

}  // namespace ls::tools
