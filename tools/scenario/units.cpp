// tools/scenario/units.cpp — quantity parsing. Tables rather than clever code: the accepted
// spellings are exactly what the tables list, so the README can be checked against them.
#include "tools/scenario/units.hpp"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cmath>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ls::tools {
namespace {

struct UnitDef {
  std::string_view name;
  double scale;  // multiply the number by this to get the SI value (picoseconds for time)
};

// SI prefixes are powers of 1000 (IEC 80000-13); binary ones powers of 1024.
constexpr UnitDef kSizeUnits[] = {
    {"B", 1.0},
    {"KB", 1e3}, {"kB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
    {"KiB", 1024.0}, {"MiB", 1024.0 * 1024}, {"GiB", 1024.0 * 1024 * 1024},
    {"TiB", 1024.0 * 1024 * 1024 * 1024},
};

// Network rates are quoted in bits (400 Gb/s InfiniBand NDR), memory and NVLink in
// bytes (900 GB/s NVLink 4, H100 SXM datasheet): both must be accepted, and the b/B
// case is the only thing that tells them apart.
constexpr UnitDef kBandwidthUnits[] = {
    {"b/s", 1.0 / 8}, {"Kb/s", 1e3 / 8}, {"kb/s", 1e3 / 8}, {"Mb/s", 1e6 / 8},
    {"Gb/s", 1e9 / 8}, {"Tb/s", 1e12 / 8},
    {"B/s", 1.0}, {"KB/s", 1e3}, {"kB/s", 1e3}, {"MB/s", 1e6}, {"GB/s", 1e9}, {"TB/s", 1e12},
};

// Scale to picoseconds, the resolution of sim::Time.
constexpr UnitDef kTimeUnits[] = {
    {"ps", 1.0}, {"ns", 1e3}, {"us", 1e6}, {"\xC2\xB5s", 1e6} /* µs */, {"ms", 1e9}, {"s", 1e12},
};

constexpr UnitDef kFlopsUnits[] = {
    {"FLOP/s", 1.0},    {"KFLOP/s", 1e3},   {"MFLOP/s", 1e6},  {"GFLOP/s", 1e9},
    {"TFLOP/s", 1e12},  {"PFLOP/s", 1e15},  {"FLOPS", 1.0},    {"KFLOPS", 1e3},
    {"MFLOPS", 1e6},    {"GFLOPS", 1e9},    {"TFLOPS", 1e12},  {"PFLOPS", 1e15},
};

struct Kind {
  std::string_view what;     // "a size"
  std::string_view example;  // "80 GiB"
  const UnitDef* begin;
  const UnitDef* end;
};

const Kind kSize{"a size", "80 GiB", std::begin(kSizeUnits), std::end(kSizeUnits)};
const Kind kBandwidth{"a bandwidth", "300 GB/s", std::begin(kBandwidthUnits), std::end(kBandwidthUnits)};
const Kind kTime{"a time", "3 us", std::begin(kTimeUnits), std::end(kTimeUnits)};
const Kind kFlops{"a compute rate", "312 TFLOP/s", std::begin(kFlopsUnits), std::end(kFlopsUnits)};
const Kind* const kAllKinds[] = {&kSize, &kBandwidth, &kTime, &kFlops};

std::string_view trim(std::string_view s) {
  const auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && ws(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string> unit_names(const Kind& k) {
  std::vector<std::string> out;
  for (const UnitDef* u = k.begin; u != k.end; ++u) out.emplace_back(u->name);
  return out;
}

std::string expected(const Kind& k) {
  return fmt::format("expected a quantity with a unit, like \"{}\"", k.example);
}

/// Parses "<number><spaces><unit>" for one kind; returns number · scale.
double parse_quantity(std::string_view text, const Kind& kind) {
  const std::string_view t = trim(text);
  if (t.empty()) throw UnitError(expected(kind), "the value is empty");
  double number = 0;
  const char* first = t.data();
  const char* last = t.data() + t.size();
  // from_chars does not take a leading '+'; accept it for symmetry with '-'.
  if (*first == '+') ++first;
  const auto [ptr, ec] = std::from_chars(first, last, number, std::chars_format::general);
  if (ec == std::errc::result_out_of_range) throw UnitError(fmt::format("'{}' is out of range", t));
  if (ec != std::errc() || ptr == first)
    throw UnitError(expected(kind), fmt::format("'{}' does not start with a number", t));
  const std::string_view unit = trim(std::string_view(ptr, static_cast<std::size_t>(last - ptr)));
  if (!std::isfinite(number)) throw UnitError(fmt::format("'{}' is not a finite number", t));
  if (unit.empty()) throw UnitError(expected(kind), fmt::format("a bare number like {} has no unit", t));
  if (number < 0) throw UnitError(fmt::format("'{}' must not be negative", t));

  for (const UnitDef* u = kind.begin; u != kind.end; ++u) {
    if (u->name != unit) continue;
    const double v = number * u->scale;
    if (!std::isfinite(v)) throw UnitError(fmt::format("'{}' is too large", t));
    return v;
  }
  // A unit of another kind ("300 GB" for a bandwidth) is the likeliest slip: say so.
  for (const Kind* other : kAllKinds) {
    if (other == &kind) continue;
    for (const UnitDef* u = other->begin; u != other->end; ++u)
      if (u->name == unit)
        throw UnitError(fmt::format("'{}' is {}, expected {} like \"{}\"", t, other->what, kind.what, kind.example));
  }
  const auto names = unit_names(kind);
  // Case slips ("gb/s") are ambiguous between bits and bytes: offer every reading.
  std::vector<std::string> same_letters;
  const auto lower = [](std::string_view s) {
    std::string r(s);
    for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return r;
  };
  for (const auto& n : names)
    if (lower(n) == lower(unit)) same_letters.push_back("'" + n + "'");
  if (!same_letters.empty())
    throw UnitError(fmt::format("unknown unit '{}' in '{}'", unit, t),
                    fmt::format("did you mean {}? b = bits, B = bytes", fmt::join(same_letters, " or ")));
  const std::string near = closest_match(unit, names, 2);
  std::string hint = near.empty() ? fmt::format("units: {}", fmt::join(names, ", "))
                                  : fmt::format("did you mean '{}'?", near);
  throw UnitError(fmt::format("unknown unit '{}' in '{}'", unit, t), std::move(hint));
}

}  // namespace

double parse_bytes(std::string_view text) { return parse_quantity(text, kSize); }
double parse_bandwidth_Bps(std::string_view text) { return parse_quantity(text, kBandwidth); }
double parse_flops(std::string_view text) { return parse_quantity(text, kFlops); }

double parse_count(std::string_view text) {
  const std::string_view t = trim(text);
  const std::string_view example = "expected a count like \"15T\" (K, M, B or G, T: powers of 1000) or a number";
  if (t.empty()) throw UnitError(std::string(example), "the value is empty");
  double number = 0;
  const char* first = t.data();
  const char* last = t.data() + t.size();
  if (*first == '+') ++first;
  const auto [ptr, ec] = std::from_chars(first, last, number, std::chars_format::general);
  if (ec != std::errc() || ptr == first || !std::isfinite(number))
    throw UnitError(std::string(example), fmt::format("'{}' does not start with a number", t));
  if (number < 0) throw UnitError(fmt::format("'{}' must not be negative", t));
  const std::string_view suffix = trim(std::string_view(ptr, static_cast<std::size_t>(last - ptr)));
  // Token budgets are quoted as "15T tokens" (Llama 3) or "300B" (GPT-3): SI multipliers.
  constexpr UnitDef kCountSuffixes[] = {{"", 1.0}, {"K", 1e3}, {"k", 1e3}, {"M", 1e6}, {"B", 1e9}, {"G", 1e9}, {"T", 1e12}};
  for (const UnitDef& u : kCountSuffixes)
    if (u.name == suffix) {
      const double v = number * u.scale;
      if (!std::isfinite(v)) throw UnitError(fmt::format("'{}' is too large", t));
      return v;
    }
  throw UnitError(fmt::format("unknown multiplier '{}' in '{}'", suffix, t), std::string(example));
}

Price parse_price(std::string_view text) {
  const std::string_view t = trim(text);
  const std::string expected_price = "expected a price with a currency, like \"2.5 USD\"";
  if (t.empty()) throw UnitError(expected_price, "the value is empty");
  Price p;
  const char* first = t.data();
  const char* last = t.data() + t.size();
  if (*first == '+') ++first;
  const auto [ptr, ec] = std::from_chars(first, last, p.amount, std::chars_format::general);
  if (ec != std::errc() || ptr == first || !std::isfinite(p.amount))
    throw UnitError(expected_price, fmt::format("'{}' does not start with a number", t));
  if (p.amount < 0) throw UnitError(fmt::format("'{}' must not be negative", t));
  const std::string_view cur = trim(std::string_view(ptr, static_cast<std::size_t>(last - ptr)));
  if (cur.empty()) throw UnitError(expected_price, fmt::format("a bare number like {} has no currency", t));
  const bool iso = cur.size() == 3 && std::all_of(cur.begin(), cur.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
  if (!iso) throw UnitError(fmt::format("'{}' is not a currency code", cur), "write a three-letter code in capitals: USD, EUR, ...");
  p.currency = std::string(cur);
  return p;
}

sim::Time parse_time(std::string_view text) {
  const double ps = parse_quantity(text, kTime);
  // int64 picoseconds end at ~9.22e18; stay well clear so later sums cannot overflow.
  if (ps >= 9.0e18) throw UnitError(fmt::format("'{}' is too long (at most about 100 days)", trim(text)));
  return sim::Time::from_ps(static_cast<std::int64_t>(std::llround(ps)));
}

}  // namespace ls::tools
