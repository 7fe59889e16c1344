// sim/engine_deadlock.cpp — the engine's deadlock message: which ranks wait, on
// which stream and op, and for what (error path only; split from engine.cpp).
#include "sim/engine.hpp"

#include <fmt/format.h>

namespace ls::sim {

namespace {

const char* kind_name(const Op& op) {
  switch (op.kind) {
    case OpKind::compute: return "compute";
    case OpKind::collective: return "collective";
    case OpKind::send: return "send";
    case OpKind::recv: return "recv";
  }
  return "?";
}

}  // namespace

std::string Engine::slot_name(GroupSlot slot) const {
  const std::string& name = cfg_.group_slot_names[slot];
  return name.empty() ? fmt::format("slot{}", slot) : name;
}

std::string Engine::stream_name(int stream) const {
  static constexpr const char* kGeneric[kStreamCount] = {"main", "send", "side0", "side1", "side2"};
  const std::string& name = cfg_.stream_names[static_cast<std::size_t>(stream)];
  return name.empty() ? kGeneric[stream] : name;
}

std::string Engine::labels_text(const Op& op) const {
  std::string out;
  for (std::size_t i = 0; i < op.labels.size(); ++i)
    if (!cfg_.label_names[i].empty()) out += fmt::format(" {}{}", cfg_.label_names[i], op.labels[i]);
  return out;
}

std::int32_t Engine::sender_stage(std::int32_t stage, std::uint32_t recv_index) const {
  // Error path only: scan the send streams for the op that targets this recv.
  for (std::size_t s = 0; s < program_.stages.size(); ++s)
    for (const Op& op : program_.stages[s].streams[static_cast<std::size_t>(Stream::send)])
      if (op.kind == OpKind::send && op.peer_stage == stage && op.peer_op == recv_index) return static_cast<std::int32_t>(s);
  return -1;
}

std::string Engine::describe_deadlock() const {
  std::string msg = "deadlock: the schedule cannot make progress; waiting ranks:";
  int shown = 0, total = 0;
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    const auto& info = program_.ranks[r];
    const auto& sp = program_.stages[static_cast<std::size_t>(info.stage)];
    for (int s = 0; s < kStreamCount; ++s) {
      const auto& ss = ranks_[r].streams[s];
      const auto& ops = sp.streams[static_cast<std::size_t>(s)];
      if (ss.pos >= ops.size()) continue;
      ++total;
      if (shown >= 12) continue;
      ++shown;
      const Op& op = ops[ss.pos];
      std::string what;
      if (!ss.running) {
        what = "blocked on a dependency of its own rank";
        for (std::uint32_t d = 0; d < op.dep_count; ++d) {
          const OpRef& ref = sp.deps[op.dep_begin + d];
          if (ranks_[r].streams[ref.stream].pos <= ref.index) {
            what = fmt::format("waits for its {} stream op #{}", stream_name(ref.stream), ref.index);
            break;
          }
        }
      } else if (op.kind == OpKind::recv) {
        what = fmt::format("waits to receive{} from stage {}", labels_text(op), sender_stage(info.stage, ss.pos));
      } else if (op.kind == OpKind::collective) {
        const std::int32_t g = info.group[op.group_slot];
        const auto& gs = groups_[static_cast<std::size_t>(g) * kStreamCount + static_cast<std::size_t>(s)];
        what = fmt::format("waits in a {} collective ({}/{} members arrived)", slot_name(op.group_slot), gs.arrived,
                           program_.groups[static_cast<std::size_t>(g)].ranks.size());
      } else {
        what = fmt::format("is running a {}", kind_name(op));
      }
      msg += fmt::format("\n  rank {} (stage {}) {} stream at op #{} ({}{}): {}", r, info.stage, stream_name(s), ss.pos,
                         kind_name(op), labels_text(op), what);
    }
  }
  if (total > shown) msg += fmt::format("\n  … and {} more waiting streams", total - shown);
  return msg;
}

}  // namespace ls::sim
