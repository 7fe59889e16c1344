// workloads/build/schedule_peak.hpp — each stage's activation peak at M micro-batches,
// read off a program built at fewer.
//
// A stage's compute stream carries its memory in schedule items: a forward holds its
// micro-batch's activations, a backward (with its recompute) frees them. What one
// item's ops hold does not depend on where the item runs, only on which item it is,
// and every micro-batch between the first and the last holds alike. So the running
// total at M micro-batches is the schedule's item order at M, each item contributing
// the highest its ops reach above the total it starts from and what it leaves held,
// as the same item of the smaller program did. Building at M costs O(M · layers) ops;
// this walk O(M · chunks) items. The search's analytic stage prices its candidates
// this way (tools/study/search_estimate.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "sim/program.hpp"
#include "workloads/model/schedule.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::wl {

class ItemMemory {
 public:
  /// The per-item memory of `prog`, built from `layout` at layout.microbatches (at
  /// least 3: a first, a middle and a last micro-batch). std::nullopt when the program's
  /// memory does not come in items: an op that holds memory outside a micro-batch's
  /// pass, one item's ops split by another's, an item order other than the schedule's,
  /// or a walk that misses the program's own peak (program_totals) — the caller builds
  /// at M then. O(ops + items).
  static std::optional<ItemMemory> read(const sim::Program& prog, const LayoutSpec& layout);

  /// Per stage, the activation peak (bytes) at `microbatches`, each micro-batch between
  /// the first and the last holding as the built program's micro-batch `middle` did.
  /// O(microbatches · chunks) per stage.
  std::vector<double> peaks(int microbatches, int middle) const;

 private:
  struct Held {
    std::int64_t peak = 0;  // highest above the total the item starts from
    std::int64_t net = 0;   // what the item leaves held
  };
  ItemMemory(Schedule schedule, int pp, int virtual_stages, int built_at, int chunks)
      : schedule_(schedule), pp_(pp), virtual_stages_(virtual_stages), built_at_(built_at), chunks_(chunks) {}
  std::size_t index(ItemKind kind, int microbatch, int chunk) const;
  std::vector<double> walk(const std::vector<std::vector<ScheduleItem>>& schedule, int microbatches, int middle) const;

  Schedule schedule_;
  int pp_ = 1, virtual_stages_ = 1;
  int built_at_ = 0;  // the micro-batches of the program read
  int chunks_ = 1;    // chunks per stage
  std::vector<std::vector<Held>> held_;  // per stage, by index()
};

}  // namespace ls::wl
