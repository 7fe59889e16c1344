// sim/time.hpp — the one time type of layoutsim.
//
// Time is a strong type over int64 picoseconds (as in htsim): integer time makes
// every run bit-for-bit deterministic and totally ordered. Rates and sizes are
// doubles; they are converted to Time exactly once, by from_seconds() (rounded to
// the nearest picosecond). int64 picoseconds span ±106 days, far beyond a real step;
// a scenario that leaves this range (absurd rates such as 1 b/s) must be an error,
// never a wrapped negative time, so every conversion and every arithmetic operation
// is checked and throws TimeRangeError (the command reports it as exit 1; workloads/
// simulate.cpp adds which scenario values to check).
#pragma once

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "sim/error.hpp"

namespace ls::sim {

/// A duration or instant outside int64 picoseconds (about ±106 days), or not finite.
struct TimeRangeError : UserError {
  using UserError::UserError;
};

/// The TimeRangeError of a conversion or an arithmetic operation of Time: it knows the
/// value, not what made it, so the layer that knows the inputs may say what to check.
struct UnattributedTimeRangeError : TimeRangeError {
  using TimeRangeError::TimeRangeError;
};

/// Largest representable time in seconds (2^63 ps = 9,223,372 s, about 106.75 days),
/// rounded down so that a conversion of any smaller double cannot overflow.
inline constexpr double kMaxTimeSeconds = 9.2e6;

[[noreturn]] inline void throw_time_range(double seconds) {
  throw UnattributedTimeRangeError(fmt::format(
      "a simulated time of {:.4g} s is outside the representable range (int64 picoseconds, about 106 days): the step "
      "would exceed it",
      seconds));
}

class Time {
public:
  constexpr Time() = default;
  static constexpr Time from_ps(std::int64_t ps) { return Time(ps); }
  /// Rounds to the nearest picosecond. Throws TimeRangeError unless finite and |s| < kMaxTimeSeconds.
  static Time from_seconds(double s) {
    if (!(std::fabs(s) < kMaxTimeSeconds)) throw_time_range(s);
    return Time(static_cast<std::int64_t>(std::llround(s * 1e12)));
  }
  /// Rounds up: a duration that must not end early (flow drain times).
  static Time from_seconds_ceil(double s) {
    if (!(std::fabs(s) < kMaxTimeSeconds)) throw_time_range(s);
    return Time(static_cast<std::int64_t>(std::ceil(s * 1e12)));
  }
  static constexpr Time zero() { return Time(0); }
  static constexpr Time max() { return Time(std::numeric_limits<std::int64_t>::max()); }

  constexpr std::int64_t ps() const { return ps_; }
  constexpr double seconds() const { return static_cast<double>(ps_) * 1e-12; }
  constexpr double us() const { return static_cast<double>(ps_) * 1e-6; }

  constexpr auto operator<=>(const Time&) const = default;
  constexpr Time operator+(Time o) const {
    std::int64_t v = 0;
    if (__builtin_add_overflow(ps_, o.ps_, &v)) throw_time_range(seconds() + o.seconds());
    return Time(v);
  }
  constexpr Time operator-(Time o) const {
    std::int64_t v = 0;
    if (__builtin_sub_overflow(ps_, o.ps_, &v)) throw_time_range(seconds() - o.seconds());
    return Time(v);
  }
  constexpr Time& operator+=(Time o) { return *this = *this + o; }
  constexpr Time& operator-=(Time o) { return *this = *this - o; }
  constexpr Time operator*(std::int64_t k) const {
    std::int64_t v = 0;
    if (__builtin_mul_overflow(ps_, k, &v)) throw_time_range(seconds() * static_cast<double>(k));
    return Time(v);
  }

private:
  constexpr explicit Time(std::int64_t ps) : ps_(ps) {}
  std::int64_t ps_ = 0;
};

// Unit helpers: `3_us`-style literals are avoided on purpose (they hide the double
// -> integer rounding); these functions round once, to the nearest picosecond.
constexpr Time ps(std::int64_t v) { return Time::from_ps(v); }
constexpr Time ns(std::int64_t v) { return Time::from_ps(v * 1000); }
constexpr Time us(std::int64_t v) { return Time::from_ps(v * 1000'000); }
constexpr Time ms(std::int64_t v) { return Time::from_ps(v * 1000'000'000); }
inline Time seconds(double v) { return Time::from_seconds(v); }

/// Exact decimal microseconds, e.g. "12.000345" for 12000345 ps: what Chrome traces
/// want in `ts`/`dur`, printed from the integer without going through a double.
inline std::string to_us_string(Time t) {
  std::int64_t v = t.ps();
  const bool neg = v < 0;
  if (neg) v = -v;
  return fmt::format("{}{}.{:06d}", neg ? "-" : "", v / 1000'000, v % 1000'000);
}

}  // namespace ls::sim

/// Formats with an adaptive unit: "812 ps", "3.2 ns", "14.05 us", "1.234 ms", "2.5 s".
template <>
struct fmt::formatter<ls::sim::Time> : fmt::formatter<std::string_view> {
  auto format(ls::sim::Time t, format_context& ctx) const {
    const double a = std::fabs(static_cast<double>(t.ps()));
    std::string s;
    if (a < 1e3) s = fmt::format("{} ps", t.ps());
    else if (a < 1e6) s = fmt::format("{:.4g} ns", t.ps() * 1e-3);
    else if (a < 1e9) s = fmt::format("{:.4g} us", t.ps() * 1e-6);
    else if (a < 1e12) s = fmt::format("{:.4g} ms", t.ps() * 1e-9);
    else s = fmt::format("{:.4g} s", t.ps() * 1e-12);
    return fmt::formatter<std::string_view>::format(s, ctx);
  }
};
