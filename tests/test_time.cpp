// tests/test_time.cpp — sim::Time: integer picoseconds, unit helpers, the single
// double -> Time rounding, exact decimal microseconds, fmt formatting.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "sim/time.hpp"

using namespace ls::sim;

TEST_CASE("unit helpers are exact integer multiples of 1 ps") {
  CHECK(ps(7).ps() == 7);
  CHECK(ns(3).ps() == 3'000);
  CHECK(us(5).ps() == 5'000'000);
  CHECK(ms(2).ps() == 2'000'000'000);
  CHECK(seconds(1.5).ps() == 1'500'000'000'000);
  CHECK(Time().ps() == 0);
  CHECK(Time::zero().ps() == 0);
  CHECK(Time::max().ps() == INT64_MAX);
  // ms(10'000) = 10 s = 1e13 ps: well inside int64 (~9.2e18).
  CHECK(ms(10'000).ps() == 10'000'000'000'000);
}

TEST_CASE("arithmetic and total order") {
  CHECK(us(1) + ns(500) == ns(1500));
  CHECK(us(1) - ns(250) == ps(750'000));
  CHECK(ns(3) * 4 == ns(12));
  Time t = us(1);
  t += ns(1);
  CHECK(t == ps(1'001'000));
  t -= ps(1'001'000);
  CHECK(t == Time::zero());
  CHECK(ps(1) < ps(2));
  CHECK(ns(1) > ps(999));
  CHECK(Time::max() > ms(1'000'000));
}

TEST_CASE("from_seconds rounds to the nearest picosecond, once") {
  // 1.4 ps -> 1, 1.6 ps -> 2, -1.6 ps -> -2 (llround: nearest, halves away from 0).
  CHECK(Time::from_seconds(1.4e-12).ps() == 1);
  CHECK(Time::from_seconds(1.6e-12).ps() == 2);
  CHECK(Time::from_seconds(-1.6e-12).ps() == -2);
  CHECK(Time::from_seconds(0.0).ps() == 0);
  // 1e-3 s is not exact in binary but its product with 1e12 rounds to 1e9 exactly.
  CHECK(Time::from_seconds(1e-3) == ms(1));
  // 12.000345 us: the nearest picosecond, whatever the binary representation.
  CHECK(Time::from_seconds(12.000345e-6).ps() == 12'000'345);
  // 1000 s = 1e15 ps: the product is an exactly representable integer.
  CHECK(Time::from_seconds(1000.0).ps() == 1'000'000'000'000'000);
}

TEST_CASE("from_seconds_ceil never ends early") {
  CHECK(Time::from_seconds_ceil(1.1e-12).ps() == 2);
  CHECK(Time::from_seconds_ceil(1e-12).ps() == 1);
  CHECK(Time::from_seconds_ceil(0.0).ps() == 0);
  CHECK(Time::from_seconds_ceil(1e-3) == ms(1));
  for (double s : {3.3e-9, 7.77e-6, 0.123456789}) CHECK(Time::from_seconds_ceil(s) >= Time::from_seconds(s));
}

TEST_CASE("conversions back to doubles") {
  CHECK(ms(3).seconds() == doctest::Approx(3e-3).epsilon(1e-15));
  CHECK(ns(2500).us() == doctest::Approx(2.5).epsilon(1e-15));
  CHECK(Time::from_ps(1).seconds() == 1e-12);
}

TEST_CASE("to_us_string prints exact decimal microseconds") {
  CHECK(to_us_string(ps(12'000'345)) == "12.000345");
  CHECK(to_us_string(Time::zero()) == "0.000000");
  CHECK(to_us_string(ps(345)) == "0.000345");
  CHECK(to_us_string(ps(1)) == "0.000001");
  CHECK(to_us_string(us(42)) == "42.000000");
  CHECK(to_us_string(ps(-1'500'000)) == "-1.500000");
  // 1e15 + 7 ps: far beyond double's 15.95 significant digits, still exact.
  CHECK(to_us_string(ps(1'000'000'000'000'007)) == "1000000000.000007");
}

TEST_CASE("fmt formatting uses an adaptive unit") {
  CHECK(fmt::format("{}", ps(812)) == "812 ps");
  CHECK(fmt::format("{}", ps(3'200)) == "3.2 ns");
  CHECK(fmt::format("{}", ps(14'050'000)) == "14.05 us");
  CHECK(fmt::format("{}", ps(1'234'000'000)) == "1.234 ms");
  CHECK(fmt::format("{}", ps(2'500'000'000'000)) == "2.5 s");
  CHECK(fmt::format("{}", ps(-812)) == "-812 ps");
  CHECK(fmt::format("{}", us(-3)) == "-3 us");
  // Width/alignment come from the string_view formatter.
  CHECK(fmt::format("[{:>8}]", ps(5)) == "[    5 ps]");
}
