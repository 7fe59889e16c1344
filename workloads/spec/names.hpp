// workloads/spec/names.hpp — an enum's scenario spelling, written once per enum as a
// table of (value, name) pairs: the loader, the key table, search's --vary and every
// report read the same table, so a spelling cannot drift between them.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

namespace ls::wl {

template <typename E, std::size_t N>
using NameTable = std::array<std::pair<E, std::string_view>, N>;

/// The spelling of `e`; "?" for a value the table lacks (a table bug, caught by tests).
template <typename E, std::size_t N>
constexpr std::string_view name_of(const NameTable<E, N>& table, E e) {
  for (const auto& [value, name] : table)
    if (value == e) return name;
  return "?";
}

/// The value `name` spells; nullopt for any other text.
template <typename E, std::size_t N>
constexpr std::optional<E> from_name(const NameTable<E, N>& table, std::string_view name) {
  for (const auto& [value, spelling] : table)
    if (spelling == name) return value;
  return std::nullopt;
}

}  // namespace ls::wl
