// topology/kinds.hpp — the kinds of links and vertices a cluster graph has.
//
// Enums inside topology/, one name table each: the names are what scenarios write
// (ClusterSpec, ExplicitGraphSpec) and what reports print (LinkInfo::kind,
// Cluster::link_kinds_on_route, Cluster::vertex_kind). Strings are parsed once, when
// the cluster is built; every decision inside topology/ compares enums.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ls::topo {

/// A link's technology. `nvswitch` is accepted for explicit graphs (an NVLink port
/// into an NVSwitch); the generator names its intra-node links `nvlink` or `pcie`.
enum class LinkKind : std::uint8_t { nvlink, nvswitch, pcie, infiniband, ethernet };
inline constexpr std::array<std::string_view, 5> kLinkKindNames = {"nvlink", "nvswitch", "pcie", "infiniband",
                                                                   "ethernet"};

enum class VertexKind : std::uint8_t { gpu, nvswitch, pcie_switch, nic, network_switch };
inline constexpr std::array<std::string_view, 5> kVertexKindNames = {"gpu", "nvswitch", "pcie-switch", "nic", "switch"};

constexpr std::string_view link_kind_name(LinkKind kind) { return kLinkKindNames[static_cast<std::size_t>(kind)]; }
constexpr std::string_view vertex_kind_name(VertexKind kind) {
  return kVertexKindNames[static_cast<std::size_t>(kind)];
}

/// std::nullopt for a name not in the table.
constexpr std::optional<LinkKind> parse_link_kind(std::string_view name) {
  for (std::size_t i = 0; i < kLinkKindNames.size(); ++i)
    if (kLinkKindNames[i] == name) return static_cast<LinkKind>(i);
  return std::nullopt;
}
constexpr std::optional<VertexKind> parse_vertex_kind(std::string_view name) {
  for (std::size_t i = 0; i < kVertexKindNames.size(); ++i)
    if (kVertexKindNames[i] == name) return static_cast<VertexKind>(i);
  return std::nullopt;
}

/// "a | b | c": the table, for error messages.
template <std::size_t N>
std::string kind_list(const std::array<std::string_view, N>& names) {
  std::string out;
  for (std::size_t i = 0; i < N; ++i) (out += i ? " | " : "") += names[i];
  return out;
}

/// GPUs, NVSwitches and PCIe switches: the host side of a node, below its NICs.
constexpr bool host_side(VertexKind kind) {
  return kind == VertexKind::gpu || kind == VertexKind::nvswitch || kind == VertexKind::pcie_switch;
}

}  // namespace ls::topo
