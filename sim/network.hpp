// sim/network.hpp — flow-level network with max-min fair sharing.
//
// A flow moves `bytes` over a path of directed links (a link may appear several
// times in one path: it then carries the flow's rate that many times — the
// "multiplicity"). All active flows share every link by max-min fairness
// (progressive filling, Bertsekas & Gallager, "Data Networks", §6.5.2). Rates are
// re-solved lazily: start()/finish() only mark links dirty; resolve() re-solves
// just the connected component(s) of flows reachable from dirty links, so one new
// flow inside a node does not touch the rest of the cluster. Flows are coupled
// only through links that can saturate (Σ over their flows of the flow's own
// bottleneck-free bound exceeds the capacity); see network.cpp.
//
// Units: bandwidth in bytes/s, sizes in bytes, time in sim::Time (integer ps).
// Ownership: the network owns its flows; FlowIds are recycled after finish().
// Not thread-safe; one network per simulation (no global state).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "sim/time.hpp"

namespace ls::sim {

using LinkId = std::uint32_t;
using FlowId = std::uint32_t;

/// The TimeRangeError of a flow whose drain would end past the range: the message
/// names the flow's bottleneck link, not the inputs that set its bandwidth or bytes,
/// so the layer that knows them may say what to check.
struct DrainTimeRangeError : TimeRangeError {
  using TimeRangeError::TimeRangeError;
};

/// Receives the aggregate rate of a watched link whenever resolve() changes it.
class LinkRateObserver {
public:
  virtual ~LinkRateObserver() = default;
  virtual void on_link_rate(LinkId link, Time now, double rate_Bps) = 0;
};

class FlowNetwork {
public:
  /// One entry per directed link: its capacity in bytes/s (> 0).
  explicit FlowNetwork(std::vector<double> link_bandwidth_Bps);

  std::size_t link_count() const;
  double bandwidth(LinkId link) const;
  /// Changes a link's capacity (perturbations); marks it dirty. O(1). 0 is allowed
  /// (a failed link): its flows then get rate 0 and finish_time() Time::max().
  void set_bandwidth(LinkId link, double bandwidth_Bps);

  /// Starts a flow at `now`. `bytes` >= 0. The path must be non-empty.
  /// O(path length). The rate is 0 until the next resolve(). A 0-byte flow takes
  /// no bandwidth: its finish_time() is `now` and the next resolve() reports it.
  /// When `may_run_alone` and no other flow uses (nor an observer watches) any link
  /// of the path, the flow is lone (see network.cpp): lone(flow) is true and its rate
  /// and finish_time() are final at once, until another flow starts on one of its
  /// links; no resolve() is needed for it. Pass false where the caller inspects the
  /// flow after resolves (the symmetric fast path's tied flows).
  /// `payload_fraction` (in (0, 1]) of the bytes is payload, the rest protocol overhead
  /// (link_payload_bytes). Throws std::invalid_argument / std::out_of_range on a bad
  /// path, size or fraction.
  FlowId start(Time now, std::span<const LinkId> path, double bytes, bool may_run_alone = true, double payload_fraction = 1);
  /// True while the flow runs lone: finishing it changes no other flow's rate, so
  /// the caller need not resolve() after finish().
  bool lone(FlowId flow) const { return flows_[flow].lone; }

  /// Re-solves the rates of every flow in a component touched since the last call
  /// and appends to `changed` each flow whose projected finish time changed (the
  /// caller reschedules those; see finish_time()/version()). Cost: O(F·P·log L)
  /// for the F flows and their P-link paths in the touched components.
  void resolve(Time now, std::vector<FlowId>& changed);

  /// Projected time at which the flow's last byte leaves (ceil to the picosecond),
  /// given the current rates. Time::max() while its rate is 0.
  Time finish_time(FlowId flow) const;
  /// Incremented every time finish_time(flow) changes: lets the engine drop stale
  /// completion events without a cancellable queue.
  std::uint32_t version(FlowId flow) const;
  double rate(FlowId flow) const;
  double remaining_bytes(FlowId flow, Time now) const;

  /// Removes a flow (normally at its finish time); its bytes are credited to every
  /// link of its path (times multiplicity) and its links are marked dirty. Bumps
  /// version(flow); the id may be reused by a later start(). Throws
  /// std::invalid_argument if the flow is not active.
  void finish(Time now, FlowId flow);

  std::size_t active_flows() const;

  // Per-link statistics, cumulative since construction.
  /// Bytes carried on the wire (credited when a flow finishes).
  double link_bytes(LinkId link) const;
  /// The payload share of link_bytes (each flow's bytes × its payload_fraction).
  double link_payload_bytes(LinkId link) const;
  /// Time during which at least one flow was active on the link, up to `now`.
  Time link_busy(LinkId link, Time now) const;
  /// Adds bytes, busy and saturated time to a link's statistics as if flows had
  /// crossed it (the symmetric fast path: the traffic of replicas it did not simulate).
  void credit_link(LinkId link, double bytes, Time busy, Time bottleneck, double payload_bytes);
  /// Makes `to`'s statistics up to `now` those of `from` (the symmetric fast path: a link
  /// whose traffic its runner's twin carried, workloads/build/symmetry.hpp). `to` must
  /// carry no flow now; throws std::invalid_argument otherwise.
  void copy_link_stats(LinkId from, LinkId to, Time now);
  /// Time during which the link was saturated (its flows' rates add up to its
  /// capacity), up to `now`. Under max-min fairness a saturated link is the
  /// bottleneck of its fastest flow (Bertsekas & Gallager §6.5.2), so this is the
  /// time the link limited some flow; every flow has such a link on its path.
  /// Updated at each resolve() for the links it re-solved: O(1) per link.
  Time link_bottleneck(LinkId link, Time now) const;

  /// Optional link names for messages: a drain time outside the range of sim::Time
  /// names the flow's bottleneck link. Without them: "link #ID". The namer is asked only
  /// then, so a network over 10^5 links names none of them in a run that ends in range
  /// (it must outlive the network's last resolve).
  void set_link_namer(std::function<std::string(LinkId)> namer);

  /// Optional observer for the links flagged with watch(); not owned.
  void set_observer(LinkRateObserver* observer);
  void watch(LinkId link, bool on = true);

  /// The flows the last resolve() re-solved (every flow of every touched component).
  std::span<const FlowId> last_resolved_flows() const { return comp_flows_; }
  /// True when `flow` is max-min bottlenecked on one of `links` (a subset of its
  /// path): some link there is saturated and carries no flow faster than `flow`
  /// (relative 1e-9). The symmetric fast path asks it of each copy a tied flow
  /// stands for: the allocation is the untied one exactly when every copy has such
  /// a link (Bertsekas & Gallager §6.5.2: an allocation is max-min fair iff every
  /// flow has a bottleneck link). O(Σ flows on `links`).
  bool bottlenecked_on(FlowId flow, std::span<const LinkId> links) const;
  /// bottlenecked_on for each of the `parts` equal consecutive parts of `path` (a
  /// tied flow's copies): true when every part holds a bottleneck of the flow.
  /// O(Σ flows on `path`); O(path) for a lone flow.
  bool each_part_bottlenecked(FlowId flow, std::span<const LinkId> path, std::size_t parts);

  /// Diagnostics of the last resolve(): flows re-solved, links visited.
  std::size_t last_resolve_flows() const { return comp_flows_.size(); }
  std::size_t last_resolve_links() const { return comp_links_.size(); }

private:
  // One (flow, path slot) entry in a link's list of flows; `slot` indexes the
  // flow's `path`, so a removal can fix the back-pointer of the entry it moves.
  struct Use {
    FlowId flow = 0;
    std::uint32_t slot = 0;
  };
  // One distinct link of a flow's path: multiplicity and position in link_flows_[link].
  struct Hop {
    LinkId link = 0;
    std::uint32_t mult = 0;
    std::uint32_t pos = 0;
  };
  // Link data every resolve() pass touches, kept small (one cache line) and apart
  // from the statistics so that a re-solve walks as little memory as possible.
  struct LinkHot {
    double capacity = 0;        // bytes/s
    double ub_sum = 0;          // Σ mult × ub over its active flows (see network.cpp)
    double cap_left = 0;        // resolve() scratch: capacity not yet allotted
    std::uint32_t weight_left = 0;  // resolve() scratch: Σ mult of unfrozen flows
    std::uint32_t stamp = 0;    // resolve() scratch: bumped on every change (lazy heap)
    std::uint32_t mark = 0;     // epoch mark (BFS, path de-duplication)
    std::uint32_t slot = 0;     // start() scratch: the link's place in the new flow's path
    std::uint32_t active = 0;   // Σ multiplicities of the active flows
    std::uint32_t nflows = 0;   // distinct active flows
    std::uint32_t lone_owner = kNoFlow;  // the lone flow on this link, if any
    bool dirty = false;
    bool constraining = false;  // resolve() scratch: may saturate (in the heap)
    bool watched = false;       // an observer receives its rate (watch()); read by every start()
  };
  struct LinkStats {
    double rate_sum = 0;        // aggregate rate (with multiplicity), kept incrementally
    double reported = 0;        // last rate_sum given to the observer
    double bytes = 0;           // cumulative bytes carried
    double payload = 0;         // the payload share of `bytes`
    std::int64_t busy_ps = 0;   // cumulative busy time, closed intervals
    std::int64_t busy_since = 0;
    std::int64_t saturated_ps = 0;     // cumulative saturated time, closed intervals
    std::int64_t saturated_since = 0;
    bool saturated = false;     // as of the last resolve() that visited the link
  };
  struct Flow {
    std::vector<Hop> path;      // distinct links with multiplicity
    double bytes_total = 0;
    double payload_total = 0;   // bytes_total × payload_fraction
    double remaining = 0;       // as of `updated`
    double rate = 0;            // bytes/s
    double ub = 0;              // min over the path of capacity / mult
    double new_rate = 0;        // resolve() scratch
    Time updated;
    Time started;               // lone flows: busy (and maybe saturating) their links since
    Time finish = Time::max();
    std::uint32_t version = 0;
    std::uint32_t mark = 0;
    bool active = false;
    bool fixed = false;         // resolve() scratch: rate frozen by progressive filling
    bool lone = false;          // alone on its links, outside the link lists (network.cpp)
  };
  // A link (fair share cap_left / weight_left when pushed) or, with kFlowBit set
  // in `id`, a flow's own rate bound `ub` (see network.cpp).
  struct HeapEntry {
    std::uint64_t key = 0;      // bit pattern of the share (>= 0), see network.cpp
    std::uint32_t id = 0;
    std::uint32_t stamp = 0;
  };
  static constexpr std::uint32_t kFlowBit = 0x8000'0000u;
  static constexpr FlowId kNoFlow = UINT32_MAX;

  std::uint32_t next_epoch();
  void mark_dirty(LinkId link);
  void discover(LinkId link, std::uint32_t epoch);
  void join_lone(FlowId flow);
  /// Whether flows at `rate_sum` (with multiplicity) saturate the link: the one test
  /// behind link_bottleneck, bottlenecked_on and the lone flows' statistics.
  bool fills(LinkId link, double rate_sum) const;
  void freeze(Flow& f, double rate);
  void check_link(LinkId link, const char* what) const;
  void check_flow(FlowId flow, const char* what) const;

  std::vector<LinkHot> hot_;
  std::vector<LinkStats> stats_;
  std::function<std::string(LinkId)> link_name_;  // set_link_namer (messages only)
  std::vector<std::vector<Use>> link_flows_;  // active flows of each link, once per flow
  std::vector<Flow> flows_;
  std::vector<FlowId> free_ids_;
  std::vector<LinkId> dirty_;
  std::vector<std::pair<FlowId, std::uint32_t>> zero_pending_;  // (flow, version) of 0-byte flows
  std::size_t active_ = 0;
  std::uint32_t epoch_ = 0;
  LinkRateObserver* observer_ = nullptr;
  // Scratch buffers reused by resolve() (no allocation in steady state).
  std::vector<FlowId> comp_flows_;
  std::vector<LinkId> comp_links_;
  std::vector<HeapEntry> heap_;
};

}  // namespace ls::sim
