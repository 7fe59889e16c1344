// workloads/build/pair_overlap.cpp — see pair_overlap.hpp.
#include "workloads/build/pair_overlap.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace ls::wl {

namespace {

/// One pass cut at its moved ops: the compute ops before a moved op, then that op (or none, last).
struct Segment {
  std::vector<std::uint32_t> ops;  // relative to `begin`
  std::int64_t moved = -1;         // relative index of the moved op ending it
};

std::vector<Segment> segments(const std::vector<sim::Op>& ops, std::uint32_t from, std::uint32_t to,
                              const std::function<bool(const sim::Op&)>& moved) {
  std::vector<Segment> out(1);
  for (std::uint32_t i = from; i < to; ++i) {
    if (moved(ops[i])) {
      out.back().moved = i;
      out.emplace_back();
    } else {
      out.back().ops.push_back(i);
    }
  }
  if (out.back().ops.empty() && out.back().moved < 0) out.pop_back();
  return out;
}

}  // namespace

std::vector<sim::OpRef> interleave_pair(sim::StageProgram& program, sim::Stream compute, sim::Stream side, std::uint32_t begin,
                                        std::uint32_t split, std::uint32_t end, const std::function<bool(const sim::Op&)>& moved) {
  auto& comp = program.streams[static_cast<std::size_t>(compute)];
  auto& aside = program.streams[static_cast<std::size_t>(side)];
  if (!(begin <= split && split <= end && end == comp.size()))
    throw std::logic_error(fmt::format("interleave_pair: ops [{}, {}, {}) are not the compute stream's last ({})", begin, split, end, comp.size()));
  const std::vector<sim::Op> old(comp.begin() + begin, comp.end());
  const std::uint32_t n = end - begin;
  const std::vector<Segment> pass[2] = {segments(old, 0, split - begin, moved), segments(old, split - begin, n, moved)};

  // 1. The new position of every op, in issue order: segment k of the forward, then of
  // the backward, k = 0, 1, ...
  struct Placed {
    std::uint32_t rel;
    std::int64_t waits_on = -1;      // compute op: its pass's last moved op (side index)
    std::int64_t after_compute = -1; // moved op: the new compute index it follows (-1: none)
  };
  std::vector<Placed> order;
  std::vector<sim::OpRef> where(n);
  std::uint32_t next_comp = begin, next_side = static_cast<std::uint32_t>(aside.size());
  std::int64_t pending[2] = {-1, -1};
  // A pass that opens with a moved op follows what ran before the pair.
  const std::int64_t before = begin > 0 ? static_cast<std::int64_t>(begin) - 1 : -1;
  const std::size_t rounds = std::max(pass[0].size(), pass[1].size());
  for (std::size_t k = 0; k < rounds; ++k) {
    for (int p = 0; p < 2; ++p) {
      if (k >= pass[p].size()) continue;
      const Segment& seg = pass[p][k];
      for (std::uint32_t rel : seg.ops) {
        order.push_back({rel, pending[p], -1});
        pending[p] = -1;
        where[rel] = {static_cast<std::uint8_t>(compute), next_comp++};
      }
      if (seg.moved >= 0) {
        const auto rel = static_cast<std::uint32_t>(seg.moved);
        const std::int64_t prev = !seg.ops.empty() ? static_cast<std::int64_t>(next_comp) - 1 : (k == 0 ? before : -1);
        order.push_back({rel, -1, prev});
        where[rel] = {static_cast<std::uint8_t>(side), next_side};
        pending[p] = next_side++;
      }
    }
  }

  // 2. Every existing dependency on a re-threaded op points at its new place.
  for (sim::OpRef& d : program.deps)
    if (d.stream == static_cast<std::uint8_t>(compute) && d.index >= begin && d.index < end) d = where[d.index - begin];

  // 3. The ops in their new places, with the dependencies the re-threading adds.
  comp.resize(begin);
  for (const Placed& pl : order) {
    sim::Op op = old[pl.rel];
    std::vector<sim::OpRef> extra;
    if (pl.waits_on >= 0) extra.push_back({static_cast<std::uint8_t>(side), static_cast<std::uint32_t>(pl.waits_on)});
    if (pl.after_compute >= 0) extra.push_back({static_cast<std::uint8_t>(compute), static_cast<std::uint32_t>(pl.after_compute)});
    if (!extra.empty()) {
      const auto first = static_cast<std::uint32_t>(program.deps.size());
      for (std::uint32_t d = 0; d < op.dep_count; ++d) {
        const sim::OpRef copy = program.deps[op.dep_begin + d];  // push_back may reallocate
        program.deps.push_back(copy);
      }
      program.deps.insert(program.deps.end(), extra.begin(), extra.end());
      op.dep_begin = first;
      op.dep_count += static_cast<std::uint32_t>(extra.size());
    }
    (where[pl.rel].stream == static_cast<std::uint8_t>(side) ? aside : comp).push_back(op);
  }
  return where;
}

}  // namespace ls::wl
