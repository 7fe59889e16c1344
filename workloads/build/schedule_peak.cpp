// workloads/build/schedule_peak.cpp — see schedule_peak.hpp.
#include "workloads/build/schedule_peak.hpp"

#include <algorithm>
#include <cstddef>

#include "workloads/build/program_totals.hpp"
#include "workloads/spec/vocabulary.hpp"

namespace ls::wl {

namespace {

constexpr int kItemKinds = 4;

/// The schedule item an op that holds memory belongs to; std::nullopt for work outside
/// the passes. A recompute runs inside the backward that needs it, and so does the loss
/// head's backward, whole (the input-gradient half when the schedule splits the backward).
std::optional<ItemKind> item_of(Work work, bool split_backward) {
  switch (work) {
    case Work::forward: return ItemKind::forward;
    case Work::backward:
    case Work::recompute: return split_backward ? ItemKind::backward_input : ItemKind::backward;
    case Work::backward_input: return ItemKind::backward_input;
    case Work::backward_weight: return ItemKind::backward_weight;
    default: return std::nullopt;
  }
}

}  // namespace

std::size_t ItemMemory::index(ItemKind kind, int microbatch, int chunk) const {
  return (static_cast<std::size_t>(kind) * static_cast<std::size_t>(built_at_) + static_cast<std::size_t>(microbatch)) *
             static_cast<std::size_t>(chunks_) +
         static_cast<std::size_t>(chunk);
}

std::optional<ItemMemory> ItemMemory::read(const sim::Program& prog, const LayoutSpec& L) {
  const int built_at = L.microbatches, v = std::max(1, L.virtual_stages);
  if (built_at < 3 || static_cast<int>(prog.stages.size()) != L.pp) return std::nullopt;
  const auto schedule = build_schedule(L.schedule, L.pp, built_at, v);
  int chunks = 1;
  for (const auto& stage : schedule)
    for (const ScheduleItem& it : stage) chunks = std::max(chunks, it.chunk + 1);
  ItemMemory out(L.schedule, L.pp, v, built_at, chunks);
  const bool split = splits_backward(L.schedule);
  const std::size_t size = static_cast<std::size_t>(kItemKinds * built_at * chunks);
  out.held_.assign(prog.stages.size(), std::vector<Held>(size));
  for (std::size_t st = 0; st < prog.stages.size(); ++st) {
    std::vector<Held>& held = out.held_[st];
    enum class Seen : std::uint8_t { no, open, closed };
    std::vector<Seen> seen(size, Seen::no);
    std::vector<std::size_t> order;  // the items that hold memory, as the program runs them
    std::int64_t now = 0;            // the running total inside the open item
    for (const sim::Op& op : prog.stages[st].streams[static_cast<std::size_t>(stream::compute)]) {
      if (op.mem_working_bytes == 0 && op.mem_delta_bytes == 0) continue;
      const auto kind = item_of(work_of(op), split);
      const int mb = op.labels[label::microbatch], chunk = op.labels[label::chunk];
      if (!kind || mb < 0 || mb >= built_at || chunk < 0 || chunk >= chunks) return std::nullopt;
      const std::size_t i = out.index(*kind, mb, chunk);
      if (order.empty() || order.back() != i) {
        if (!order.empty()) seen[order.back()] = Seen::closed;
        if (seen[i] != Seen::no) return std::nullopt;  // split by another item's ops
        seen[i] = Seen::open;
        order.push_back(i);
        now = 0;
      }
      Held& h = held[i];
      if (op.mem_working_bytes != 0) h.peak = std::max(h.peak, now + op.mem_working_bytes);
      now += op.mem_delta_bytes;
      h.peak = std::max(h.peak, now);
      h.net = now;
    }
    // The items that hold memory run in the schedule's order.
    std::size_t k = 0;
    for (const ScheduleItem& it : schedule[st]) {
      const std::size_t i = out.index(it.kind, it.microbatch, it.chunk);
      if (seen[i] == Seen::no) continue;
      if (k >= order.size() || order[k] != i) return std::nullopt;
      ++k;
    }
    if (k != order.size()) return std::nullopt;
  }
  // The walk at the program's own size gives its own peaks, or the items do not tell them.
  if (out.walk(schedule, built_at, 1) != program_totals(prog).activation_peak_bytes) return std::nullopt;
  return out;
}

std::vector<double> ItemMemory::peaks(int microbatches, int middle) const {
  return walk(build_schedule(schedule_, pp_, microbatches, virtual_stages_), microbatches, middle);
}

std::vector<double> ItemMemory::walk(const std::vector<std::vector<ScheduleItem>>& schedule, int microbatches, int middle) const {
  std::vector<double> out(held_.size(), 0.0);
  for (std::size_t st = 0; st < held_.size() && st < schedule.size(); ++st) {
    std::int64_t now = 0, peak = 0;
    for (const ScheduleItem& it : schedule[st]) {
      // The first and the last micro-batch as built; any other as the built middle one
      // (at the built size, each as itself).
      const int mb = microbatches == built_at_                 ? it.microbatch
                     : it.microbatch == 0                      ? 0
                     : it.microbatch == microbatches - 1       ? built_at_ - 1
                                                               : middle;
      const Held& h = held_[st][index(it.kind, mb, it.chunk)];
      peak = std::max(peak, now + h.peak);
      now += h.net;
    }
    out[st] = static_cast<double>(peak);
  }
  return out;
}

}  // namespace ls::wl
