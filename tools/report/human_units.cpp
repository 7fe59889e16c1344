// tools/report/human_units.cpp — see human_units.hpp.
#include "tools/report/human_units.hpp"

#include <cmath>

#include <fmt/format.h>

namespace ls::tools {

namespace {

// Four significant digits for v in [1, 1000): 1.234, 12.34, 123.4.
std::string sig4(double v) {
  const double a = std::fabs(v);
  const int decimals = a >= 100 ? 1 : a >= 10 ? 2 : 3;
  return fmt::format("{:.{}f}", v, decimals);
}

// Scales v by powers of `base` into [1, base) and appends the matching prefix.
std::string scaled(double v, const char* const* prefixes, int n, double base, const char* unit) {
  if (!std::isfinite(v)) return "n/a";
  int i = 0;
  double a = std::fabs(v);
  while (i + 1 < n && a >= base) {
    a /= base;
    v /= base;
    ++i;
  }
  return fmt::format("{} {}{}", sig4(v), prefixes[i], unit);
}

}  // namespace

std::string human_seconds(double s) {
  if (!std::isfinite(s)) return "n/a";
  const double a = std::fabs(s);
  if (a == 0) return "0 s";
  if (a >= 1) return fmt::format("{} s", sig4(s));
  if (a >= 1e-3) return fmt::format("{} ms", sig4(s * 1e3));
  if (a >= 1e-6) return fmt::format("{} us", sig4(s * 1e6));
  if (a >= 1e-9) return fmt::format("{} ns", sig4(s * 1e9));
  return fmt::format("{:.0f} ps", s * 1e12);
}

std::string human_bytes(double bytes) {
  static const char* const p[] = {"", "K", "M", "G", "T", "P", "E"};
  if (std::isfinite(bytes) && std::fabs(bytes) < 1000) return fmt::format("{:.0f} B", bytes);
  return scaled(bytes, p, 7, 1000, "B");
}

std::string human_count(double v) {
  static const char* const p[] = {"", "k", "M", "G", "T", "P"};
  std::string s = scaled(v, p, 6, 1000, "");
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

std::string human_flops(double flop_per_s) {
  static const char* const p[] = {"", "K", "M", "G", "T", "P", "E"};
  return scaled(flop_per_s, p, 7, 1000, "FLOP/s");
}

std::string percent(double fraction) {
  if (!std::isfinite(fraction)) return "n/a";
  return fmt::format("{:.2f}%", fraction * 100);
}

}  // namespace ls::tools
