// sim/network.cpp — max-min fair flow network (see network.hpp for the contract).
//
// Progressive filling (Bertsekas & Gallager, "Data Networks", 2nd ed., §6.5.2): all
// unfrozen flows grow together; the first link to saturate is the one with the
// smallest fair share cap_left / weight_left (weight = sum of the multiplicities of
// its unfrozen flows); its unfrozen flows are frozen at that share, which is
// subtracted (times multiplicity) from every other link of their paths; repeat.
//
// Lazy heap. Freezing a flow at rate r ≤ share(l') on a link l' with multiplicity
// m turns share(l') = c/w into (c − m·r)/(w − m) ≥ c/w: shares only grow. A min-heap
// of links keyed by share can therefore be updated lazily: an entry whose link has
// changed since it was pushed (stamp mismatch) is re-evaluated when it surfaces and
// either taken as the bottleneck (still the smallest) or re-pushed. Each (flow, hop)
// is visited once when its flow freezes and each change costs at most one re-push:
// O(F·P·log L) per component.
//
// Pruning and decoupling (exact, not heuristics). A flow can never exceed
// ub = min over its path of capacity / multiplicity. A link whose flows satisfy
// Σ mult·ub ≤ capacity can never saturate, so its constraint is implied by the
// per-flow bounds: the max-min allocation is that of the problem without the link
// but with every flow capped at its ub (a private one-flow "link"). Such links are
// (1) left out of the heap and (2) do not couple their flows: components are
// taken over the "constraining" links only. In a GPU fabric most links carry one
// or two flows and are of this kind (NVLink and PCIe behind a 50 GB/s NIC, a NIC
// port with a single flow), which keeps both the components and the heap small.
// Σ mult·ub is maintained per link on start/finish/set_bandwidth, so whether a
// link is constraining is known in O(1); a link whose sum changed is always
// dirty, so a link that stops coupling two groups of flows re-solves both.
// Including a non-saturating link in the heap is harmless (filling over any
// superset of the binding constraints gives the same allocation), so the test
// leans towards inclusion by a relative 1e-9 to absorb the drift of the
// incrementally kept sum.
//
// Lone flows. A flow that starts on links no other flow uses (and no observer
// watches) would get its bound ub at the next resolve and keep it until another flow
// joins one of its links. start() gives it that rate and its finish time at once and
// keeps it out of the link lists ("lone": each of its links records it as owner), so
// that the caller needs no resolve for it and finish() touches nothing else. The first
// flow that starts on one of its links first enters it into the link lists as it
// would have been (its rate, busy and saturation since its start), then everything
// proceeds as if it had never been lone: the allocation, times and statistics are
// those of the plain path. Most collectives inside a node (tensor-parallel rings over
// NVLink) run lone.
#include "sim/network.hpp"
#include "sim/quad_heap.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace ls::sim {

namespace {

// The heap orders by (share, id): equal shares are broken by id so that the
// freezing order (and hence floating-point rounding) never depends on the heap's
// layout. Shares are >= 0, and the IEEE-754 bit patterns of non-negative doubles
// order like the values, so the heap compares integers (no NaN/unordered branches).
std::uint64_t share_key(double share) {
  // +0 for 0, -0 and (never expected) negative values: -0.0 would sort last.
  return share > 0 ? std::bit_cast<std::uint64_t>(share) : 0;
}
double key_share(std::uint64_t key) { return std::bit_cast<double>(key); }

// The progressive filling pops (share, id) in increasing order from the shared
// 4-ary heap (sim/quad_heap.hpp); it spends most of its time there on large components.
template <class E>
bool heap_less(const E& x, const E& y) {
  return x.key < y.key || (x.key == y.key && x.id < y.id);
}
struct HeapLess {
  template <class E>
  bool operator()(const E& x, const E& y) const { return heap_less(x, y); }
};

// Relative slack of the "can this link saturate?" test (see the file comment).
constexpr double kConstrainSlack = 1e-9;
// Relative slack of "is this link saturated?" (link_bottleneck): the rate sum is kept
// incrementally, so a link filled exactly may read a few ulps below its capacity.
constexpr double kSaturatedSlack = 1e-6;

}  // namespace

FlowNetwork::FlowNetwork(std::vector<double> link_bandwidth_Bps)
    : hot_(link_bandwidth_Bps.size()), stats_(link_bandwidth_Bps.size()), link_flows_(link_bandwidth_Bps.size()) {
  for (std::size_t i = 0; i < link_bandwidth_Bps.size(); ++i) {
    const double bw = link_bandwidth_Bps[i];
    if (!(bw > 0) || !std::isfinite(bw))
      throw std::invalid_argument(fmt::format("FlowNetwork: link {} has bandwidth {} B/s; it must be finite and > 0", i, bw));
    hot_[i].capacity = bw;
  }
}

std::size_t FlowNetwork::link_count() const { return hot_.size(); }

void FlowNetwork::check_link(LinkId link, const char* what) const {
  if (link >= hot_.size())
    throw std::out_of_range(fmt::format("FlowNetwork::{}: link {} out of range (have {})", what, link, hot_.size()));
}

void FlowNetwork::check_flow(FlowId flow, const char* what) const {
  if (flow >= flows_.size() || !flows_[flow].active)
    throw std::invalid_argument(fmt::format("FlowNetwork::{}: flow {} is not active", what, flow));
}

double FlowNetwork::bandwidth(LinkId link) const {
  check_link(link, "bandwidth");
  return hot_[link].capacity;
}

void FlowNetwork::set_bandwidth(LinkId link, double bandwidth_Bps) {
  check_link(link, "set_bandwidth");
  if (!(bandwidth_Bps >= 0) || !std::isfinite(bandwidth_Bps))
    throw std::invalid_argument(fmt::format("FlowNetwork::set_bandwidth: link {}: bandwidth {} B/s must be finite and >= 0", link, bandwidth_Bps));
  if (hot_[link].lone_owner != kNoFlow) join_lone(hot_[link].lone_owner);
  hot_[link].capacity = bandwidth_Bps;
  mark_dirty(link);
  // The bound ub of every flow through the link may change, and with it Σ mult·ub
  // of every link those flows use: refresh them and mark those links dirty.
  for (const Use& u : link_flows_[link]) {
    Flow& f = flows_[u.flow];
    double ub = std::numeric_limits<double>::infinity();
    for (const Hop& h : f.path) ub = std::min(ub, hot_[h.link].capacity / h.mult);
    if (ub == f.ub) continue;
    for (const Hop& h : f.path) {
      hot_[h.link].ub_sum += h.mult * (ub - f.ub);
      mark_dirty(h.link);
    }
    f.ub = ub;
  }
}

std::uint32_t FlowNetwork::next_epoch() {
  if (++epoch_ == 0) {
    // Wrapped after 2^32 calls: clear every mark so a stale one cannot collide.
    for (auto& l : hot_) l.mark = 0;
    for (auto& f : flows_) f.mark = 0;
    epoch_ = 1;
  }
  return epoch_;
}

void FlowNetwork::mark_dirty(LinkId link) {
  LinkHot& l = hot_[link];
  if (!l.dirty) {
    l.dirty = true;
    dirty_.push_back(link);
  }
}

FlowId FlowNetwork::start(Time now, std::span<const LinkId> path, double bytes, bool may_run_alone, double payload_fraction) {
  if (path.empty()) throw std::invalid_argument("FlowNetwork::start: empty path");
  if (!(bytes >= 0) || !std::isfinite(bytes))
    throw std::invalid_argument(fmt::format("FlowNetwork::start: bytes = {} must be finite and >= 0", bytes));
  if (!(payload_fraction > 0 && payload_fraction <= 1))
    throw std::invalid_argument(fmt::format("FlowNetwork::start: payload fraction {} must be in (0, 1]", payload_fraction));
  for (LinkId l : path) check_link(l, "start");

  FlowId id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    if (flows_.size() >= kFlowBit) throw std::length_error("FlowNetwork::start: more than 2^31 flows alive at once");
    id = static_cast<FlowId>(flows_.size());
    flows_.emplace_back();
  }
  Flow& f = flows_[id];
  f.active = true;
  f.fixed = false;
  f.bytes_total = bytes;
  f.payload_total = bytes * payload_fraction;
  f.remaining = bytes;
  f.rate = 0;
  f.updated = now;
  ++f.version;  // a new incarnation: events scheduled for a previous one go stale
  f.path.clear();
  ++active_;

  if (bytes == 0) {
    // Nothing to move: taking a share would only perturb the other flows' finish
    // times for zero duration. It finishes now; the next resolve() reports it.
    f.finish = now;
    f.ub = 0;
    zero_pending_.emplace_back(id, f.version);
    return id;
  }
  f.finish = Time::max();

  // Collapse repeated links into (link, multiplicity) in O(P) with epoch marks.
  const std::uint32_t ep = next_epoch();
  for (LinkId lid : path) {
    if (hot_[lid].mark != ep) {
      hot_[lid].mark = ep;
      hot_[lid].slot = static_cast<std::uint32_t>(f.path.size());
      f.path.push_back(Hop{lid, 1, 0});
    } else {
      ++f.path[hot_[lid].slot].mult;
    }
  }
  double ub = std::numeric_limits<double>::infinity();
  bool alone = may_run_alone;
  for (const Hop& h : f.path) {
    ub = std::min(ub, hot_[h.link].capacity / h.mult);
    if (hot_[h.link].lone_owner != kNoFlow) join_lone(hot_[h.link].lone_owner);
    alone = alone && hot_[h.link].active == 0 && !hot_[h.link].watched;
  }
  f.ub = ub;
  f.started = now;
  if (alone && ub > 0) {
    // Its rate is ub until another flow joins (the resolve would give exactly that);
    // a drain time beyond the range takes the plain path, whose resolve says so.
    const double secs = bytes / ub;
    if (secs < kMaxTimeSeconds - now.seconds()) {
      f.lone = true;
      f.rate = ub;
      f.finish = now + Time::from_seconds_ceil(secs);
      for (const Hop& h : f.path) hot_[h.link].lone_owner = id;
      return id;
    }
  }
  for (std::uint32_t s = 0; s < f.path.size(); ++s) {
    Hop& h = f.path[s];
    LinkHot& l = hot_[h.link];
    auto& lf = link_flows_[h.link];
    h.pos = static_cast<std::uint32_t>(lf.size());
    lf.push_back(Use{id, s});
    if (l.active == 0) stats_[h.link].busy_since = now.ps();
    l.active += h.mult;
    ++l.nflows;
    l.ub_sum += h.mult * ub;
    mark_dirty(h.link);
  }
  return id;
}

void FlowNetwork::finish(Time now, FlowId id) {
  check_flow(id, "finish");
  Flow& f = flows_[id];
  if (f.lone) {
    // Alone all along: its links were busy, and saturated where it filled them, from
    // its start until now; no other flow's rate changes.
    const std::int64_t span = now.ps() - f.started.ps();
    for (const Hop& h : f.path) {
      LinkStats& st = stats_[h.link];
      st.bytes += f.bytes_total * h.mult;
      st.payload += f.payload_total * h.mult;
      st.busy_ps += span;
      if (fills(h.link, h.mult * f.rate)) st.saturated_ps += span;
      hot_[h.link].lone_owner = kNoFlow;
    }
    f.lone = false;
  } else {
    for (const Hop& h : f.path) {
      LinkHot& l = hot_[h.link];
      LinkStats& st = stats_[h.link];
      auto& lf = link_flows_[h.link];
      // Swap-remove this flow's entry and repoint the moved entry's flow at its new slot.
      const Use moved = lf.back();
      lf[h.pos] = moved;
      flows_[moved.flow].path[moved.slot].pos = h.pos;
      lf.pop_back();
      l.active -= h.mult;
      --l.nflows;
      l.ub_sum -= h.mult * f.ub;
      st.rate_sum -= h.mult * f.rate;
      if (l.nflows == 0) {
        // Idle: reset the incrementally kept sums exactly (no drift carried over).
        l.ub_sum = 0;
        st.rate_sum = 0;
        st.busy_ps += now.ps() - st.busy_since;
      }
      st.bytes += f.bytes_total * h.mult;
      st.payload += f.payload_total * h.mult;
      mark_dirty(h.link);
    }
  }
  f.path.clear();
  f.active = false;
  f.rate = 0;
  f.remaining = 0;
  f.finish = Time::max();
  ++f.version;
  free_ids_.push_back(id);
  --active_;
}

bool FlowNetwork::fills(LinkId link, double rate_sum) const {
  return rate_sum >= hot_[link].capacity * (1 - kSaturatedSlack);
}

void FlowNetwork::join_lone(FlowId id) {
  // Enter the lone flow into the link lists as start() would have, at the rate the
  // resolve after its start gave it (its remaining bytes still count from its start,
  // as the plain path's do until the next rate change), with its links busy and,
  // where it fills them, saturated since then. No link is marked dirty: a flow that
  // joins does that for its own links, as it would have with this one already there.
  Flow& f = flows_[id];
  f.lone = false;
  for (std::uint32_t s = 0; s < f.path.size(); ++s) {
    Hop& h = f.path[s];
    LinkHot& l = hot_[h.link];
    LinkStats& st = stats_[h.link];
    l.lone_owner = kNoFlow;
    auto& lf = link_flows_[h.link];
    h.pos = static_cast<std::uint32_t>(lf.size());
    lf.push_back(Use{id, s});
    st.busy_since = f.started.ps();
    l.active += h.mult;
    ++l.nflows;
    l.ub_sum += h.mult * f.ub;
    st.rate_sum += h.mult * f.rate;
    // A saturation still open here belongs to a flow that finished at this instant
    // (its resolve has not run): the plain path would have carried it on unbroken.
    if (!st.saturated && fills(h.link, st.rate_sum)) {
      st.saturated = true;
      st.saturated_since = f.started.ps();
    }
  }
}

void FlowNetwork::discover(LinkId link, std::uint32_t epoch) {
  LinkHot& l = hot_[link];
  l.mark = epoch;
  l.cap_left = l.capacity;
  l.weight_left = l.active;
  l.stamp = 0;
  l.constraining = l.nflows >= 2 && l.ub_sum > l.capacity * (1 - kConstrainSlack);
  comp_links_.push_back(link);
  if (l.constraining) heap_.push_back(HeapEntry{share_key(l.capacity / l.weight_left), link, 0});
}

void FlowNetwork::freeze(Flow& f, double rate) {
  f.fixed = true;
  f.new_rate = rate;
  for (const Hop& h : f.path) {
    LinkHot& o = hot_[h.link];
    o.cap_left -= h.mult * rate;
    o.weight_left -= h.mult;
    ++o.stamp;
  }
}

void FlowNetwork::resolve(Time now, std::vector<FlowId>& changed) {
  for (const auto& [id, ver] : zero_pending_) {
    const Flow& f = flows_[id];
    if (f.active && f.version == ver) changed.push_back(id);
  }
  zero_pending_.clear();
  comp_flows_.clear();
  comp_links_.clear();
  if (dirty_.empty()) return;

  // 1. Components reachable from the dirty links: BFS over the bipartite graph
  //    links <-> flows, expanding dirty links and constraining links only (see the
  //    file comment). comp_links_ doubles as the BFS queue; its first `ndirty`
  //    entries are the dirty links. The heap of step 2 is filled on the way, in
  //    the same pass over the paths (one walk over the memory, not three):
  //    discover() pushes each constraining link at its initial share, and a flow
  //    gets a bound entry when some link of its path is constraining but none of
  //    those attains ub (otherwise that link's share, <= capacity / mult = ub,
  //    freezes the flow first).
  const std::uint32_t ep = next_epoch();
  heap_.clear();
  for (LinkId lid : dirty_) {
    hot_[lid].dirty = false;
    discover(lid, ep);
  }
  const std::size_t ndirty = comp_links_.size();
  dirty_.clear();
  for (std::size_t i = 0; i < comp_links_.size(); ++i) {
    const LinkId lid = comp_links_[i];
    if (i >= ndirty && !hot_[lid].constraining) continue;
    for (const Use& u : link_flows_[lid]) {
      Flow& f = flows_[u.flow];
      if (f.mark == ep) continue;
      f.mark = ep;
      f.fixed = false;
      comp_flows_.push_back(u.flow);
      bool any = false, attained = false;
      for (const Hop& h : f.path) {
        LinkHot& l = hot_[h.link];
        if (l.mark != ep) discover(h.link, ep);
        if (!l.constraining) continue;
        any = true;
        if (l.capacity / h.mult == f.ub) attained = true;
      }
      if (any && !attained) heap_.push_back(HeapEntry{share_key(f.ub), u.flow | kFlowBit, 0});
    }
  }

  // 2. Progressive filling over the constraining links and the flow bounds.
  quad_heap::make(heap_, HeapLess{});
  while (!heap_.empty()) {
    const HeapEntry e = quad_heap::pop(heap_, HeapLess{});
    if (e.id & kFlowBit) {
      Flow& f = flows_[e.id & ~kFlowBit];
      if (!f.fixed) freeze(f, key_share(e.key));
      continue;
    }
    const LinkHot& l = hot_[e.id];
    if (l.weight_left == 0) continue;  // every flow on it already frozen elsewhere
    double r = key_share(e.key);
    if (e.stamp != l.stamp) {
      // Stale: the share has grown since the push. If it is still the smallest it
      // is the bottleneck now; otherwise re-queue it. cap_left may dip a few ulps
      // below 0 through cancellation: share_key() clamps it to 0.
      const HeapEntry cur{share_key(l.cap_left / l.weight_left), e.id, l.stamp};
      r = key_share(cur.key);
      if (!heap_.empty() && heap_less(heap_.front(), cur)) {
        quad_heap::push(heap_, cur, HeapLess{});
        continue;
      }
    }
    for (const Use& u : link_flows_[e.id]) {
      Flow& f = flows_[u.flow];
      if (!f.fixed) freeze(f, r);
    }
  }

  // 3. Apply: flows with no constraining link get their bound. Each re-rated flow
  //    is advanced to `now` at its old rate, then re-projected.
  for (FlowId fid : comp_flows_) {
    Flow& f = flows_[fid];
    const double nr = f.fixed ? f.new_rate : f.ub;
    if (nr == f.rate) continue;  // same rate: same projection, nothing to do
    f.remaining = std::max(0.0, f.remaining - f.rate * (now - f.updated).seconds());
    f.updated = now;
    for (const Hop& h : f.path) stats_[h.link].rate_sum += h.mult * (nr - f.rate);
    f.rate = nr;
    Time fin;
    if (f.remaining <= 0) {
      fin = now;
    } else if (f.rate <= 0) {
      fin = Time::max();
    } else {
      const double s = f.remaining / f.rate;
      // A drain time beyond int64 picoseconds (~9.2e6 s) throws TimeRangeError (exit 1
      // "outside the representable range"): reporting it as "never" made the engine
      // report a deadlock instead.
      if (!(s < kMaxTimeSeconds - now.seconds())) {
        // Name the link that limits it: the least capacity per crossing on its path.
        const Hop* neck = &f.path.front();
        for (const Hop& h : f.path)
          if (hot_[h.link].capacity / h.mult < hot_[neck->link].capacity / neck->mult) neck = &h;
        const std::string link =
            link_name_ ? fmt::format("'{}'", link_name_(neck->link)) : fmt::format("#{}", neck->link);
        throw DrainTimeRangeError(fmt::format(
            "a transfer of {:.4g} bytes at {:.4g} B/s (bottleneck: link {}, {:.4g} B/s) would take {:.4g} s and end {:.4g} s "
            "into the run, outside the representable range of time (int64 picoseconds, about 106 days): the step would "
            "exceed it",
            f.remaining, f.rate, link, hot_[neck->link].capacity, s, now.seconds() + s));
      }
      fin = now + Time::from_seconds_ceil(s);
    }
    if (fin != f.finish) {
      f.finish = fin;
      ++f.version;
      changed.push_back(fid);
    }
  }
  // Saturation (link_bottleneck): only the links re-solved here can have changed.
  for (LinkId lid : comp_links_) {
    LinkStats& st = stats_[lid];
    const bool sat = hot_[lid].nflows > 0 && fills(lid, st.rate_sum);
    if (sat == st.saturated) continue;
    st.saturated = sat;
    if (sat) st.saturated_since = now.ps();
    else st.saturated_ps += now.ps() - st.saturated_since;
  }
  if (observer_ != nullptr) {
    for (LinkId lid : comp_links_) {
      LinkStats& st = stats_[lid];
      if (hot_[lid].watched && st.rate_sum != st.reported) {
        st.reported = st.rate_sum;
        observer_->on_link_rate(lid, now, st.rate_sum);
      }
    }
  }
}

bool FlowNetwork::bottlenecked_on(FlowId flow, std::span<const LinkId> links) const {
  check_flow(flow, "bottlenecked_on");
  const Flow& f = flows_[flow];
  const double r = f.rate;
  if (f.lone) {
    // Alone on its links: a link is its bottleneck when the flow fills it (the rate
    // sum the plain path would keep is mult · rate).
    for (LinkId lid : links)
      for (const Hop& h : f.path)
        if (h.link == lid && fills(lid, h.mult * r)) return true;
    return false;
  }
  for (LinkId lid : links) {
    if (!fills(lid, stats_[lid].rate_sum)) continue;
    bool fastest = true;
    for (const Use& u : link_flows_[lid])
      if (flows_[u.flow].rate > r * (1 + kConstrainSlack)) {
        fastest = false;
        break;
      }
    if (fastest) return true;
  }
  return false;
}

bool FlowNetwork::each_part_bottlenecked(FlowId flow, std::span<const LinkId> path, std::size_t parts) {
  check_flow(flow, "each_part_bottlenecked");
  const Flow& f = flows_[flow];
  const std::size_t len = parts > 0 ? path.size() / parts : 0;
  if (!f.lone) {
    for (std::size_t k = 0; k < parts; ++k)
      if (!bottlenecked_on(flow, path.subspan(k * len, len))) return false;
    return true;
  }
  // Lone: mark the links it fills once, then look for a mark in each part: O(path),
  // where asking bottlenecked_on of every part would cost parts × path.
  const std::uint32_t ep = next_epoch();
  for (const Hop& h : f.path)
    if (fills(h.link, h.mult * f.rate)) hot_[h.link].mark = ep;
  for (std::size_t k = 0; k < parts; ++k) {
    bool found = false;
    for (LinkId lid : path.subspan(k * len, len)) found = found || hot_[lid].mark == ep;
    if (!found) return false;
  }
  return true;
}

Time FlowNetwork::finish_time(FlowId flow) const {
  check_flow(flow, "finish_time");
  return flows_[flow].finish;
}

std::uint32_t FlowNetwork::version(FlowId flow) const {
  if (flow >= flows_.size())
    throw std::invalid_argument(fmt::format("FlowNetwork::version: unknown flow {}", flow));
  return flows_[flow].version;
}

double FlowNetwork::rate(FlowId flow) const {
  check_flow(flow, "rate");
  return flows_[flow].rate;
}

double FlowNetwork::remaining_bytes(FlowId flow, Time now) const {
  check_flow(flow, "remaining_bytes");
  const Flow& f = flows_[flow];
  return std::max(0.0, f.remaining - f.rate * (now - f.updated).seconds());
}

std::size_t FlowNetwork::active_flows() const { return active_; }

double FlowNetwork::link_bytes(LinkId link) const {
  check_link(link, "link_bytes");
  return stats_[link].bytes;
}

Time FlowNetwork::link_busy(LinkId link, Time now) const {
  check_link(link, "link_busy");
  const LinkStats& st = stats_[link];
  std::int64_t ps = st.busy_ps;
  if (hot_[link].active > 0 && now.ps() > st.busy_since) ps += now.ps() - st.busy_since;
  if (const FlowId o = hot_[link].lone_owner; o != kNoFlow && now > flows_[o].started) ps += (now - flows_[o].started).ps();
  return Time::from_ps(ps);
}

double FlowNetwork::link_payload_bytes(LinkId link) const {
  check_link(link, "link_payload_bytes");
  return stats_[link].payload;
}

void FlowNetwork::credit_link(LinkId link, double bytes, Time busy, Time bottleneck, double payload_bytes) {
  check_link(link, "credit_link");
  stats_[link].bytes += bytes;
  stats_[link].payload += payload_bytes;
  stats_[link].busy_ps += busy.ps();
  stats_[link].saturated_ps += bottleneck.ps();
}

void FlowNetwork::copy_link_stats(LinkId from, LinkId to, Time now) {
  check_link(from, "copy_link_stats");
  check_link(to, "copy_link_stats");
  if (hot_[to].active > 0 || hot_[to].lone_owner != kNoFlow)
    throw std::invalid_argument(fmt::format("FlowNetwork::copy_link_stats: link {} carries a flow", to));
  LinkStats& st = stats_[to];
  st.bytes = stats_[from].bytes;
  st.payload = stats_[from].payload;
  st.busy_ps = link_busy(from, now).ps();
  st.saturated_ps = link_bottleneck(from, now).ps();
  st.saturated = false;
}

Time FlowNetwork::link_bottleneck(LinkId link, Time now) const {
  check_link(link, "link_bottleneck");
  const LinkStats& st = stats_[link];
  std::int64_t ps = st.saturated_ps;
  if (st.saturated && now.ps() > st.saturated_since) ps += now.ps() - st.saturated_since;
  if (const FlowId o = hot_[link].lone_owner; o != kNoFlow && now > flows_[o].started) {
    const Flow& f = flows_[o];
    for (const Hop& h : f.path)
      if (h.link == link && fills(link, h.mult * f.rate)) ps += (now - f.started).ps();
  }
  return Time::from_ps(ps);
}

void FlowNetwork::set_link_namer(std::function<std::string(LinkId)> namer) { link_name_ = std::move(namer); }

void FlowNetwork::set_observer(LinkRateObserver* observer) { observer_ = observer; }

void FlowNetwork::watch(LinkId link, bool on) {
  check_link(link, "watch");
  if (on && hot_[link].lone_owner != kNoFlow) join_lone(hot_[link].lone_owner);
  hot_[link].watched = on;
}

}  // namespace ls::sim
