// tools/study/search_estimate.cpp — the search's analytic stage (search_estimate.hpp).
#include "tools/study/search_estimate.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "sim/hash.hpp"
#include "topology/planner.hpp"
#include "workloads/analysis/interference.hpp"
#include "workloads/build/program_totals.hpp"
#include "workloads/build/rank_groups.hpp"
#include "workloads/build/stage_layers.hpp"
#include "workloads/build/stage_memory.hpp"
#include "workloads/cost/pass_costs.hpp"
#include "workloads/model/headroom.hpp"
#include "workloads/model/layout.hpp"
#include "workloads/model/schedule.hpp"
#include "workloads/spec/vocabulary.hpp"

namespace ls::tools {

bool fits_with_margin(const wl::Scenario& sc, double peak_bytes) {
  return wl::memory_verdict(sc, peak_bytes) == wl::MemoryVerdict::fits;
}

namespace {

/// A collective's time on an idle network: per phase, each flow drains at its
/// bottleneck link's bandwidth shared among the flow traversals of the phase on that
/// link (max-min's answer when the flows are alike), plus the phase's latency.
double idle_network_seconds(const topo::Cluster& cluster, const sim::CommPlan& plan) {
  double total = 0;
  std::map<topo::LinkId, int> uses;
  for (const auto& phase : plan.phases) {
    uses.clear();
    for (const auto& f : phase.flows)
      for (std::uint32_t i = 0; i < f.path_len; ++i) ++uses[plan.links[f.path_begin + i]];
    double drain = 0;
    for (const auto& f : phase.flows) {
      double rate = std::numeric_limits<double>::infinity();
      for (std::uint32_t i = 0; i < f.path_len; ++i) {
        const topo::LinkId l = plan.links[f.path_begin + i];
        rate = std::min(rate, cluster.link(l).bandwidth_Bps / uses[l]);
      }
      if (rate > 0 && std::isfinite(rate)) drain = std::max(drain, f.bytes / rate);
    }
    total += drain + phase.latency.seconds();
  }
  return total;
}

/// What estimate_step adds up over one stage's ops (seconds per step), before the
/// step-wide slowdowns: each an affine function of the micro-batch count past the
/// schedule's warm-up (the file comment of the header), but for `last_side`, the
/// stage's last gradient collective, which is one collective whatever the count.
struct StageSums {
  bool present = false;
  double compute = 0;      // compute ops, expert work scaled by the stage's most loaded rank
  double blocking = 0;     // collectives on the compute stream
  double side = 0;         // the dp, prefetch and overlap streams' collectives and copies
  double interfering = 0;  // the share of `side` that slows compute (interference.hpp)
  double last_side = 0;
};

std::vector<StageTally> tally_stages(const sim::Program& prog) {
  std::vector<StageTally> out(prog.stages.size());
  for (std::size_t st = 0; st < prog.stages.size(); ++st) {
    StageTally& t = out[st];
    std::size_t last = 0;  // where the previous lookup hit: a stage's ops repeat a short pattern
    auto count = [&](StageTally::Where where, const sim::Op& op) {
      for (std::size_t n = 0; n < t.uses.size(); ++n) {
        const std::size_t i = (last + n) % t.uses.size();
        StageTally::Use& u = t.uses[i];
        if (u.where == where && u.slot == op.group_slot && u.coll == op.coll && u.bytes == op.bytes) {
          u.calls += op.repeat;
          last = i;
          return;
        }
      }
      t.uses.push_back({where, op.group_slot, op.coll, op.bytes, static_cast<double>(op.repeat)});
      last = t.uses.size() - 1;
    };
    const auto& streams = prog.stages[st].streams;
    for (const auto& op : streams[static_cast<std::size_t>(wl::stream::compute)]) {
      if (op.kind == sim::OpKind::compute) (op.scaled_by_rank ? t.scaled_compute : t.compute) += op.duration.seconds();
      if (op.kind == sim::OpKind::collective) count(StageTally::Where::blocking, op);
    }
    for (auto s : {wl::stream::dp, wl::stream::prefetch, wl::stream::overlap})
      for (const auto& op : streams[static_cast<std::size_t>(s)]) {
        // Timed ops beside compute (activation offload's PCIe copies) hold their stream too.
        if (op.kind == sim::OpKind::compute) t.side_compute += op.duration.seconds();
        if (op.kind != sim::OpKind::collective) continue;
        const bool interferes = (wl::interference_streams() >> static_cast<unsigned>(s)) & 1U;
        count(interferes ? StageTally::Where::side_interfering : StageTally::Where::side_quiet, op);
        if (s == wl::stream::dp)
          t.last_dp = StageTally::Use{StageTally::Where::side_quiet, op.group_slot, op.coll, op.bytes, static_cast<double>(op.repeat)};
      }
  }
  return out;
}

/// The stages' sums: the tallies' collectives priced on the groups of `placed` (a
/// program of the same layout whose ranks and groups are the candidate's).
std::vector<StageSums> price_stages(const std::vector<StageTally>& tallies, const sim::Program& placed, CollectiveTimes& times) {
  const sim::Program& prog = placed;
  struct Seen {
    int gid;
    sim::CollOp coll;
    double bytes;
    double seconds;
  };
  std::vector<Seen> seen;  // this placement's (group, collective, bytes): a few dozen at most
  auto seconds = [&](const StageTally::Use& u, const sim::RankInfo& rank) {
    const int gid = u.slot == sim::kNoGroup ? -1 : rank.group[u.slot];
    if (gid < 0) return 0.0;
    for (const Seen& s : seen)
      if (s.gid == gid && s.coll == u.coll && s.bytes == u.bytes) return s.seconds * u.calls;
    const auto& grp = prog.groups[static_cast<std::size_t>(gid)];
    std::vector<std::int32_t> devices;
    devices.reserve(grp.ranks.size());
    for (auto r : grp.ranks) devices.push_back(prog.ranks[static_cast<std::size_t>(r)].device);
    seen.push_back({gid, u.coll, u.bytes, times.seconds(std::move(devices), u.coll, u.bytes)});
    return seen.back().seconds * u.calls;
  };
  // Each stage's first rank (whose groups price its collectives) and its most loaded
  // rank's expert work, which sets the stage's pace: one pass over the ranks.
  std::vector<const sim::RankInfo*> first(prog.stages.size(), nullptr);
  std::vector<double> load(prog.stages.size(), 0.0);
  for (const auto& r : prog.ranks) {
    const auto st = static_cast<std::size_t>(r.stage);
    if (st >= first.size()) continue;
    if (!first[st]) first[st] = &r;
    load[st] = std::max(load[st], r.work_scale);
  }
  std::vector<StageSums> out(tallies.size());
  for (std::size_t st = 0; st < tallies.size() && st < first.size(); ++st) {
    const sim::RankInfo* rep = first[st];
    if (!rep) continue;
    const StageTally& t = tallies[st];
    StageSums& o = out[st];
    o.present = true;
    o.compute = t.compute + t.scaled_compute * load[st];
    o.side = t.side_compute;
    for (const StageTally::Use& u : t.uses) {
      const double s = seconds(u, *rep);
      if (u.where == StageTally::Where::blocking) {
        o.blocking += s;
        continue;
      }
      o.side += s;
      if (u.where == StageTally::Where::side_interfering) o.interfering += s;
    }
    if (t.last_dp) o.last_side = seconds(*t.last_dp, *rep);
  }
  return out;
}

/// The estimated step time from the stages' sums:
///   step ≈ max over stages of (compute·noise·interference + blocking TP/EP collectives)
///            / (1 − bubble)
///          + the gradient / parameter traffic (dp and prefetch streams) and the
///            activation offload's PCIe copies that the stage's compute cannot
///            hide, and at least its last collective
///            (the final gradient bucket runs after the last backward).
/// noise is the slowest of the step's GPUs (scale_noise.hpp, as the simulation applies
/// it); interference is the simulation's 1 + (ρ − 1)·overlap/compute (interference.hpp)
/// with the overlap taken as all of the side streams' collective time that compute can
/// cover: a candidate that hides more traffic behind its compute pays for it here too.
/// The bubble is the schedule's analytic one (schedule.hpp). Pipeline sends overlap
/// compute and are left out; contention between concurrent collectives too: the
/// simulation of the best candidates prices both.
double combine_step(const std::vector<StageSums>& stages, double bubble, const ComputeSlowdowns& slow) {
  double busiest = 0, exposed = 0;
  for (const StageSums& o : stages) {
    if (!o.present) continue;
    double compute_s = o.compute * slow.noise;
    compute_s *= wl::interference_factor(slow.rho, o.interfering, compute_s);
    const double main_s = compute_s + o.blocking;
    busiest = std::max(busiest, main_s);
    exposed = std::max(exposed, std::max(o.side - main_s, o.last_side));
  }
  return busiest / std::max(1e-9, 1.0 - bubble) + exposed;
}

/// What analyze() reads off one built program.
struct ProgramFigures {
  std::vector<StageSums> stages;
  double peak_bytes = 0, model_flops = 0;
};

/// The memory peak and model FLOPs of one built program (the stage sums are the caller's).
ProgramFigures program_figures(const wl::BuiltProgram& bp) {
  ProgramFigures f;
  const wl::ProgramTotals totals = wl::program_totals(bp.program);
  for (std::size_t st = 0; st < bp.static_memory.size(); ++st) {
    const auto& m = bp.static_memory[st];
    const double peak = m.weights + m.gradients + m.master + m.optimizer + m.buffers + totals.activation_peak_bytes[st];
    f.peak_bytes = std::max(f.peak_bytes, peak);
  }
  f.model_flops = totals.model_flops;
  return f;
}

/// The value at `m` of the line through (a, ya) and (b, yb).
double along(double ya, double yb, int a, int b, int m) {
  return ya + (yb - ya) * (static_cast<double>(m - a) / static_cast<double>(b - a));
}

/// The figures of `programs` at `m` micro-batches: the one program's, or the line's.
ProgramFigures figures_at(const std::vector<ProgramFigures>& f, const EstimatePrograms& programs, int m) {
  if (f.size() == 1) return f.front();
  const int a = programs.microbatches[0], b = programs.microbatches[1];
  ProgramFigures out;
  out.peak_bytes = along(f[0].peak_bytes, f[1].peak_bytes, a, b, m);
  out.model_flops = along(f[0].model_flops, f[1].model_flops, a, b, m);
  out.stages = f[1].stages;
  for (std::size_t st = 0; st < out.stages.size() && st < f[0].stages.size(); ++st) {
    const StageSums &x = f[0].stages[st], &y = f[1].stages[st];
    StageSums& o = out.stages[st];
    o.compute = along(x.compute, y.compute, a, b, m);
    o.blocking = along(x.blocking, y.blocking, a, b, m);
    o.side = along(x.side, y.side, a, b, m);
    o.interfering = along(x.interfering, y.interfering, a, b, m);
  }
  return out;
}

/// The estimated step time at `m` micro-batches of `programs`, placed as the first one's
/// ranks are now.
double step_of(const EstimatePrograms& programs, CollectiveTimes& times, int m, double bubble, const ComputeSlowdowns& slow) {
  std::vector<ProgramFigures> f;
  const sim::Program& placed = programs.built.front().program;
  for (const auto& t : programs.tallies) f.push_back(ProgramFigures{price_stages(t, placed, times), 0, 0});
  return combine_step(figures_at(f, programs, m).stages, bubble, slow);
}

}  // namespace

double CollectiveTimes::seconds(std::vector<std::int32_t> devices, sim::CollOp coll, double bytes) {
  Key key{static_cast<int>(coll), bytes, std::move(devices)};
  if (auto it = times_.find(key); it != times_.end()) return it->second;
  // A planner of its own: the plan is needed once (its time is what is kept), and a
  // planner kept for the search would keep every plan it ever built.
  topo::Planner planner(cluster_, ideal_);
  const double s = idle_network_seconds(cluster_, planner.collective(key.devices, coll, bytes));
  times_.emplace(std::move(key), s);
  return s;
}

std::size_t CollectiveTimes::KeyHash::operator()(const Key& k) const {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &k.bytes, sizeof bits);
  return static_cast<std::size_t>(sim::hash_ints(sim::splitmix64(static_cast<std::uint64_t>(k.coll) ^ sim::splitmix64(bits)), k.devices));
}

std::optional<std::pair<int, int>> extrapolation_microbatches(wl::Schedule schedule, int pp, int microbatches) {
  const int p = std::max(1, pp);
  int a = 0, b = 0;
  switch (schedule) {
    // 1F1B holds at most p − s micro-batches from m ≥ p on, GPipe all of them (affine
    // from the first): any two counts from p on, at least 2, so that the first
    // micro-batch's one-off work (first-use gathers, no accumulation add) is in both.
    case wl::Schedule::gpipe:
    case wl::Schedule::one_f_one_b:
      a = std::max(2, p);
      b = a + 1;
      break;
    // Interleaved: multiples of p, past the warm-up min(m·v, 2(p−s−1) + (v−1)·p), which
    // m ≥ 2p is for every v ≥ 1 (and m = p is a case of its own: all forwards first).
    case wl::Schedule::interleaved_1f1b:
      a = 2 * p;
      b = 3 * p;
      break;
    // The zero-bubble replays hold at most p (zb-h1, zb-v) or 2p (zb-2p) micro-batches,
    // DualPipe 2p and an even count: past those, a period of the steady state apart.
    case wl::Schedule::zb_h1:
    case wl::Schedule::zb_2p:
    case wl::Schedule::zb_v:
      a = 2 * p;
      b = 3 * p;
      break;
    case wl::Schedule::dualpipe:
      a = 2 * p;
      b = a + 2;
      break;
  }
  if (microbatches <= a + b) return std::nullopt;
  return std::pair{a, b};
}

std::string invalid_layout(const wl::Scenario& sc) {
  std::vector<wl::LayoutError> errors = wl::validate(sc);
  if (sc.layout.microbatches > wl::kMaxMicrobatches) errors.push_back({"layout.global_batch", "too many micro-batches", ""});
  if (errors.empty()) return {};
  std::string key = errors.front().key_path;
  if (key.rfind("layout.", 0) == 0) key = key.substr(7);
  return "invalid-" + (key.empty() ? std::string("layout") : key);
}

Estimate analyze(const wl::Scenario& sc, CollectiveTimes& times, const ComputeSlowdowns& slow,
                 std::optional<EstimatePrograms>& programs, EstimateBuild how) {
  Estimate e;
  e.rejected = invalid_layout(sc);
  if (!e.rejected.empty()) return e;
  // Most candidates that do not fit are caught here, without building the program.
  e.peak_bytes = memory_lower_bound(sc);
  if (!fits_with_margin(sc, e.peak_bytes)) {
    e.rejected = "memory";
    return e;
  }
  const int M = sc.layout.microbatches;
  EstimatePrograms& ps = programs.emplace();
  const auto pair = how == EstimateBuild::extrapolate ? extrapolation_microbatches(sc.layout.schedule, sc.layout.pp, M)
                                                      : std::nullopt;
  if (pair) {
    for (const int m : {pair->first, pair->second}) {
      wl::Scenario fewer = sc;
      fewer.layout.microbatches = m;
      ps.built.push_back(wl::build_program(fewer));
      ps.microbatches.push_back(m);
    }
  } else {
    ps.built.push_back(wl::build_program(sc));
    ps.microbatches.push_back(M);
  }
  std::vector<ProgramFigures> f;
  for (const auto& bp : ps.built) {
    f.push_back(program_figures(bp));
    ps.tallies.push_back(tally_stages(bp.program));
  }
  const ProgramFigures at = figures_at(f, ps, M);
  e.peak_bytes = at.peak_bytes;
  e.bubble = wl::analytic_bubble(sc.layout.schedule, sc.layout.pp, M, std::max(1, sc.layout.virtual_stages));
  e.model_flops = at.model_flops;
  e.tokens = static_cast<double>(M) * sc.layout.microbatch_size * sc.layout.dp * static_cast<double>(sc.model.seq_len);
  if (!fits_with_margin(sc, e.peak_bytes)) {
    e.rejected = "memory";
    return e;
  }
  e.step_s = step_of(ps, times, M, e.bubble, slow);
  return e;
}

bool same_but_placement(const SearchLayout& a, const SearchLayout& b) {
  SearchLayout x = a;
  x.placement = b.placement;
  return x == b;
}

void analyze_run(const std::vector<wl::Scenario>& run, CollectiveTimes& times, const ComputeSlowdowns& slow, Estimate* out) {
  std::optional<EstimatePrograms> programs;
  std::optional<Estimate> shared;  // the first analysed member's verdict, kept or "memory"
  for (std::size_t i = 0; i < run.size(); ++i) {
    const wl::Scenario& sc = run[i];
    if (!shared) {
      out[i] = analyze(sc, times, slow, programs);
      if (out[i].rejected.empty() || out[i].rejected == "memory") shared = out[i];
      continue;
    }
    out[i].rejected = invalid_layout(sc);
    if (!out[i].rejected.empty()) continue;
    out[i] = *shared;
    if (!shared->rejected.empty()) continue;
    // The other programs' ranks are not read (step_of prices every program on the first's).
    wl::BuiltProgram& bp = programs->built.front();
    wl::assign_ranks_and_groups(sc, sc.model.moe.experts > 0 ? &bp.routing : nullptr, bp.program);
    out[i].step_s = step_of(*programs, times, sc.layout.microbatches, shared->bubble, slow);
  }
}

double memory_lower_bound(const wl::Scenario& sc) {
  const wl::StageLayers layers = wl::stage_layers(sc);
  const wl::DeviceParams params(sc);
  const wl::PassBytes bytes = wl::pass_bytes(sc);
  double bound = 0;
  for (int st = 0; st < sc.layout.pp; ++st) {
    const auto& chunks = layers.chunks[static_cast<std::size_t>(st)];
    const wl::MemoryTerms m = wl::static_memory(sc, params, chunks, st, wl::stage_params(sc, params, chunks, st));
    const double held = m.weights + m.gradients + m.master + m.optimizer + m.buffers;
    // Activation offload keeps only a few layers of a micro-batch on the GPU: the
    // static state alone is the bound then.
    const double act = sc.layout.offload.activations ? 0.0 : wl::activation_bytes_per_microbatch(sc, bytes, chunks, st);
    bound = std::max(bound, held + act);
  }
  return bound;
}

}  // namespace ls::tools
