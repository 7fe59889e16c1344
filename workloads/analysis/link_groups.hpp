// workloads/analysis/link_groups.hpp — per-link statistics folded into groups of links that
// behaved identically, so a report names "node*.gpu*->node*.nvswitch × 1024" once
// instead of ten identical rows, and ranks the groups by the time they were a flow's
// bottleneck (the measure that finds the link limiting a collective; plain
// utilisation over the step hides it behind idle time).
#pragma once

#include <string>
#include <vector>

#include "workloads/build/result.hpp"

namespace ls::wl {

/// "node12.gpu3->node12.nvswitch" → "node*.gpu*->node*.nvswitch": every digit run as '*'.
std::string name_shape(const std::string& name);

/// Groups `links` (every link of the cluster, idle ones included) by kind, name shape
/// and statistics within 1 % of the group's first member (bytes, busy and bottleneck
/// time; the group reports that member's figures); a group's pattern writes each
/// number as the set of its members' values there ("leaf{0..3}->node{0..15}.nic0",
/// "node3.gpu{0..7}->node3.nvswitch"), and names one member when two groups would
/// still read alike. Returns every group, ranked: bottleneck time, then utilisation,
/// then bytes, then pattern (deterministic).
std::vector<LinkGroup> group_links(const std::vector<LinkStat>& links, double run_s);

/// The link class that limited flows longest (`ranked` as group_links returns it), with
/// every other class whose longest bottleneck share is within 1 point of it. Absent
/// when no link was ever saturated.
LinkBottleneck link_bottleneck(const std::vector<LinkGroup>& ranked);

/// The groups a report shows: the first `top` of `ranked`, plus the first (busiest)
/// group of every link class with traffic not among them, flagged busiest_of_class.
std::vector<LinkGroup> reported_link_groups(const std::vector<LinkGroup>& ranked, std::size_t top);

}  // namespace ls::wl
