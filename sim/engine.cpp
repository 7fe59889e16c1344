// sim/engine.cpp — see engine.hpp for the contract. The event loop, op starts and
// completions, communication phases. The construction (recv slots, op ids, the
// op-trace storage) is in engine_setup.cpp, the symmetric fast path's parts in
// engine_symmetry.cpp, the deadlock message in engine_deadlock.cpp.
#include "sim/engine.hpp"

#include "sim/alike_flows.hpp"
#include "sim/group_plan.hpp"
#include "sim/hash.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ls::sim {

namespace {

// A jitter sample is a hash of (seed, step, rank, op), so it never depends on the
// order in which events happen to run.
constexpr auto mix = splitmix64;

}  // namespace

std::int64_t Engine::op_base(std::int32_t rank, int stream) const {
  return op_base_[static_cast<std::size_t>(rank) * kStreamCount + static_cast<std::size_t>(stream)];
}

double Engine::jitter(double cv, std::uint64_t a, std::uint64_t b) const {
  if (cv <= 0) return 1.0;
  const std::uint64_t h1 = mix(cfg_.seed ^ mix(a * 0x100000001b3ULL ^ mix(b + static_cast<std::uint64_t>(step_) * 0x9e37ULL)));
  const std::uint64_t h2 = mix(h1);
  // Box–Muller from two 53-bit uniforms in (0, 1].
  const double u1 = (static_cast<double>(h1 >> 11) + 1.0) * 0x1.0p-53;
  const double u2 = static_cast<double>(h2 >> 11) * 0x1.0p-53;
  const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  // Lognormal with mean 1 and coefficient of variation ≈ cv: noise never makes work negative.
  const double sigma = std::sqrt(std::log1p(cv * cv));
  return std::exp(sigma * z - 0.5 * sigma * sigma);
}

Time Engine::run_step(Time start, int step_index) {
  step_ = step_index;
  now_ = start;
  for (auto& r : ranks_) {
    for (auto& s : r.streams) s = StreamState{};
    r.side_in_flight = 0;
    r.side_since = r.side_total = r.compute_mark = Time::zero();
  }
  for (auto& st : stats_) {
    const auto mem = st.mem_now;  // dynamic memory carries over (should be 0 between steps)
    st = RankStats{};
    st.mem_now = mem;
    st.mem_peak = mem;
  }
  for (auto& g : groups_) g = GroupState{};
  mailboxes_.clear();

  for (std::size_t r = 0; r < ranks_.size(); ++r)
    if (simulated(static_cast<std::int32_t>(r))) try_advance(static_cast<std::int32_t>(r));

  while (!queue_.empty()) {
    const Event e = queue_.pop();
    now_ = e.time;
    ++events_;
    switch (e.cls()) {
      case kFlowDone: {
        const FlowId f = e.a;
        if (net_.version(f) != e.b) break;  // superseded by a later rate change
        const bool lone = net_.lone(f);  // alone on its links: no other rate changes
        net_.finish(now_, f);
        if (!lone) schedule_resolve(now_);
        const std::uint32_t cid = flow_comm_[f];
        Comm& c = comms_[cid];
        if (c.ghosts) {
          auto& span = ghost_span_[cid][flow_place_[f]];
          span.first = std::min(span.first, now_);
          span.second = std::max(span.second, now_);
        }
        if (--c.outstanding == 0) {
          if (c.ghosts) check_ghosts(cid);
          const auto& ph = c.plan->phases[c.phase];
          queue_.push(now_ + ph.latency * c.multiplier, kCommPhaseDone, cid);
        }
        break;
      }
      case kCommPhaseDone: {
        const std::uint32_t cid = e.a;
        Comm& c = comms_[cid];
        const std::uint32_t nphases = static_cast<std::uint32_t>(c.plan->phases.size());
        ++c.phase;
        if (c.phase >= nphases) {
          c.phase = 0;
          if (nphases == 0 || --c.repeat_left == 0) {
            finish_comm(cid, now_);
            break;
          }
        }
        start_phase(cid, now_);
        break;
      }
      case kOpDone: {
        const auto rank = static_cast<std::int32_t>(e.a);
        complete_op(rank, static_cast<int>(e.b), now_);
        try_advance(rank);
        break;
      }
      case kResolve: {
        resolve_pending_ = false;
        changed_.clear();
        net_.resolve(now_, changed_);
        if (any_tied_) check_tied();
        for (FlowId f : changed_) {
          const Time t = net_.finish_time(f);
          if (t != Time::max()) queue_.push(t, kFlowDone, f, net_.version(f));
        }
        break;
      }
      default: break;
    }
  }

  Time end = start;
  bool done = true;
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    if (!simulated(static_cast<std::int32_t>(r))) continue;
    const auto& st = program_.stages[static_cast<std::size_t>(program_.ranks[r].stage)];
    for (int s = 0; s < kStreamCount; ++s)
      if (ranks_[r].streams[s].pos < st.streams[static_cast<std::size_t>(s)].size()) done = false;
    end = std::max(end, stats_[r].end);
  }
  if (!done) throw std::runtime_error(describe_deadlock());
  if (!active_.empty()) copy_to_mirrors();
  return end;
}

void Engine::schedule_resolve(Time now) {
  if (resolve_pending_) return;
  resolve_pending_ = true;
  queue_.push(now, kResolve);
}

void Engine::try_advance(std::int32_t rank) {
  // Several streams of a rank depend on each other; loop until nothing moves.
  bool progress = true;
  while (progress) {
    progress = false;
    for (int s = 0; s < kStreamCount; ++s)
      while (try_start(rank, s)) progress = true;
  }
}

// try_start's phases, always inlined: try_start runs at every op start and is the
// engine's hot path, so the split must cost no calls.

inline __attribute__((always_inline)) bool Engine::deps_done(std::int32_t rank, const RankState& rs, StreamState& ss,
                                                             const StageProgram& sp, const Op& op, bool rec, Enabler& en) {
  // Streams run in order, so op (s, i) is done exactly when stream s has moved past i.
  for (std::uint32_t d = 0; d < op.dep_count; ++d) {
    const OpRef& ref = sp.deps[op.dep_begin + d];
    const StreamState& other = rs.streams[ref.stream];
    if (other.pos <= ref.index) {
      if (ss.blocked_since == Time::max()) {
        ss.blocked_since = now_;
        ss.blocked_slot = op_at(rank, ref.stream, ref.index).group_slot;
      }
      return false;
    }
    if (rec) {
      const std::int64_t gid = op_base(rank, ref.stream) + ref.index;
      const Time e = op_traces_.get()[static_cast<std::size_t>(gid)].end;
      if (en.gid < 0 || e > en.end) en = {gid, e};
    }
  }
  return true;
}

inline __attribute__((always_inline)) void Engine::end_wait(std::int32_t rank, int stream, StreamState& ss, const Op& op) {
  if (ss.blocked_since == Time::max()) return;
  RankStats& st = stats_[static_cast<std::size_t>(rank)];
  if (stream == 0 && ss.blocked_slot != kNoGroup) st.exposed[ss.blocked_slot] += now_ - ss.blocked_since;
  // Waiting on the rank's own communication (a ZeRO weight gather, say) right
  // before busy-window work is part of that work, not idle time.
  if (stream == 0 && op.counts_as_busy) {
    st.busy_time += now_ - ss.blocked_since;
    st.busy_from = std::min(st.busy_from, ss.blocked_since);
  }
  ss.blocked_since = Time::max();
  ss.blocked_slot = kNoGroup;
}

inline __attribute__((always_inline)) void Engine::trace_start(std::int32_t rank, int stream, const StreamState& ss, Enabler en) {
  const std::int64_t gid = op_base(rank, stream) + ss.pos;
  if (ss.pos > 0) {
    const Time e = op_traces_.get()[static_cast<std::size_t>(gid - 1)].end;
    if (en.gid < 0 || e >= en.end) en = {gid - 1, e};
  }
  OpTrace& t = op_traces_.get()[static_cast<std::size_t>(gid)];
  t.start = now_;
  t.end = now_;
  t.enabler = static_cast<std::int32_t>(en.gid);
  t.peer = -1;
}

inline __attribute__((always_inline)) void Engine::start_compute(std::int32_t rank, int stream, StreamState& ss,
                                                                 const RankInfo& info, const Op& op) {
  double factor = cfg_.compute_factor[static_cast<std::size_t>(rank)];
  if (op.scaled_by_rank) factor *= info.work_scale;
  if (cfg_.compute_cv > 0)
    factor *= jitter(cfg_.compute_cv, static_cast<std::uint64_t>(rank), (static_cast<std::uint64_t>(stream) << 32) | ss.pos);
  const Time dur = factor == 1.0 ? op.duration : Time::from_seconds(op.duration.seconds() * factor);
  ss.running = true;
  queue_.push(now_ + dur, kOpDone, static_cast<std::uint32_t>(rank), static_cast<std::uint32_t>(stream));
}

inline __attribute__((always_inline)) bool Engine::start_recv(std::int32_t rank, int stream, StreamState& ss,
                                                              const RankInfo& info) {
  const std::uint32_t q = recv_ordinal_[static_cast<std::size_t>(info.stage)][ss.pos];
  ss.running = true;
  if (mailboxes_.peek(static_cast<std::size_t>(rank), q).arrival >= 0) {
    complete_op(rank, stream, now_);
    return true;
  }
  return false;  // the transfer's completion finishes it
}

inline __attribute__((always_inline)) void Engine::start_send(std::int32_t rank, StreamState& ss, const RankInfo& info,
                                                              const Op& op) {
  ss.running = true;
  // A rank sends to at most two peers with a couple of sizes: a short list per
  // rank is cheaper than the planner's hashed cache on every micro-batch, and it
  // keeps the peer's rank and mailboxes, read once.
  auto& tc = transfer_plans_[static_cast<std::size_t>(rank)];
  const TransferPlan* tp = nullptr;
  for (const auto& e : tc)
    if (e.peer_stage == op.peer_stage && e.bytes == op.bytes) tp = &e;
  if (!tp) {
    const std::int32_t peer =
        program_.pp_peer[static_cast<std::size_t>(rank) * program_.stages.size() + static_cast<std::size_t>(op.peer_stage)];
    const auto& pinfo = program_.ranks[static_cast<std::size_t>(peer)];
    const CommPlan* plan = &planner_.transfer(info.device, pinfo.device, op.bytes);
    std::uint32_t copies = 0;
    tie(plan, copies);
    tc.push_back(TransferPlan{op.peer_stage, op.bytes, launch_plan(plan, copies), peer,
                              recv_ordinal_[static_cast<std::size_t>(pinfo.stage)].data()});
    tp = &tc.back();
  }
  tp->launch.prefetch();
  const std::uint32_t cid = alloc_comm();
  Comm& c = comms_[cid];
  c.use(tp->launch);
  c.repeat_left = 1;
  c.group = -1;
  c.rank = rank;
  c.op_index = ss.pos;
  c.peer = tp->peer;
  c.recv_ordinal = tp->peer_recv_ordinal[op.peer_op];
  c.scale = cfg_.comm_cv > 0 ? jitter(cfg_.comm_cv, 0x5e00000000ULL + static_cast<std::uint64_t>(rank), ss.pos) : 1.0;
  // Note the transfer start at the receiver: exposed PP time is the receiver's
  // wait after the data started moving (waiting before that is bubble).
  mailboxes_.at(static_cast<std::size_t>(c.peer), c.recv_ordinal).transfer_start = now_.ps();
  start_comm(cid, now_);
}

inline __attribute__((always_inline)) bool Engine::start_collective(std::int32_t rank, int stream, StreamState& ss,
                                                                    const RankInfo& info, const Op& op, bool rec) {
  ss.running = true;
  const std::int32_t g = info.group[op.group_slot];
  if (g < 0) {  // degree-1 group: nothing to do
    complete_op(rank, stream, now_);
    return true;
  }
  GroupState& gs = groups_[static_cast<std::size_t>(g) * kStreamCount + static_cast<std::size_t>(stream)];
  ++gs.arrived;
  // Of members arriving at one instant the lowest rank counts as the last: the
  // critical path then does not hang on event order, and on the symmetric fast path
  // (whose runners are their classes' lowest replicas) it runs where the full run's does.
  const std::int64_t id = op_base(rank, stream) + ss.pos;
  if (rec && (gs.arrived == 1 || now_ > gs.last_arrival || id < gs.last_arriver)) gs.last_arriver = id;
  gs.last_arrival = now_;
  const auto& members = program_.groups[static_cast<std::size_t>(g)].ranks;
  if (gs.arrived < group_active_[static_cast<std::size_t>(g)]) return false;
  gs.arrived = 0;
  const LaunchPlan& launch = group_plan(g, op);
  launch.prefetch();
  const std::uint32_t cid = alloc_comm();
  Comm& c = comms_[cid];
  c.use(launch);
  // k back-to-back runs of one plan cost k·(latency + bytes/rate) when nothing
  // else changes in between: run it once with k× bytes and k× latency (half the
  // events for the two TP all-reduces of a layer pass).
  c.repeat_left = 1;
  c.multiplier = std::max<std::uint32_t>(1, op.repeat);
  c.group = g;
  c.stream = static_cast<std::uint8_t>(stream);
  c.rank = rank;
  c.op_index = ss.pos;
  c.scale = cfg_.comm_cv > 0 ? jitter(cfg_.comm_cv, 0xc0000000000ULL + static_cast<std::uint64_t>(g), ss.pos) : 1.0;
  if (rec) {
    // Remember who arrived last: the critical path jumps there.
    for (std::int32_t m : members) {
      if (!simulated(m)) continue;
      auto& t = op_traces_.get()[static_cast<std::size_t>(op_base(m, stream) + ss.pos)];
      t.peer = static_cast<std::int32_t>(gs.last_arriver);
    }
  }
  start_comm(cid, now_);
  return false;
}

bool Engine::try_start(std::int32_t rank, int stream) {
  RankState& rs = ranks_[static_cast<std::size_t>(rank)];
  StreamState& ss = rs.streams[stream];
  const RankInfo& info = program_.ranks[static_cast<std::size_t>(rank)];
  const StageProgram& sp = program_.stages[static_cast<std::size_t>(info.stage)];
  const auto& ops = sp.streams[static_cast<std::size_t>(stream)];
  if (ss.running || ss.pos >= ops.size()) return false;
  const Op& op = ops[ss.pos];

  // record_ops, read once: the stores below may alias it for the compiler.
  const bool rec = cfg_.record_ops;
  Enabler enabler;  // with record_ops: the op whose end let this one start
  if (!deps_done(rank, rs, ss, sp, op, rec, enabler)) return false;
  end_wait(rank, stream, ss, op);
  if (rec) trace_start(rank, stream, ss, enabler);

  ss.started = now_;
  if (cfg_.overlap_streams != 0) meter_start(rs, stream, op);
  switch (op.kind) {
    case OpKind::compute:
      start_compute(rank, stream, ss, info, op);
      return false;
    case OpKind::recv:
      return start_recv(rank, stream, ss, info);
    case OpKind::send:
      start_send(rank, ss, info, op);
      return false;
    case OpKind::collective:
      return start_collective(rank, stream, ss, info, op, rec);
  }
  return false;
}

const Engine::LaunchPlan& Engine::group_plan(std::int32_t g, const Op& op) {
  // A group meets only a handful of distinct (op, size) pairs per step; a short
  // linear list beats hashing the member list in the planner on every collective.
  auto& cache = group_plans_[static_cast<std::size_t>(g)];
  for (const auto& e : cache)
    if (e.coll == op.coll && e.bytes == op.bytes && e.variant == op.variant) return e.launch;
  std::uint32_t tied_copies = 0;
  std::vector<std::int32_t> devs;
  for (std::int32_t m : program_.groups[static_cast<std::size_t>(g)].ranks)
    devs.push_back(program_.ranks[static_cast<std::size_t>(m)].device);
  const CommPlan* plan = &group_collective_plan(planner_, program_, devs, op.coll, op.bytes, op.variant);
  tie(plan, tied_copies);
  // Only an all-to-all folds: its n(n−1) flows are where folding saves events (a ring is
  // one flow per channel already, and channels on other rails meet other traffic). A
  // ghosted plan's places pair with its ghosts' flows one to one: it runs unfolded.
  if (cfg_.fold_alike_flows && op.coll == CollOp::all_to_all && !cfg_.symmetry.ghosts.contains(plan)) {
    folded_plans_.push_back(std::make_unique<CommPlan>(fold_alike_flows(*plan, net_)));
    plan = folded_plans_.back().get();
  }
  cache.push_back(GroupPlan{op.coll, op.bytes, op.variant, launch_plan(plan, tied_copies)});
  return cache.back().launch;
}

Engine::LaunchPlan Engine::launch_plan(const CommPlan* plan, std::uint32_t copies) const {
  LaunchPlan lp{plan, copies, nullptr, {plan, nullptr, nullptr, nullptr}};
  if (!cfg_.symmetry.ghosts.empty())
    if (const auto it = cfg_.symmetry.ghosts.find(plan); it != cfg_.symmetry.ghosts.end()) lp.ghosts = &it->second;
  if (!plan->phases.empty()) lp.touches = {plan, plan->phases.data(), plan->phases.front().flows.data(), plan->links.data()};
  return lp;
}

std::uint32_t Engine::alloc_comm() {
  if (!free_comms_.empty()) {
    const std::uint32_t id = free_comms_.back();
    free_comms_.pop_back();
    comms_[id] = Comm{};
    comms_[id].free = false;
    return id;
  }
  comms_.push_back(Comm{});
  comms_.back().free = false;
  return static_cast<std::uint32_t>(comms_.size() - 1);
}

void Engine::start_comm(std::uint32_t cid, Time now) {
  Comm& c = comms_[cid];
  c.started = now;
  c.phase = 0;
  if (c.plan->phases.empty()) {
    // Free communication (ideal network, single member): finish through the queue
    // so completion never recurses into the caller.
    queue_.push(now, kCommPhaseDone, cid);
    return;
  }
  start_phase(cid, now);
}

void Engine::start_phase(std::uint32_t cid, Time now) {
  Comm& c = comms_[cid];
  const CommPhase& ph = c.plan->phases[c.phase];
  c.outstanding = 0;
  bool resolve = false;  // some flow shares a link: its rate comes from the next resolve
  for (const PlanFlow& f : ph.flows) {
    const double bytes = f.bytes * c.scale * c.multiplier;
    if (bytes <= 0 || f.path_len == 0) continue;
    const LinkId* path = c.plan->links.data() + f.path_begin;
    const FlowId id = net_.start(now, std::span<const LinkId>(path, f.path_len), bytes, /*may_run_alone=*/!c.ghosts, f.efficiency);
    // Copies: the plan's alike flows folded into this one, each of them tied over the
    // replicas of its class. Each copy's path is an equal part of the flow's path, or of
    // its check path where mirrored links were left out (one part: nothing to check, a
    // flow of its own has a bottleneck on its path).
    TiedFlow tied;
    if (f.check_len > 0) {
      const std::uint32_t parts = f.check_len / f.check_part;
      if (parts > 1) tied = TiedFlow{c.plan->check_links.data() + f.check_begin, f.check_part, parts, f.copies > 1};
    } else if (const std::uint32_t copies = f.copies * std::max<std::uint32_t>(1, c.tied_copies); copies > 1) {
      tied = TiedFlow{path, f.path_len / copies, copies, f.copies > 1};
    }
    if (net_.lone(id)) {
      // A tied flow alone on its links has its rate now: check_tied's test, here.
      check_tied_flow(id, tied);
      queue_.push(net_.finish_time(id), kFlowDone, id, net_.version(id));
    } else {
      resolve = true;
    }
    if (id >= flow_comm_.size()) flow_comm_.resize(static_cast<std::size_t>(id) + 1);
    flow_comm_[id] = cid;
    if (any_tied_) {
      if (id >= flow_tied_.size()) flow_tied_.resize(static_cast<std::size_t>(id) + 1);
      flow_tied_[id] = tied;
    }
    if (c.ghosts) {
      if (id >= flow_place_.size()) flow_place_.resize(static_cast<std::size_t>(id) + 1);
      flow_place_[id] = c.outstanding;
    }
    ++c.outstanding;
  }
  if (c.ghosts) start_ghosts(cid, now);
  if (c.outstanding == 0) {
    queue_.push(now + ph.latency * c.multiplier, kCommPhaseDone, cid);
    return;
  }
  // A flow that joined a lone one took it into the link lists: both get their rates
  // at the resolve. (Ghost flows always resolve.)
  if (resolve || c.ghosts) schedule_resolve(now);
}

void Engine::finish_comm(std::uint32_t cid, Time now) {
  // Copy out: completing ops may allocate comms and move the vector.
  const Comm c = comms_[cid];
  comms_[cid].free = true;
  free_comms_.push_back(cid);
  if (c.group >= 0) {
    const Group& g = program_.groups[static_cast<std::size_t>(c.group)];
    const Op& op = op_at(c.rank, c.stream, c.op_index);
    const double bytes = c.plan->bytes_per_member * c.scale * op.repeat;
    for (std::int32_t m : g.ranks) {
      if (!simulated(m)) continue;
      stats_[static_cast<std::size_t>(m)].bytes_sent[op.group_slot] += bytes;
      complete_op(m, c.stream, now);
    }
    for (std::int32_t m : g.ranks)
      if (simulated(m)) try_advance(m);
    return;
  }
  // Point-to-point transfer: finish the send, mark the data as arrived at the peer.
  const std::int32_t rank = c.rank;
  const Op& op = op_at(rank, static_cast<int>(Stream::send), c.op_index);
  stats_[static_cast<std::size_t>(rank)].bytes_sent[op.group_slot] += c.plan->bytes_per_member * c.scale;
  const std::int64_t send_gid = cfg_.record_ops ? op_base(rank, 1) + c.op_index : -1;
  const std::int32_t peer = c.peer;
  const std::uint32_t q = c.recv_ordinal;
  complete_op(rank, static_cast<int>(Stream::send), now);
  RankState& prs = ranks_[static_cast<std::size_t>(peer)];
  Mailboxes::Message& box = mailboxes_.at(static_cast<std::size_t>(peer), q);
  box.arrival = now.ps();
  box.source = send_gid;
  StreamState& pss = prs.streams[0];
  if (pss.running && pss.pos == op.peer_op) complete_op(peer, 0, now);
  try_advance(rank);
  try_advance(peer);
}

namespace {

/// The meter's in-flight time of measured side collectives up to `now`.
template <typename RankState>
Time side_time(const RankState& rs, Time now) {
  return rs.side_in_flight > 0 ? rs.side_total + (now - rs.side_since) : rs.side_total;
}

}  // namespace

// The overlap meter: the time a main-stream compute op spends beside measured side
// collectives is the growth of their union's running length over the op's span, so
// the meter needs no per-op record (the critical path's op traces do; this must not).
void Engine::meter_start(RankState& rs, int stream, const Op& op) {
  if (stream == 0) {
    if (op.kind == OpKind::compute) rs.compute_mark = side_time(rs, now_);
  } else if (op.kind == OpKind::collective && ((cfg_.overlap_streams >> stream) & 1U) != 0) {
    if (rs.side_in_flight++ == 0) rs.side_since = now_;
  }
}

void Engine::meter_end(std::int32_t rank, RankState& rs, int stream, const Op& op, Time now) {
  if (stream == 0) {
    if (op.kind == OpKind::compute) stats_[static_cast<std::size_t>(rank)].compute_beside_comm += side_time(rs, now) - rs.compute_mark;
  } else if (op.kind == OpKind::collective && ((cfg_.overlap_streams >> stream) & 1U) != 0) {
    if (--rs.side_in_flight == 0) rs.side_total += now - rs.side_since;
  }
}

void Engine::complete_op(std::int32_t rank, int stream, Time now) {
  RankState& rs = ranks_[static_cast<std::size_t>(rank)];
  StreamState& ss = rs.streams[stream];
  const RankInfo& info = program_.ranks[static_cast<std::size_t>(rank)];
  const Op& op = op_at(rank, stream, ss.pos);
  RankStats& st = stats_[static_cast<std::size_t>(rank)];
  const Time dur = now - ss.started;
  if (cfg_.overlap_streams != 0) meter_end(rank, rs, stream, op, now);

  std::uint64_t flow_id = 0;
  switch (op.kind) {
    case OpKind::compute: {
      // Compute on a side stream is a copy engine's work (workloads: offload copies), not the SMs'.
      if (stream == 0) st.compute_busy += dur;
      // Scaled work (workloads: expert compute) scales its FLOPs with its duration.
      const double k = op.scaled_by_rank ? info.work_scale : 1.0;
      st.hw_flops += op.hw_flops * k;
      st.model_flops += op.model_flops * k;
      break;
    }
    case OpKind::collective:
      if (stream == 0) {
        Time from = ss.started;
        const std::int32_t g = info.group[op.group_slot];
        if (((cfg_.exposed_from_last_arrival >> op.group_slot) & 1U) != 0 && g >= 0)
          from = std::max(from, groups_[static_cast<std::size_t>(g) * kStreamCount + static_cast<std::size_t>(stream)].last_arrival);
        st.exposed[op.group_slot] += now - from;
      }
      break;
    case OpKind::recv: {
      const std::uint32_t q = recv_ordinal_[static_cast<std::size_t>(info.stage)][ss.pos];
      const Mailboxes::Message box = mailboxes_.take(static_cast<std::size_t>(rank), q);
      const Time ts = Time::from_ps(box.transfer_start);
      if (box.transfer_start >= 0 && now > std::max(ss.started, ts))
        st.exposed[op.group_slot] += now - std::max(ss.started, ts);
      if (cfg_.record_ops) {
        auto& t = op_traces_.get()[static_cast<std::size_t>(op_base(rank, stream) + ss.pos)];
        t.peer = static_cast<std::int32_t>(box.source);
      }
      flow_id = (static_cast<std::uint64_t>(rank) << 32) | (ss.pos + 1);
      break;
    }
    case OpKind::send: {
      const std::int32_t peer =
          program_.pp_peer[static_cast<std::size_t>(rank) * program_.stages.size() + static_cast<std::size_t>(op.peer_stage)];
      flow_id = (static_cast<std::uint64_t>(peer) << 32) | (op.peer_op + 1);
      break;
    }
  }
  if (op.counts_as_busy && stream == 0) {
    st.busy_time += dur;
    st.busy_from = std::min(st.busy_from, ss.started);
    st.busy_until = std::max(st.busy_until, now);
  }
  if (op.mem_working_bytes != 0) st.mem_peak = std::max(st.mem_peak, st.mem_now + op.mem_working_bytes);
  if (op.mem_delta_bytes != 0) {
    st.mem_now += op.mem_delta_bytes;
    st.mem_peak = std::max(st.mem_peak, st.mem_now);
  }
  st.end = std::max(st.end, now);
  if (cfg_.record_ops) op_traces_.get()[static_cast<std::size_t>(op_base(rank, stream) + ss.pos)].end = now;

  if (observer_ && !cfg_.traced.empty()) observe(rank, stream, ss.pos, op, ss.started, now, flow_id, st.mem_now);
  ++ss.pos;
  ss.running = false;
}

}  // namespace ls::sim
