// workloads/spec/names.hpp — an enum's scenario spelling, written once per enum as a
// table of (value, name, doc) rows: the loader, the key table (and so the README's
// reference and `layoutsim keys`), search's --vary and every report read the same
// table, so a spelling or its meaning cannot drift between them.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace ls::wl {

/// One value of an enum: its spelling and what it means (one phrase, markdown; empty
/// when the key's own doc says it).
template <typename E>
struct Named {
  E value;
  std::string_view name;
  std::string_view doc = {};
};

template <typename E, std::size_t N>
using NameTable = std::array<Named<E>, N>;

/// The spelling of `e`; "?" for a value the table lacks (a table bug, caught by tests).
template <typename E, std::size_t N>
constexpr std::string_view name_of(const NameTable<E, N>& table, E e) {
  for (const auto& row : table)
    if (row.value == e) return row.name;
  return "?";
}

/// The value `name` spells; nullopt for any other text.
template <typename E, std::size_t N>
constexpr std::optional<E> from_name(const NameTable<E, N>& table, std::string_view name) {
  for (const auto& row : table)
    if (row.name == name) return row.value;
  return std::nullopt;
}

}  // namespace ls::wl
