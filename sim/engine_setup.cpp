// sim/engine_setup.cpp — the Engine's construction (engine.hpp): the dense recv slots,
// the global op ids and the op-trace storage, checked against the program once.
#include "sim/engine.hpp"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <new>
#include <stdexcept>

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace ls::sim {

namespace {

constexpr std::uint32_t kNotRecv = std::numeric_limits<std::uint32_t>::max();

/// Uninitialised storage for `count` op traces (released with std::free). Each op's
/// trace is first written when the op starts, so a large run's first touch of the
/// array dominates its cost: on Linux the array asks for transparent huge pages
/// (2 MiB, one page fault where 4 KiB pages take 512), a hint the kernel may ignore.
OpTrace* allocate_op_traces(std::size_t count) {
  if (count == 0) return nullptr;
  const std::size_t bytes = count * sizeof(OpTrace);
#ifdef __linux__
  constexpr std::size_t kHugePage = std::size_t{1} << 21;
  if (bytes >= kHugePage) {
    const std::size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    if (void* p = std::aligned_alloc(kHugePage, rounded)) {
      madvise(p, rounded, MADV_HUGEPAGE);  // advice only: failure leaves 4 KiB pages
      return static_cast<OpTrace*>(p);
    }
    throw std::bad_alloc();
  }
#endif
  auto* p = static_cast<OpTrace*>(std::malloc(bytes));
  if (!p) throw std::bad_alloc();
  return p;
}

}  // namespace

Engine::Engine(const Program& program, CommPlanner& planner, FlowNetwork& network, EngineConfig config)
    : program_(program), planner_(planner), net_(network), cfg_(std::move(config)) {
  const std::size_t nranks = program_.ranks.size();
  if (cfg_.compute_factor.empty()) cfg_.compute_factor.assign(nranks, 1.0);
  if (cfg_.compute_factor.size() != nranks) throw std::invalid_argument("engine: compute_factor size != ranks");
  ranks_.resize(nranks);
  stats_.resize(nranks);
  groups_.resize(program_.groups.size() * kStreamCount);
  group_plans_.resize(program_.groups.size());
  any_tied_ = !cfg_.symmetry.tied.empty() || cfg_.fold_alike_flows;

  // Each main-stream recv of a stage gets its ordinal, the name of its message in the
  // receiver's mailbox ring (mailboxes.hpp).
  recv_ordinal_.resize(program_.stages.size());
  for (std::size_t s = 0; s < program_.stages.size(); ++s) {
    const auto& ops = program_.stages[s].streams[0];
    recv_ordinal_[s].assign(ops.size(), kNotRecv);
    std::uint32_t count = 0;
    for (std::size_t i = 0; i < ops.size(); ++i)
      if (ops[i].kind == OpKind::recv) recv_ordinal_[s][i] = count++;
  }
  const EngineSymmetry& sym = cfg_.symmetry;
  if (sym.replicas > 1) {
    if (sym.replica.size() != nranks || sym.position.size() != nranks) throw std::invalid_argument("engine: symmetry tables != ranks");
    if ((!sym.runner.empty() && sym.runner.size() != static_cast<std::size_t>(sym.replicas)) || sym.rank_at.size() != nranks)
      throw std::invalid_argument("engine: symmetry runners != replicas or positions != ranks");
    active_.resize(nranks);
    for (std::size_t r = 0; r < nranks; ++r) active_[r] = sym.runs(r) ? 1 : 0;
    stands_for_.assign(static_cast<std::size_t>(sym.replicas), {});
    for (std::int32_t k = 0; k < sym.replicas; ++k) {
      const std::int32_t q = sym.runner_of_replica(static_cast<std::size_t>(k));
      // A runner is its class's lowest replica: the critical path's tie rule relies on it.
      if (q < 0 || q > k || sym.runner_of_replica(static_cast<std::size_t>(q)) != q)
        throw std::invalid_argument("engine: a replica's runner is not a running replica at or below it");
      if (q != k) stands_for_[static_cast<std::size_t>(q)].push_back(k);
    }
  }
  // Only simulated ranks receive: a rank a representative stands for runs no op, and
  // a pipeline transfer stays inside its replica (checked here: an inactive peer would
  // never take its messages).
  const std::size_t nstages = program_.stages.size();
  const bool check_peers = !active_.empty() && program_.pp_peer.size() == nranks * nstages;
  for (std::size_t r = 0; check_peers && r < nranks; ++r) {
    if (!simulated(static_cast<std::int32_t>(r))) continue;
    for (std::size_t st = 0; st < nstages; ++st) {
      const std::int32_t peer = program_.pp_peer[r * nstages + st];
      if (peer >= 0 && !simulated(peer)) throw std::invalid_argument("engine: a pipeline peer of a simulated rank is not simulated");
    }
  }
  mailboxes_.reset(nranks);

  op_base_.resize(nranks * kStreamCount + 1);
  std::int64_t acc = 0;
  // Op ids number the simulated ranks' ops only: a rank the symmetric fast path does
  // not run owns an empty range, so the traces cost nothing for it.
  for (std::size_t r = 0; r < nranks; ++r) {
    const auto& st = program_.stages[static_cast<std::size_t>(program_.ranks[r].stage)];
    const bool runs = simulated(static_cast<std::int32_t>(r));
    for (int s = 0; s < kStreamCount; ++s) {
      op_base_[r * kStreamCount + static_cast<std::size_t>(s)] = acc;
      if (runs) acc += static_cast<std::int64_t>(st.streams[static_cast<std::size_t>(s)].size());
    }
  }
  op_base_[nranks * kStreamCount] = acc;
  // Op ids are stored as int32 in OpTrace.
  if (cfg_.record_ops && acc >= std::numeric_limits<std::int32_t>::max())
    throw std::invalid_argument("engine: too many ops to record for the critical path");
  if (cfg_.record_ops) {
    op_trace_count_ = static_cast<std::size_t>(acc);
    op_traces_.reset(allocate_op_traces(op_trace_count_));
  }
  transfer_plans_.resize(nranks);
  group_active_.resize(program_.groups.size());
  for (std::size_t g = 0; g < program_.groups.size(); ++g)
    for (std::int32_t m : program_.groups[g].ranks) group_active_[g] += simulated(m) ? 1 : 0;
  if (!cfg_.traced.empty() && cfg_.traced.size() != nranks) throw std::invalid_argument("engine: traced size != ranks");
}

void Engine::set_compute_factor(std::int32_t rank, double factor) {
  if (rank < 0 || static_cast<std::size_t>(rank) >= cfg_.compute_factor.size() || !(factor > 0))
    throw std::invalid_argument("engine: set_compute_factor needs a rank of the program and a factor > 0");
  if (!active_.empty()) throw std::invalid_argument("engine: a compute factor that changes between steps breaks the symmetric fast path");
  cfg_.compute_factor[static_cast<std::size_t>(rank)] = factor;
}

void Engine::decode(std::int64_t gid, std::int32_t& rank, int& stream, std::uint32_t& index) const {
  auto it = std::upper_bound(op_base_.begin(), op_base_.end(), gid);
  // upper_bound gives the first base > gid; the slot before it owns gid (skipping empty streams).
  const auto slot = static_cast<std::size_t>(std::distance(op_base_.begin(), it) - 1);
  rank = static_cast<std::int32_t>(slot / kStreamCount);
  stream = static_cast<int>(slot % kStreamCount);
  index = static_cast<std::uint32_t>(gid - op_base_[slot]);
}

}  // namespace ls::sim
