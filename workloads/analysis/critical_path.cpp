// workloads/analysis/critical_path.cpp — see critical_path.hpp.
#include "workloads/analysis/critical_path.hpp"

#include <algorithm>

namespace ls::wl {

using sim::Time;

void CriticalWalk::attribute(CriticalSegment::Kind kind, Axis axis, std::int32_t device, const sim::Op* op, Time from, Time to) {
  if (to <= from) return;
  if (kind == CriticalSegment::Kind::compute) compute += to - from;
  else if (kind == CriticalSegment::Kind::comm) comm[static_cast<int>(axis)] += to - from;
  else wait += to - from;
  CriticalSegment seg;
  seg.kind = kind;
  seg.axis = axis;
  seg.device = device;
  seg.start = from;
  seg.end = to;
  if (op) {
    seg.work = work_of(*op);
    seg.microbatch = op->labels[label::microbatch];
    seg.layer_begin = op->labels[label::layer_begin];
    seg.layer_end = op->labels[label::layer_end];
  }
  segments.push_back(seg);
}

CriticalWalk walk_critical_path(const sim::Engine& eng, const sim::Program& prog, Time step_start, Time step_end) {
  CriticalWalk w;
  const auto& tr = eng.op_traces();
  // The op that finished last.
  std::int64_t cur = -1;
  for (std::size_t r = 0; r < prog.ranks.size() && cur < 0; ++r) {
    if (!eng.simulated(static_cast<std::int32_t>(r))) continue;  // symmetric fast path: no traces there
    for (int s = 0; s < sim::kStreamCount; ++s) {
      const auto n = prog.stages[static_cast<std::size_t>(prog.ranks[r].stage)].streams[static_cast<std::size_t>(s)].size();
      if (n == 0) continue;
      const std::int64_t gid = eng.op_base(static_cast<std::int32_t>(r), s) + static_cast<std::int64_t>(n) - 1;
      if (tr[static_cast<std::size_t>(gid)].end == step_end) { cur = gid; break; }
    }
  }
  if (cur < 0) {
    w.attribute(CriticalSegment::Kind::wait, Axis::none, -1, nullptr, step_start, step_end);
    return w;
  }
  {
    std::int32_t r; int s; std::uint32_t i;
    eng.decode(cur, r, s, i);
    w.device = prog.ranks[static_cast<std::size_t>(r)].device;
  }
  Time cursor = step_end;
  std::size_t guard = 0;
  while (cur >= 0 && guard++ < tr.size() + 8) {
    const auto& t = tr[static_cast<std::size_t>(cur)];
    std::int32_t r; int s; std::uint32_t i;
    eng.decode(cur, r, s, i);
    const auto& op = prog.stages[static_cast<std::size_t>(prog.ranks[static_cast<std::size_t>(r)].stage)]
                         .streams[static_cast<std::size_t>(s)][i];
    w.ops.insert(cur);
    const std::int32_t dev = prog.ranks[static_cast<std::size_t>(r)].device;
    Time from = t.start;
    std::int64_t jump = -1;
    if (op.kind == sim::OpKind::compute) {
      w.attribute(CriticalSegment::Kind::compute, Axis::none, dev, &op, from, cursor);
    } else if (op.kind == sim::OpKind::collective) {
      // The rendezvous completed when the last member arrived (its op's start).
      const Time released = t.peer >= 0 ? tr[static_cast<std::size_t>(t.peer)].start : t.start;
      if (t.peer >= 0 && t.peer != cur && released > t.start) {
        from = released;  // before that this rank only waited for the last member
        jump = t.peer;
      }
      w.attribute(CriticalSegment::Kind::comm, axis_of(op), dev, &op, from, cursor);
    } else if (op.kind == sim::OpKind::send) {
      w.attribute(CriticalSegment::Kind::comm, Axis::pp, dev, &op, from, cursor);
    } else {  // recv
      // The data arrived when the matching send finished.
      const Time arrived = t.peer >= 0 ? tr[static_cast<std::size_t>(t.peer)].end : t.start;
      if (t.peer >= 0 && arrived > t.start) {
        from = arrived;
        jump = t.peer;  // the send that delivered the data
      }
      w.attribute(CriticalSegment::Kind::wait, Axis::none, dev, &op, from, cursor);
    }
    cursor = from;
    if (jump >= 0) {
      // Continue at the released-by op; its interval up to `cursor` is attributed there.
      const auto& pt = tr[static_cast<std::size_t>(jump)];
      std::int32_t pr; int ps; std::uint32_t pi;
      eng.decode(jump, pr, ps, pi);
      const auto& pop = prog.stages[static_cast<std::size_t>(prog.ranks[static_cast<std::size_t>(pr)].stage)]
                            .streams[static_cast<std::size_t>(ps)][pi];
      const std::int32_t pdev = prog.ranks[static_cast<std::size_t>(pr)].device;
      if (pop.kind == sim::OpKind::send) {
        // The transfer itself: [send start, arrival].
        w.ops.insert(jump);
        const Time sfrom = std::min(cursor, pt.start);
        w.attribute(CriticalSegment::Kind::comm, Axis::pp, pdev, &pop, sfrom, cursor);
        cursor = sfrom;
        cur = pt.enabler;
      } else {
        // The last member of a collective arrived at `cursor` == its start.
        w.ops.insert(jump);
        const Time pfrom = std::min(cursor, pt.start);
        w.attribute(CriticalSegment::Kind::wait, Axis::none, pdev, &pop, pfrom, cursor);
        cursor = pfrom;
        cur = pt.enabler;
      }
    } else {
      cur = t.enabler;
    }
    if (cur >= 0) {
      const Time e = tr[static_cast<std::size_t>(cur)].end;
      // Started later than its enabler finished (waited on something else).
      w.attribute(CriticalSegment::Kind::wait, Axis::none, dev, nullptr, e, cursor);
      cursor = std::min(cursor, e);
    }
  }
  w.attribute(CriticalSegment::Kind::wait, Axis::none, -1, nullptr, step_start, cursor);
  std::reverse(w.segments.begin(), w.segments.end());
  return w;
}

}  // namespace ls::wl
