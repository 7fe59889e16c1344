// sim/hash.hpp — the project's one deterministic hash: splitmix64 (Steele, Lea and
// Flood 2014, "Fast splittable pseudorandom number generators"). Used wherever a
// value must depend only on its inputs and never on event order: jitter samples
// (seed, step, rank, op), ECMP path choice (src, dst, member) and MoE routing draws.
#pragma once

#include <cstdint>
#include <span>

namespace ls::sim {

/// The splitmix64 finaliser of x + golden-ratio increment: a bijection on 64 bits.
constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// The sequential generator: advances `state` by the increment and returns the next value.
constexpr std::uint64_t splitmix64_next(std::uint64_t& state) {
  const std::uint64_t out = splitmix64(state);
  state += 0x9e3779b97f4a7c15ULL;
  return out;
}

/// Folds `values` into `h` one at a time (h ← splitmix64(h ^ v)): the hash of a key
/// that holds a list of device or coordinate numbers.
constexpr std::uint64_t hash_ints(std::uint64_t h, std::span<const std::int32_t> values) {
  for (std::int32_t v : values) h = splitmix64(h ^ static_cast<std::uint32_t>(v));
  return h;
}

}  // namespace ls::sim
