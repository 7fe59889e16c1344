// tools/study/search_estimate.cpp — the search's analytic stage (search_estimate.hpp).
#include "tools/study/search_estimate.hpp"

#include <algorithm>
#include <cstring>

#include "sim/hash.hpp"
#include "topology/planner.hpp"
#include "workloads/analysis/interference.hpp"
#include "workloads/build/program_totals.hpp"
#include "workloads/build/rank_groups.hpp"
#include "workloads/build/schedule_peak.hpp"
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

/// What the estimate adds up over one stage's ops (seconds per step), before the
/// step-wide slowdowns: all but `last_side` grow by one micro-batch's share for each
/// micro-batch past the schedule's warm-up (the header's file comment); `last_side`, the
/// stage's last gradient collective, is one collective whatever the count.
struct StageSums {
  bool present = false;
  double compute = 0;      // compute ops, expert work scaled by the stage's most loaded rank
  double blocking = 0;     // collectives on the compute stream
  double side = 0;         // the dp, prefetch and overlap streams' collectives and copies
  double interfering = 0;  // the share of `side` that slows compute (interference.hpp)
  double last_side = 0;
};

/// The tally of every op of each stage, or (microbatch >= 0) of the ops of that micro-batch only.
std::vector<StageTally> tally_stages(const sim::Program& prog, int microbatch = -1) {
  std::vector<StageTally> out(prog.stages.size());
  auto counted = [microbatch](const sim::Op& op) { return microbatch < 0 || op.labels[wl::label::microbatch] == microbatch; };
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
      if (!counted(op)) continue;
      if (op.kind == sim::OpKind::compute) (op.scaled_by_rank ? t.scaled_compute : t.compute) += op.duration.seconds();
      if (op.kind == sim::OpKind::collective) count(StageTally::Where::blocking, op);
    }
    for (auto s : {wl::stream::dp, wl::stream::prefetch, wl::stream::overlap})
      for (const auto& op : streams[static_cast<std::size_t>(s)]) {
        if (!counted(op)) continue;
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

/// The stages' sums: the tallies' collectives priced on the groups of `placed` (the
/// candidate's rank table).
std::vector<StageSums> price_stages(const std::vector<StageTally>& tallies, const PlacedRanks& placed, CollectiveTimes& times) {
  struct Seen {
    int gid;
    sim::CollOp coll;
    double bytes;
    double seconds;
  };
  std::vector<Seen> seen;  // this placement's (group, collective, bytes): a few dozen at most
  auto seconds = [&](const StageTally::Use& u, const PlacedRanks::Stage& stage) {
    const int gid = u.slot == sim::kNoGroup ? -1 : stage.group[u.slot];
    if (gid < 0) return 0.0;
    for (const Seen& s : seen)
      if (s.gid == gid && s.coll == u.coll && s.bytes == u.bytes) return s.seconds * u.calls;
    seen.push_back({gid, u.coll, u.bytes, times.seconds(stage.devices[u.slot], u.coll, u.bytes)});
    return seen.back().seconds * u.calls;
  };
  std::vector<StageSums> out(tallies.size());
  for (std::size_t st = 0; st < tallies.size() && st < placed.stages.size(); ++st) {
    const PlacedRanks::Stage& stage = placed.stages[st];
    if (!stage.present) continue;
    const StageTally& t = tallies[st];
    StageSums& o = out[st];
    o.present = true;
    o.compute = t.compute + t.scaled_compute * stage.max_work_scale;
    o.side = t.side_compute;
    for (const StageTally::Use& u : t.uses) {
      const double s = seconds(u, stage);
      if (u.where == StageTally::Where::blocking) {
        o.blocking += s;
        continue;
      }
      o.side += s;
      if (u.where == StageTally::Where::side_interfering) o.interfering += s;
    }
    if (t.last_dp) o.last_side = seconds(*t.last_dp, stage);
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

/// The estimated step time at `m` micro-batches of `programs`, placed as its program's
/// ranks are now: the tally of its ops, plus, when it was built at fewer micro-batches,
/// the tally of one micro-batch's ops for each micro-batch it lacks.
double step_of(const EstimatePrograms& programs, CollectiveTimes& times, int m, double bubble, const ComputeSlowdowns& slow) {
  const PlacedRanks& placed = *programs.placed;
  std::vector<StageSums> sums = price_stages(programs.all, placed, times);
  if (programs.built_at < m) {
    const double more = m - programs.built_at;
    const std::vector<StageSums> one = price_stages(programs.one_microbatch, placed, times);
    for (std::size_t st = 0; st < sums.size() && st < one.size(); ++st) {
      sums[st].compute += more * one[st].compute;
      sums[st].blocking += more * one[st].blocking;
      sums[st].side += more * one[st].side;
      sums[st].interfering += more * one[st].interfering;
    }
  }
  return combine_step(sums, bubble, slow);
}

}  // namespace

double CollectiveTimes::seconds(std::vector<std::int32_t> devices, sim::CollOp coll, double bytes) {
  Key key{static_cast<int>(coll), bytes, std::move(devices)};
  if (auto it = times_.find(key); it != times_.end()) return it->second;
  // A planner of its own: the plan is needed once (its time is what is kept), and a
  // planner kept for the search would keep every plan it ever built.
  topo::Planner planner(cluster_, ideal_, costs_);
  const double s = topo::idle_network_seconds(cluster_, planner.collective(key.devices, coll, bytes));
  times_.emplace(std::move(key), s);
  return s;
}

const wl::KernelPassCosts& PassCostsMemo::of(const wl::Scenario& candidate) {
  const wl::PassCostsLayout key(candidate.layout);
  auto it = kept_.find(key);
  if (it == kept_.end()) it = kept_.emplace(key, std::make_unique<const wl::KernelPassCosts>(candidate)).first;
  return *it->second;
}

PlacedRanks placed_ranks(const sim::Program& prog) {
  PlacedRanks out;
  out.ranks.reserve(prog.ranks.size());
  out.stages.resize(prog.stages.size());
  for (const auto& r : prog.ranks) {
    out.ranks.push_back({r.stage, r.work_scale});
    const auto st = static_cast<std::size_t>(r.stage);
    if (st >= out.stages.size()) continue;
    PlacedRanks::Stage& stage = out.stages[st];
    stage.max_work_scale = std::max(stage.max_work_scale, r.work_scale);
    if (stage.present) continue;
    stage.present = true;
    stage.group = r.group;
    for (std::size_t slot = 0; slot < r.group.size(); ++slot) {
      if (r.group[slot] < 0) continue;
      for (const auto m : prog.groups[static_cast<std::size_t>(r.group[slot])].ranks)
        stage.devices[slot].push_back(prog.ranks[static_cast<std::size_t>(m)].device);
    }
  }
  return out;
}

std::shared_ptr<const PlacedRanks> PlacementMemo::of(const wl::Scenario& candidate) {
  const wl::LayoutSpec& L = candidate.layout;
  wl::RankTableKey key(candidate);
  if (const auto it = kept_.find(key); it != kept_.end()) return it->second;
  // The table as build_program would assign it (the same expert routing), read once.
  sim::Program table;
  table.stages.resize(static_cast<std::size_t>(std::max(1, L.pp)));
  const std::optional<wl::Routing> routing = wl::expert_routing(candidate);
  wl::assign_ranks_and_groups(candidate, routing ? &*routing : nullptr, table);
  auto placed = std::make_shared<const PlacedRanks>(placed_ranks(table));
  if (ranks_ + placed->ranks.size() > kMaxRanks) {
    kept_.clear();
    ranks_ = 0;
  }
  ranks_ += placed->ranks.size();
  kept_.emplace(std::move(key), placed);
  return placed;
}

std::size_t CollectiveTimes::KeyHash::operator()(const Key& k) const {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &k.bytes, sizeof bits);
  return static_cast<std::size_t>(sim::hash_ints(sim::splitmix64(static_cast<std::uint64_t>(k.coll) ^ sim::splitmix64(bits)), k.devices));
}

std::optional<ExtrapolationPlan> extrapolation_plan(const wl::Scenario& sc) {
  const wl::LayoutSpec& L = sc.layout;
  const int p = std::max(1, L.pp), M = L.microbatches;
  // Gradient reductions after every micro-batch (ZeRO-2/3 without a full gradient
  // buffer) and ZeRO-3's gathers before every pass are labelled with no micro-batch:
  // one micro-batch's labelled ops would miss them.
  const bool unlabelled_per_microbatch = (L.zero >= 2 && L.dp * L.cp > 1 && !L.accumulate_unsharded) ||
                                         (L.zero >= 3 && wl::zero_shard_ranks(L) > 1);
  if (unlabelled_per_microbatch) return std::nullopt;
  // The tally needs a first, a middle and a last micro-batch (the first accumulates no
  // gradient, the last reduces the step's): 3, or the fewest the schedule takes.
  int fewest = 3;
  // Past the warm-up the peak stays where it is: `steady` micro-batches.
  int steady = 0;
  switch (L.schedule) {
    // GPipe holds every micro-batch's activations: its peak grows with M. DualPipe
    // feeds micro-batches from both ends: a micro-batch's ops on a stage are one
    // direction's, not the average of the two.
    case wl::Schedule::gpipe:
    case wl::Schedule::dualpipe: return std::nullopt;
    // 1F1B holds at most p − s micro-batches from m ≥ p on.
    case wl::Schedule::one_f_one_b: steady = std::max(3, p); break;
    // Interleaved: a multiple of p past the warm-up min(m·v, 2(p−s−1) + (v−1)·p),
    // which m ≥ 2p is for every v ≥ 1 (m = p is a case of its own: all forwards first).
    case wl::Schedule::interleaved_1f1b:
      fewest = p * ((3 + p - 1) / p);
      steady = std::max(3, 2 * p);
      break;
    // The zero-bubble replays hold at most p (zb-h1, zb-v) or 2p (zb-2p) micro-batches.
    case wl::Schedule::zb_h1:
    case wl::Schedule::zb_2p:
    case wl::Schedule::zb_v: steady = std::max(3, 2 * p); break;
  }
  // Activation offload's reloads hold memory across items: its peak is a program's own.
  if (L.offload.activations) fewest = steady;
  if (M <= fewest) return std::nullopt;
  return ExtrapolationPlan{fewest, fewest / 2, std::min(M, steady)};
}

std::string invalid_layout(const wl::Scenario& sc) {
  std::vector<wl::LayoutError> errors = wl::validate(sc);
  if (sc.layout.microbatches > wl::kMaxMicrobatches) errors.push_back({"layout.global_batch", "too many micro-batches", ""});
  if (errors.empty()) return {};
  std::string key = errors.front().key_path;
  if (key.rfind("layout.", 0) == 0) key = key.substr(7);
  return "invalid-" + (key.empty() ? std::string("layout") : key);
}

Estimate analyze(const wl::Scenario& sc, EstimateCaches& caches, const ComputeSlowdowns& slow,
                 std::optional<EstimatePrograms>& programs, EstimateBuild how) {
  Estimate e;
  e.rejected = invalid_layout(sc);
  if (!e.rejected.empty()) return e;
  // What the program is priced and split with, made once for the bound and the builds
  // (none of it depends on the micro-batch count the program is built at).
  const wl::ProgramInputs inputs(sc, caches.costs.of(sc));
  // Most candidates that do not fit are caught here, without building the program.
  e.peak_bytes = memory_lower_bound(sc, inputs);
  if (!fits_with_margin(sc, e.peak_bytes)) {
    e.rejected = "memory";
    return e;
  }
  const int M = sc.layout.microbatches;
  ExtrapolationPlan plan{M, -1, M};  // the candidate's own program
  if (how == EstimateBuild::extrapolate)
    if (const auto fewer = extrapolation_plan(sc)) plan = *fewer;
  EstimatePrograms& ps = programs.emplace();
  std::vector<double> activation_peaks;
  if (plan.built_at < M) {
    wl::Scenario fewer = sc;
    fewer.layout.microbatches = plan.built_at;
    ps.built = wl::build_program(fewer, inputs, wl::RankTable::omit);
    ps.built_at = plan.built_at;
    ps.one_microbatch = tally_stages(ps.built.program, plan.microbatch);
    if (plan.peak_at > plan.built_at) {
      if (const auto items = wl::ItemMemory::read(ps.built.program, fewer.layout)) {
        activation_peaks = items->peaks(plan.peak_at, plan.microbatch);
      } else {
        fewer.layout.microbatches = plan.peak_at;
        activation_peaks = wl::program_totals(wl::build_program(fewer, inputs, wl::RankTable::omit).program).activation_peak_bytes;
        ps.peak_built_at = true;
      }
    }
  } else {
    ps.built = wl::build_program(sc, inputs, wl::RankTable::omit);
    ps.built_at = M;
  }
  ps.all = tally_stages(ps.built.program);
  ps.placed = caches.placements.of(sc);
  const wl::ProgramTotals totals = wl::program_totals(ps.built.program, ps.placed->ranks);
  // Past the warm-up the activation peak is the same at M; the model FLOPs are all in
  // the micro-batches' passes.
  // The static state does not depend on the micro-batch count the program was built at.
  e.peak_bytes = wl::device_peak_bytes(ps.built.static_memory, activation_peaks.empty() ? totals.activation_peak_bytes : activation_peaks);
  e.model_flops = totals.model_flops * (static_cast<double>(M) / ps.built_at);
  e.bubble = wl::analytic_bubble(sc.layout.schedule, sc.layout.pp, M, std::max(1, sc.layout.virtual_stages));
  e.tokens = static_cast<double>(M) * sc.layout.microbatch_size * sc.layout.dp * static_cast<double>(sc.model.seq_len);
  if (!fits_with_margin(sc, e.peak_bytes)) {
    e.rejected = "memory";
    return e;
  }
  e.step_s = step_of(ps, caches.times, M, e.bubble, slow);
  return e;
}

bool same_but_placement(const SearchLayout& a, const SearchLayout& b) {
  SearchLayout x = a;
  x.placement = b.placement;
  return x == b;
}

void analyze_run(const std::vector<wl::Scenario>& run, EstimateCaches& caches, const ComputeSlowdowns& slow, Estimate* out) {
  std::optional<EstimatePrograms> programs;
  std::optional<Estimate> shared;  // the first analysed member's verdict, kept or "memory"
  for (std::size_t i = 0; i < run.size(); ++i) {
    const wl::Scenario& sc = run[i];
    if (!shared) {
      out[i] = analyze(sc, caches, slow, programs);
      if (out[i].rejected.empty() || out[i].rejected == "memory") shared = out[i];
      continue;
    }
    out[i].rejected = invalid_layout(sc);
    if (!out[i].rejected.empty()) continue;
    out[i] = *shared;
    if (!shared->rejected.empty()) continue;
    programs->placed = caches.placements.of(sc);
    out[i].step_s = step_of(*programs, caches.times, sc.layout.microbatches, shared->bubble, slow);
  }
}

double memory_lower_bound(const wl::Scenario& sc) { return memory_lower_bound(sc, wl::ProgramInputs(sc)); }

double memory_lower_bound(const wl::Scenario& sc, const wl::ProgramInputs& in) {
  double bound = 0;
  for (int st = 0; st < sc.layout.pp; ++st) {
    const auto& chunks = in.layers.chunks[static_cast<std::size_t>(st)];
    const wl::MemoryTerms m = wl::static_memory(sc, in.params, chunks, st, wl::stage_params(sc, in.params, chunks, st));
    const double held = m.weights + m.gradients + m.master + m.optimizer + m.buffers;
    // Activation offload keeps only a few layers of a micro-batch on the GPU: the
    // static state alone is the bound then.
    const double act = sc.layout.offload.activations ? 0.0 : wl::activation_bytes_per_microbatch(sc, in.bytes, chunks, st);
    bound = std::max(bound, held + act);
  }
  return bound;
}

}  // namespace ls::tools
