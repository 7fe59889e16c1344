// tests/test_units.cpp — tools/scenario/units.hpp: every unit, bits vs bytes, SI vs binary,
// and the error cases. Expected values are exact products of small integers and
// powers of ten/two, so comparisons use a relative tolerance of 1e-12 (a few ulps of
// the double product number·scale), not an engineering tolerance.
#include <doctest/doctest.h>

#include <string>

#include "tools/scenario/units.hpp"

using namespace ls::tools;

namespace {
bool close(double got, double want) { return std::abs(got - want) <= 1e-12 * std::abs(want); }

/// The UnitError message (what + hint) thrown by f, or "" if nothing was thrown.
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const UnitError& e) {
    return std::string(e.what()) + " | " + e.hint();
  }
  return "";
}
}  // namespace

TEST_CASE("sizes: SI prefixes are powers of 1000, binary ones powers of 1024") {
  CHECK(close(parse_bytes("1 B"), 1));
  CHECK(close(parse_bytes("3 KB"), 3e3));
  CHECK(close(parse_bytes("3 kB"), 3e3));
  CHECK(close(parse_bytes("2 MB"), 2e6));
  CHECK(close(parse_bytes("80 GB"), 80e9));
  CHECK(close(parse_bytes("1.5 TB"), 1.5e12));
  CHECK(close(parse_bytes("1 KiB"), 1024.0));
  CHECK(close(parse_bytes("1 MiB"), 1048576.0));
  CHECK(close(parse_bytes("80 GiB"), 80.0 * 1073741824.0));  // H100 80 GB HBM3 marketing vs GiB
  CHECK(close(parse_bytes("2 TiB"), 2.0 * 1099511627776.0));
  CHECK(close(parse_bytes("0 B"), 0));  // zero is a valid quantity; the loader decides if it is allowed
}

TEST_CASE("spelling: spaces optional, exponents, leading +") {
  CHECK(close(parse_bytes("80GiB"), parse_bytes("80 GiB")));
  CHECK(close(parse_bytes("  80   GiB  "), parse_bytes("80 GiB")));
  CHECK(close(parse_bytes("1e3 MB"), 1e9));
  CHECK(close(parse_bytes("+4 KB"), 4e3));
}

TEST_CASE("bandwidth: b/s are bits (divided by 8), B/s are bytes") {
  CHECK(close(parse_bandwidth_Bps("8 b/s"), 1));
  CHECK(close(parse_bandwidth_Bps("8 Kb/s"), 1e3));
  CHECK(close(parse_bandwidth_Bps("8 kb/s"), 1e3));
  CHECK(close(parse_bandwidth_Bps("800 Mb/s"), 100e6));
  CHECK(close(parse_bandwidth_Bps("400 Gb/s"), 50e9));  // one NDR InfiniBand port
  CHECK(close(parse_bandwidth_Bps("1.6 Tb/s"), 200e9));
  CHECK(close(parse_bandwidth_Bps("1 B/s"), 1));
  CHECK(close(parse_bandwidth_Bps("5 KB/s"), 5e3));
  CHECK(close(parse_bandwidth_Bps("5 kB/s"), 5e3));
  CHECK(close(parse_bandwidth_Bps("7 MB/s"), 7e6));
  CHECK(close(parse_bandwidth_Bps("300 GB/s"), 300e9));
  CHECK(close(parse_bandwidth_Bps("3.35 TB/s"), 3.35e12));
  // The same digits differ by 8× between bits and bytes.
  CHECK(close(parse_bandwidth_Bps("100 GB/s") / parse_bandwidth_Bps("100 Gb/s"), 8));
}

TEST_CASE("time: ps ns us ms s, exact in integer picoseconds") {
  CHECK(parse_time("7 ps").ps() == 7);
  CHECK(parse_time("3 ns").ps() == 3'000);
  CHECK(parse_time("1.5 us").ps() == 1'500'000);
  CHECK(parse_time("2 \xC2\xB5s").ps() == 2'000'000);  // µs
  CHECK(parse_time("4 ms").ps() == 4'000'000'000);
  CHECK(parse_time("2 s").ps() == 2'000'000'000'000);
  CHECK(parse_time("0.4 ps").ps() == 0);  // rounds to the nearest picosecond
  CHECK(parse_time("0 s").ps() == 0);
}

TEST_CASE("compute rates") {
  CHECK(close(parse_flops("312 TFLOP/s"), 312e12));
  CHECK(close(parse_flops("1.2 PFLOP/s"), 1.2e15));
  CHECK(close(parse_flops("5 GFLOPS"), 5e9));
  CHECK(close(parse_flops("1 FLOP/s"), 1));
}

TEST_CASE("a bare number is an error that asks for a unit") {
  CHECK(error_of([] { parse_bytes("80"); }).find("expected a quantity with a unit") != std::string::npos);
  CHECK(error_of([] { parse_bandwidth_Bps("300"); }).find("like \"300 GB/s\"") != std::string::npos);
  CHECK(error_of([] { parse_time("3"); }).find("expected a quantity with a unit") != std::string::npos);
  CHECK(error_of([] { parse_flops("312"); }).find("expected a quantity with a unit") != std::string::npos);
}

TEST_CASE("bad strings throw UnitError with a useful message") {
  // Empty, not a number, negative, non-finite, too large.
  CHECK(error_of([] { parse_bytes(""); }).find("empty") != std::string::npos);
  CHECK(error_of([] { parse_bytes("lots GB"); }).find("does not start with a number") != std::string::npos);
  CHECK(error_of([] { parse_bytes("-1 GB"); }).find("negative") != std::string::npos);
  CHECK(error_of([] { parse_bytes("inf GB"); }).find("finite") != std::string::npos);
  CHECK(error_of([] { parse_bytes("nan GB"); }).find("finite") != std::string::npos);
  CHECK(error_of([] { parse_bytes("1e308 TB"); }).find("too large") != std::string::npos);
  CHECK(error_of([] { parse_bytes("1e999 B"); }).find("out of range") != std::string::npos);
  CHECK(error_of([] { parse_time("1e7 s"); }).find("too long") != std::string::npos);
  // A unit of the wrong kind names both kinds.
  CHECK(error_of([] { parse_bandwidth_Bps("300 GB"); }).find("is a size, expected a bandwidth") != std::string::npos);
  CHECK(error_of([] { parse_bytes("300 GB/s"); }).find("is a bandwidth, expected a size") != std::string::npos);
  CHECK(error_of([] { parse_time("3 GB"); }).find("is a size, expected a time") != std::string::npos);
  // A case slip is ambiguous between bits and bytes: both are offered.
  const std::string gbs = error_of([] { parse_bandwidth_Bps("100 gb/s"); });
  CHECK(gbs.find("unknown unit 'gb/s'") != std::string::npos);
  CHECK(gbs.find("'Gb/s'") != std::string::npos);
  CHECK(gbs.find("'GB/s'") != std::string::npos);
  // A near miss gets a did-you-mean.
  CHECK(error_of([] { parse_bytes("80 GiBB"); }).find("did you mean 'GiB'?") != std::string::npos);
  CHECK(error_of([] { parse_time("3 usec"); }).find("unknown unit 'usec'") != std::string::npos);
  CHECK(error_of([] { parse_bytes("80 GiB extra"); }).find("unknown unit") != std::string::npos);
  CHECK(error_of([] { parse_bytes("0x10 GB"); }).find("unknown unit") != std::string::npos);
  CHECK_THROWS_AS(parse_flops("312 TB/s"), UnitError);
}

TEST_CASE("edit distance and closest match") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("tp", "tpp") == 1);
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(closest_match("tpp", {"dp", "tp", "pp"}) == "tp");
  CHECK(closest_match("schedule", {"dp", "tp"}).empty());
  CHECK(closest_match("microbatchs", {"microbatches", "microbatch_size"}) == "microbatches");
}
