// tools/scenario/scenario_reader.hpp — typed reads of located YAML values: integers, counts,
// numbers, booleans, choices, quantities with units, maps with their valid keys.
// Each read reports a located error (and returns nullopt) rather than throwing, so
// the converter finds every problem in one pass. Header-only: the class is small
// and `quantity` is a template; only the converters include it.
#pragma once

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tools/scenario/units.hpp"
#include "tools/scenario/yaml_tree.hpp"
#include "workloads/spec/did_you_mean.hpp"
#include "tools/scenario/scenario_keys.hpp"

namespace ls::tools {

// Limits: every input is bounded so nothing downstream can overflow or hang.
constexpr std::int64_t kMaxDevices = 131072;          // beyond the largest clusters built
constexpr std::int64_t kMaxCount = 1 << 20;           // layers, heads, degrees, micro-batches
constexpr std::int64_t kMaxLayers = 1 << 16;          // model.layers: a program per layer is built in well under a second
constexpr std::int64_t kMaxDim = std::int64_t{1} << 40;  // hidden, ffn, vocab, seq_len
constexpr std::int64_t kMaxSteps = 10000;

/// The valid keys directly under `parent` and the allowed values of the choice at
/// `path`, from the key table (tools/scenario/scenario_keys.cpp), in its order.
inline std::vector<std::string> keys(std::string_view parent) { return tools::scenario_key_names(parent); }
inline std::vector<std::string> values(std::string_view path) { return tools::scenario_key_values(path); }

inline std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

class Reader {
public:
  explicit Reader(Diag& d) : d_(d) {}
  Diag& diag() { return d_; }

  /// Checks that n is a map and reports every key not in `valid`. false: not a map.
  bool map(const YNode& n, const std::string& path, const std::vector<std::string>& valid) {
    if (n.kind != YNode::Kind::map) {
      d_.error(n.loc, path, fmt::format("expected a map of keys, got {}", kind_name(n)),
               fmt::format("keys: {}", fmt::join(valid, ", ")));
      return false;
    }
    for (const auto& e : n.entries) {
      if (std::find(valid.begin(), valid.end(), e.key) != valid.end()) continue;
      const std::string near = closest_match(e.key, valid);
      d_.error(e.key_loc, join_key(path, e.key), "unknown key",
               near.empty() ? fmt::format("valid keys here: {}", fmt::join(valid, ", "))
                            : fmt::format("did you mean '{}'?", near));
    }
    return true;
  }

  bool seq(const YNode& n, const std::string& path, std::string_view what) {
    if (n.kind == YNode::Kind::seq) return true;
    d_.error(n.loc, path, fmt::format("expected a list of {}, got {}", what, kind_name(n)));
    return false;
  }

  std::optional<std::string> scalar(const YNode& n, const std::string& path, std::string_view what) {
    if (n.kind == YNode::Kind::scalar) return n.scalar;
    d_.error(n.loc, path, fmt::format("expected {}, got {}", what, kind_name(n)));
    return std::nullopt;
  }

  std::optional<std::string> string(const YNode& n, const std::string& path) {
    auto s = scalar(n, path, "a string");
    if (s && s->empty()) {
      d_.error(n.loc, path, "expected a non-empty string");
      return std::nullopt;
    }
    // Names end up in the JSON summary and the Chrome trace, which must be UTF-8.
    if (s && !valid_utf8(*s)) {
      d_.error(n.loc, path, "is not valid UTF-8", "save the file as UTF-8");
      return std::nullopt;
    }
    return s;
  }

  /// Well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF).
  static bool valid_utf8(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size()) {
      const auto c = static_cast<unsigned char>(s[i]);
      int extra = 0;
      std::uint32_t cp = 0;
      if (c < 0x80) {
        ++i;
        continue;
      } else if ((c & 0xE0) == 0xC0) {
        extra = 1, cp = c & 0x1F;
      } else if ((c & 0xF0) == 0xE0) {
        extra = 2, cp = c & 0x0F;
      } else if ((c & 0xF8) == 0xF0) {
        extra = 3, cp = c & 0x07;
      } else {
        return false;
      }
      if (i + static_cast<std::size_t>(extra) >= s.size()) return false;  // truncated sequence
      for (int k = 1; k <= extra; ++k) {
        const auto cc = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
        if ((cc & 0xC0) != 0x80) return false;
        cp = (cp << 6) | (cc & 0x3F);
      }
      static constexpr std::uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
      if (cp < kMin[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
      i += static_cast<std::size_t>(extra) + 1;
    }
    return true;
  }

  std::optional<std::int64_t> integer(const YNode& n, const std::string& path, std::int64_t lo, std::int64_t hi) {
    auto s = scalar(n, path, "an integer");
    if (!s) return std::nullopt;
    const std::string& t = *s;
    std::int64_t v = 0;
    const char* first = t.data();
    const char* last = t.data() + t.size();
    if (first != last && *first == '+') ++first;
    auto [ptr, ec] = std::from_chars(first, last, v);
    if (ec == std::errc() && ptr == last && first != last) {
      if (v < lo || v > hi) {
        d_.error(n.loc, path, range_text(v, lo, hi));
        return std::nullopt;
      }
      return v;
    }
    // Not an int64: say whether it is out of range, fractional, or not a number at all.
    double dv = 0;
    auto [dptr, dec] = std::from_chars(first, last, dv);
    if (ec == std::errc::result_out_of_range ||
        (dec == std::errc() && dptr == last && std::isfinite(dv) && dv == std::floor(dv) &&
         (dv < static_cast<double>(lo) || dv > static_cast<double>(hi)))) {
      d_.error(n.loc, path, fmt::format("expected an integer, got {} which is out of range", t),
               range_hint(lo, hi));
    } else if (dec == std::errc::result_out_of_range) {
      d_.error(n.loc, path, fmt::format("expected an integer, got {} which is out of range", t), range_hint(lo, hi));
    } else if (dec == std::errc() && dptr == last) {
      d_.error(n.loc, path, fmt::format("expected an integer, got {}", t), "counts are whole numbers");
    } else {
      d_.error(n.loc, path, fmt::format("expected an integer, got \"{}\"", t));
    }
    return std::nullopt;
  }

  std::optional<int> count(const YNode& n, const std::string& path, std::int64_t lo = 1,
                           std::int64_t hi = kMaxCount) {
    auto v = integer(n, path, lo, hi);
    if (!v) return std::nullopt;
    return static_cast<int>(*v);
  }

  /// A plain number in [lo, hi] (lo excluded when lo_open).
  std::optional<double> number(const YNode& n, const std::string& path, double lo, double hi, bool lo_open) {
    auto s = scalar(n, path, "a number");
    if (!s) return std::nullopt;
    double v = 0;
    const char* first = s->data();
    const char* last = s->data() + s->size();
    if (first != last && *first == '+') ++first;
    auto [ptr, ec] = std::from_chars(first, last, v);
    if (ec != std::errc() || ptr != last || first == last || !std::isfinite(v)) {
      d_.error(n.loc, path, fmt::format("expected a number, got \"{}\"", *s));
      return std::nullopt;
    }
    if ((lo_open ? v <= lo : v < lo) || v > hi) {
      d_.error(n.loc, path,
               fmt::format("{} is out of range", *s),
               fmt::format("expected a number in {}{}, {}]", lo_open ? "(" : "[", lo, hi));
      return std::nullopt;
    }
    return v;
  }

  std::optional<bool> boolean(const YNode& n, const std::string& path) {
    auto s = scalar(n, path, "true or false");
    if (!s) return std::nullopt;
    const std::string v = lower(*s);
    if (v == "true" || v == "yes" || v == "on") return true;
    if (v == "false" || v == "no" || v == "off") return false;
    d_.error(n.loc, path, fmt::format("expected true or false, got \"{}\"", *s));
    return std::nullopt;
  }

  std::optional<std::string> choice(const YNode& n, const std::string& path, const std::vector<std::string>& valid) {
    auto s = scalar(n, path, fmt::format("one of {}", fmt::join(valid, ", ")));
    if (!s) return std::nullopt;
    if (std::find(valid.begin(), valid.end(), *s) != valid.end()) return s;
    const std::string near = closest_match(lower(*s), valid);
    d_.error(n.loc, path, fmt::format("unknown value \"{}\", expected one of {}", *s, fmt::join(valid, ", ")),
             near.empty() ? std::string() : fmt::format("did you mean '{}'?", near));
    return std::nullopt;
  }

  template <typename F>
  auto quantity(const YNode& n, const std::string& path, std::string_view example, F parse)
      -> std::optional<decltype(parse(std::string_view()))> {
    auto s = scalar(n, path, fmt::format("a quantity with a unit, like \"{}\"", example));
    if (!s) return std::nullopt;
    try {
      return parse(*s);
    } catch (const UnitError& e) {
      d_.error(n.loc, path, e.what(), e.hint());
      return std::nullopt;
    }
  }

  /// Size in bytes; positive unless allow_zero.
  std::optional<double> bytes(const YNode& n, const std::string& path, bool allow_zero = false) {
    auto v = quantity(n, path, "80 GiB", parse_bytes);
    return positive(n, path, v, allow_zero);
  }
  std::optional<double> bandwidth(const YNode& n, const std::string& path) {
    auto v = quantity(n, path, "300 GB/s", parse_bandwidth_Bps);
    return positive(n, path, v, false);
  }
  std::optional<sim::Time> time(const YNode& n, const std::string& path) {
    return quantity(n, path, "3 us", parse_time);
  }

private:
  std::optional<double> positive(const YNode& n, const std::string& path, std::optional<double> v, bool allow_zero) {
    if (v && !allow_zero && *v <= 0) {
      d_.error(n.loc, path, fmt::format("must be greater than zero, got \"{}\"", n.scalar));
      return std::nullopt;
    }
    return v;
  }
  static std::string range_hint(std::int64_t lo, std::int64_t hi) {
    return fmt::format("expected {} to {}", lo, hi);
  }
  static std::string range_text(std::int64_t v, std::int64_t lo, std::int64_t hi) {
    if (v > hi) return fmt::format("{} is too large (at most {})", v, hi);
    if (lo >= 0) return fmt::format("must be at least {}, got {}", lo, v);
    return fmt::format("{} is out of range (expected {} to {})", v, lo, hi);
  }
  Diag& d_;
};

/// field = v when the read succeeded.
template <typename T, typename U>
void assign(T& field, const std::optional<U>& v) {
  if (v) field = static_cast<T>(*v);
}

}  // namespace ls::tools
