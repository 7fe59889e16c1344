// tools/study/search.cpp — `layoutsim search`: prune, estimate, simulate, rank (search.hpp).
#include "tools/study/search.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "tools/study/parallel_for.hpp"
#include "tools/study/search_estimate.hpp"
#include "topology/cluster.hpp"
#include "workloads/advice/memory_remedies.hpp"
#include "workloads/analysis/scale_noise.hpp"
#include "workloads/model/headroom.hpp"
#include "workloads/cost/hardware.hpp"
#include "workloads/spec/compute_profile.hpp"
#include "workloads/layout_report.hpp"
#include "workloads/build/program_totals.hpp"
#include "workloads/model/layout.hpp"
#include "workloads/simulate.hpp"
#include "workloads/build/stage_layers.hpp"
#include "workloads/spec/vocabulary.hpp"

namespace ls::tools {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }


/// Bit-exact blobs for SearchExchange: doubles by their bytes, strings with a length.
struct BlobWriter {
  std::string out;
  template <class T>
  void put(const T& v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void put_string(const std::string& v) {
    put(static_cast<std::uint64_t>(v.size()));
    out += v;
  }
};
struct BlobReader {
  const std::string& in;
  std::size_t at = 0;
  template <class T>
  T get() {
    T v{};
    if (at + sizeof v > in.size()) throw std::runtime_error("search exchange: truncated blob");
    std::memcpy(&v, in.data() + at, sizeof v);
    at += sizeof v;
    return v;
  }
  std::string get_string() {
    const auto n = get<std::uint64_t>();
    if (at + n > in.size()) throw std::runtime_error("search exchange: truncated blob");
    std::string v = in.substr(at, n);
    at += n;
    return v;
  }
};

/// Runs fn(k) for the items k < n this process owns (k mod size == rank), then
/// shares the results: write(k, blob) serialises item k, read(k, reader) fills it in
/// on every other process. Without an exchange: every item, here.
template <class Fn, class Write, class Read>
void exchange_items(SearchExchange* ex, std::size_t n, int threads, Fn fn, Write write, Read read) {
  if (!ex || ex->size() <= 1) {
    parallel_for(n, threads, fn);
    return;
  }
  const auto size = static_cast<std::size_t>(ex->size()), me = static_cast<std::size_t>(ex->rank());
  std::vector<std::size_t> own;
  for (std::size_t k = me; k < n; k += size) own.push_back(k);
  parallel_for(own.size(), threads, [&](std::size_t i, std::size_t w) { fn(own[i], w); });
  BlobWriter bw;
  for (std::size_t k : own) write(k, bw);
  const std::vector<std::string> all = ex->all_gather(bw.out);
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (r == me) continue;
    BlobReader br{all[r]};
    for (std::size_t k = r; k < n; k += size) read(k, br);
  }
}

double objective_value(SearchObjective o, const CandidateOutcome& c) {
  // cost per token ∝ devices / tokens_per_s, and every candidate uses all the devices.
  return o == SearchObjective::tokens_per_s || o == SearchObjective::cost ? -c.tokens_per_s : c.step_time_s;
}

/// The estimate's order: the objective, then the enumeration index.
bool better_estimate(SearchObjective o, const CandidateOutcome& a, const CandidateOutcome& b) {
  const double ka = objective_value(o, a), kb = objective_value(o, b);
  return ka != kb ? ka < kb : a.index < b.index;
}

/// The report's header: the base scenario's figures and the options; throws on options
/// that cannot run.
SearchReport report_header(const wl::Scenario& base, const SearchOptions& opts) {
  SearchReport rep;
  rep.scenario = base.source;
  rep.devices = wl::device_count(base.cluster);
  rep.global_batch = opts.global_batch > 0 ? opts.global_batch : base_global_batch(base);
  rep.seq_len = base.model.seq_len;
  rep.global_batches = opts.axes.global_batch;
  rep.memory_capacity_bytes = base.gpu.memory_bytes;
  rep.memory_usable_bytes = wl::usable_memory_bytes(base);
  rep.objective = opts.objective;
  rep.training = base.training;
  if (opts.axes.global_batch.size() > 1 && opts.objective == SearchObjective::step_time)
    throw std::invalid_argument(
        "--vary global_batch compares steps of different sizes: rank by --objective tokens_per_s (or cost)");
  if (opts.objective == SearchObjective::cost && base.training.gpu_hour_price < 0)
    throw std::invalid_argument("--objective cost: the scenario gives no training.gpu_hour_price (e.g. training: {gpu_hour_price: 2.5 USD})");
  rep.dp_bucket_bytes = base.layout.dp_bucket_bytes;
  rep.embedding_free = base.layout.embedding_free;
  rep.cp_all_gather = base.layout.cp_kind == wl::CpKind::all_gather;
  rep.base_tp_comm_overlap = base.implementation.tp_comm_overlap;
  rep.base_dp_overlap = base.implementation.dp_overlap;
  rep.shard_index = opts.shard_index;
  rep.shard_count = opts.shard_count;
  rep.threads = opts.jobs > 0 ? opts.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return rep;
}

/// A candidate short of memory is remedied when its memory lower bound is at most this
/// share of the GPU's memory: over the usable budget, not over the GPU (a near miss).
constexpr double kNearMiss = 1.0;

/// Stage 1: enumerate; keep this shard's candidates. `enumerated`: the whole space's size.
std::vector<Candidate> shard_candidates(const wl::Scenario& base, const SearchReport& rep, const SearchOptions& opts,
                                        std::size_t& enumerated) {
  std::vector<Candidate> all = enumerate_candidates(base, rep.global_batch, opts.axes);
  enumerated = all.size();
  std::vector<Candidate> mine;
  for (auto& c : all)
    if (c.index % static_cast<std::size_t>(opts.shard_count) == static_cast<std::size_t>(opts.shard_index)) mine.push_back(std::move(c));
  return mine;
}

/// Stage 2: the analytic estimate of every candidate from `mine[first]` on that the
/// rules left. Marks the candidates it rejects; returns the kept ones in the estimate's order.
std::vector<CandidateOutcome> estimate_candidates(const wl::Scenario& base, const SearchReport& rep, const SearchOptions& opts,
                                                  std::vector<Candidate>& mine, std::size_t first) {
  // One cluster and one collective-time cache per thread: a Cluster's route cache is not
  // thread-safe (cluster.hpp).
  std::vector<std::optional<topo::Cluster>> clusters(static_cast<std::size_t>(rep.threads));
  std::vector<std::optional<EstimateCaches>> caches(static_cast<std::size_t>(rep.threads));
  auto caches_of = [&](std::size_t worker) -> EstimateCaches& {
    if (!clusters[worker]) clusters[worker].emplace(topo::Cluster::build(wl::effective_cluster(base)));
    if (!caches[worker]) caches[worker].emplace(*clusters[worker], base.cluster.ideal_network, wl::collective_costs_of(base.gpu));
    return *caches[worker];
  };
  std::vector<std::size_t> todo;
  for (std::size_t i = first; i < mine.size(); ++i)
    if (mine[i].rejected.empty()) todo.push_back(i);
  std::vector<Estimate> est(todo.size());
  ComputeSlowdowns slow;
  slow.rho = wl::overlap_slowdown(wl::compute_profile_of(base.gpu));  // as the simulation applies it
  slow.noise = wl::scale_noise_factor(base.implementation.compute_variability, rep.devices);
  // Runs of consecutive candidates equal but for their placement share one program build.
  std::vector<std::size_t> run_begin;
  for (std::size_t k = 0; k < todo.size(); ++k)
    if (k == 0 || !same_but_placement(mine[todo[k - 1]].layout, mine[todo[k]].layout)) run_begin.push_back(k);
  run_begin.push_back(todo.size());
  const std::size_t runs = run_begin.size() - 1;
  std::mutex progress_mu;
  std::size_t analyzed = 0;
  exchange_items(
      opts.exchange, runs, rep.threads,
      [&](std::size_t r, std::size_t worker) {
        const std::size_t b = run_begin[r], n = run_begin[r + 1] - b;
        try {
          EstimateCaches& ec = caches_of(worker);
          std::vector<wl::Scenario> run;
          run.reserve(n);
          for (std::size_t k = b; k < b + n; ++k) run.push_back(candidate_scenario(base, rep.global_batch, mine[todo[k]].layout));
          analyze_run(run, ec, slow, &est[b]);
        } catch (const std::exception&) {
          // One at a time, so that only the candidate that throws is the error.
          for (std::size_t k = b; k < b + n; ++k) {
            try {
              std::optional<EstimatePrograms> programs;
              est[k] = analyze(candidate_scenario(base, rep.global_batch, mine[todo[k]].layout), caches_of(worker), slow, programs);
            } catch (const std::exception&) {
              est[k] = Estimate{"analytic-error"};
            }
          }
        }
        if (opts.on_analyzed) {
          std::lock_guard lock(progress_mu);
          const std::size_t before = analyzed;
          analyzed += n;
          if (analyzed / 256 != before / 256 || analyzed == todo.size()) opts.on_analyzed(analyzed, todo.size());
        }
      },
      [&](std::size_t r, BlobWriter& w) {
        for (std::size_t k = run_begin[r]; k < run_begin[r + 1]; ++k) {
          const Estimate& e = est[k];
          w.put_string(e.rejected);
          for (double v : {e.step_s, e.peak_bytes, e.bubble, e.model_flops, e.tokens}) w.put(v);
        }
      },
      [&](std::size_t r, BlobReader& rd) {
        for (std::size_t k = run_begin[r]; k < run_begin[r + 1]; ++k) {
          Estimate& e = est[k];
          e.rejected = rd.get_string();
          for (double* v : {&e.step_s, &e.peak_bytes, &e.bubble, &e.model_flops, &e.tokens}) *v = rd.get<double>();
        }
      });
  for (std::size_t k = 0; k < todo.size(); ++k) mine[todo[k]].rejected = est[k].rejected;
  std::vector<CandidateOutcome> kept;
  for (std::size_t k = 0; k < todo.size(); ++k) {
    if (!est[k].rejected.empty()) continue;
    const Candidate& c = mine[todo[k]];
    CandidateOutcome o;
    o.index = c.index;
    o.layout = c.layout;
    o.analytic_step_s = o.step_time_s = est[k].step_s;
    o.analytic_peak_bytes = o.peak_memory_bytes = est[k].peak_bytes;
    o.tokens_per_s = est[k].tokens / est[k].step_s;
    o.mfu = est[k].model_flops / (est[k].step_s * rep.devices * base.gpu.peak_flops);
    o.bubble_fraction = est[k].bubble;
    o.fits = true;
    o.origin = c.origin;
    kept.push_back(o);
  }
  std::sort(kept.begin(), kept.end(),
            [&](const CandidateOutcome& a, const CandidateOutcome& b) { return better_estimate(opts.objective, a, b); });
  return kept;
}

/// Simulates one candidate into `o`; "simulation-error" in `failed` when it throws.
void simulate_candidate(const wl::ResolvedScenario& base, std::int64_t global_batch, CandidateOutcome& o, std::string& failed) {
  try {
    // The base's cluster and perturbations, checked when it was resolved; a step past
    // sim::Time's range throws from the simulation, a "simulation-error" as a resolve
    // error would be.
    const wl::Scenario candidate = candidate_scenario(base.scenario(), global_batch, o.layout);
    const wl::ResolvedScenario sc = wl::resolve_variant(base, candidate.layout, candidate.implementation);
    wl::SimOptions so;
    // The ranking needs the step, its compute, memory, bubble and exposed communication:
    // not the priced warnings, the critical path or the links.
    so.what_if = false;
    so.critical_path = false;
    so.links = false;
    const wl::Result r = wl::simulate(sc, so);
    o.simulated = true;
    o.step_time_s = r.step_time_s;
    o.tokens_per_s = r.tokens_per_s;
    o.mfu = r.mfu;
    o.peak_memory_bytes = r.max_peak_bytes;
    o.fits = r.memory_verdict == wl::memory_verdict_name(wl::MemoryVerdict::fits);
    o.bubble_fraction = r.bubble_fraction;
    o.exposed = {r.comm[static_cast<int>(wl::Axis::tp)].exposed_s, r.comm[static_cast<int>(wl::Axis::pp)].exposed_s,
                 r.comm[static_cast<int>(wl::Axis::dp)].exposed_s, r.comm[static_cast<int>(wl::Axis::ep)].exposed_s,
                 r.comm[static_cast<int>(wl::Axis::cp)].exposed_s};
    for (const auto& st : r.per_stage) o.compute_s = std::max(o.compute_s, st.compute_s);
  } catch (const std::exception&) {
    failed = "simulation-error";
  }
}

/// For each of the first `top` candidates, the first of them whose simulation is the
/// same (itself when none): candidates equal but for `stage_layers` whose auto and
/// balanced splits put the same layers on every chunk build the same program (the mode
/// decides the split and, in a run, only warnings and what-ifs the search does not ask
/// for), so one simulation stands for both.
std::vector<std::size_t> simulation_twins(const wl::Scenario& base, std::int64_t global_batch,
                                          const std::vector<CandidateOutcome>& kept, std::size_t top) {
  struct Key {
    SearchLayout layout;  // its stage_layers choice cleared
    std::vector<std::pair<int, int>> chunks;
  };
  std::vector<Key> keys(top);
  std::vector<std::size_t> twin(top);
  for (std::size_t k = 0; k < top; ++k) {
    twin[k] = k;
    Key& key = keys[k];
    key.layout = kept[k].layout;
    key.layout.stage_layers_mode = wl::StageLayersMode::auto_even;
    key.layout.stage_layers.clear();
    try {
      for (const auto& stage : wl::stage_layers(candidate_scenario(base, global_batch, kept[k].layout)).chunks)
        for (const auto& c : stage) key.chunks.emplace_back(c.begin, c.end);
    } catch (const std::exception&) {
      key.chunks.clear();  // no twin: its own simulation says what is wrong
      continue;
    }
    for (std::size_t j = 0; j < k; ++j)
      if (twin[j] == j && !keys[j].chunks.empty() && keys[j].layout == key.layout && keys[j].chunks == key.chunks) {
        twin[k] = j;
        break;
      }
  }
  return twin;
}

/// Stage 3: simulate the best by the estimate. A candidate whose simulation fails
/// leaves `kept` and is rejected in `mine`.
void simulate_best(const wl::ResolvedScenario& base_resolved, SearchReport& rep, const SearchOptions& opts,
                   std::vector<CandidateOutcome>& kept, std::vector<Candidate>& mine) {
  const wl::Scenario& base = base_resolved.scenario();
  // The best K points of the space by the estimate, and beside them the best K/8 remedy
  // candidates: the estimate does not price what an offload's copies share with the
  // communication (the copy stream, the PCIe link), so remedies ranked by it alone
  // would crowd out the layouts that fit as they are. `kept` stays in estimate order
  // within each part; the chosen ones move to the front.
  const auto k_space = static_cast<std::size_t>(std::max(0, opts.simulate_top));
  const std::size_t k_remedy = k_space == 0 ? 0 : std::max<std::size_t>(1, k_space / 8);
  std::size_t space_taken = 0, remedy_taken = 0;
  std::vector<CandidateOutcome> chosen, rest;
  for (auto& o : kept) {
    auto& taken = o.origin.empty() ? space_taken : remedy_taken;
    if (taken < (o.origin.empty() ? k_space : k_remedy)) {
      ++taken;
      chosen.push_back(std::move(o));
    } else {
      rest.push_back(std::move(o));
    }
  }
  const std::size_t top = chosen.size();
  kept = std::move(chosen);
  kept.insert(kept.end(), std::make_move_iterator(rest.begin()), std::make_move_iterator(rest.end()));
  std::vector<std::string> failed(top);
  const std::vector<std::size_t> twin = simulation_twins(base, rep.global_batch, kept, top);
  std::vector<std::size_t> own;  // the candidates simulated; the others copy their twin's outcome
  for (std::size_t k = 0; k < top; ++k)
    if (twin[k] == k) own.push_back(k);
  std::atomic<std::size_t> simulated_done{0};
  exchange_items(opts.exchange, own.size(), rep.threads, [&](std::size_t i, std::size_t) {
    const std::size_t k = own[i];
    struct Report {  // counts the candidate done however the body exits
      const SearchOptions& o;
      std::atomic<std::size_t>& done;
      std::size_t total;
      ~Report() {
        const std::size_t d = ++done;
        // A destructor must not throw (this one also runs while a candidate's error
        // unwinds): a progress callback that throws is ignored, the count stays.
        try {
          if (o.on_simulated) o.on_simulated(d, total);
        } catch (...) {
        }
      }
    } report{opts, simulated_done, own.size()};
    simulate_candidate(base_resolved, rep.global_batch, kept[k], failed[k]);
  }, [&](std::size_t i, BlobWriter& w) {
    const std::size_t k = own[i];
    const CandidateOutcome& o = kept[k];
    w.put_string(failed[k]);
    w.put(o.simulated);
    w.put(o.fits);
    for (double v : {o.step_time_s, o.tokens_per_s, o.mfu, o.peak_memory_bytes, o.bubble_fraction, o.exposed.tp, o.exposed.pp,
                     o.exposed.dp, o.exposed.ep, o.exposed.cp, o.compute_s})
      w.put(v);
  }, [&](std::size_t i, BlobReader& r) {
    const std::size_t k = own[i];
    CandidateOutcome& o = kept[k];
    failed[k] = r.get_string();
    o.simulated = r.get<bool>();
    o.fits = r.get<bool>();
    for (double* v : {&o.step_time_s, &o.tokens_per_s, &o.mfu, &o.peak_memory_bytes, &o.bubble_fraction, &o.exposed.tp,
                      &o.exposed.pp, &o.exposed.dp, &o.exposed.ep, &o.exposed.cp, &o.compute_s})
      *v = r.get<double>();
  });
  for (std::size_t k = 0; k < top; ++k) {
    if (twin[k] == k) continue;
    const CandidateOutcome& from = kept[twin[k]];
    CandidateOutcome& o = kept[k];
    failed[k] = failed[twin[k]];
    o.simulated = from.simulated;
    o.fits = from.fits;
    o.step_time_s = from.step_time_s;
    o.tokens_per_s = from.tokens_per_s;
    o.mfu = from.mfu;
    o.peak_memory_bytes = from.peak_memory_bytes;
    o.bubble_fraction = from.bubble_fraction;
    o.exposed = from.exposed;
    o.compute_s = from.compute_s;
  }
  std::vector<std::size_t> failed_index;
  for (std::size_t k = 0; k < top; ++k)
    if (!failed[k].empty()) failed_index.push_back(kept[k].index);
  std::erase_if(kept, [&](const CandidateOutcome& o) {
    return std::find(failed_index.begin(), failed_index.end(), o.index) != failed_index.end();
  });
  for (auto& c : mine)
    if (std::find(failed_index.begin(), failed_index.end(), c.index) != failed_index.end()) c.rejected = "simulation-error";
  rep.simulated = top - failed_index.size();
}

/// Rank: simulated and fitting, simulated, estimated; then the objective; then index.
/// The rejected candidates are counted by reason.
void rank_outcomes(SearchReport& rep, const SearchOptions& opts, std::vector<CandidateOutcome> kept, std::vector<Candidate>& mine) {
  auto tier = [](const CandidateOutcome& o) { return o.simulated ? (o.fits ? 0 : 1) : 2; };
  std::stable_sort(kept.begin(), kept.end(), [&](const CandidateOutcome& a, const CandidateOutcome& b) {
    if (tier(a) != tier(b)) return tier(a) < tier(b);
    return better_estimate(opts.objective, a, b);
  });
  rep.ranked = std::move(kept);
  for (auto& c : mine)
    if (!c.rejected.empty()) {
      ++rep.rejected_by_reason[c.rejected];
      rep.rejected.push_back(std::move(c));
    }
}

}  // namespace

std::vector<Candidate> remedy_candidates(const wl::Scenario& base, std::int64_t global_batch, const SearchAxes& axes,
                                         const std::vector<Candidate>& mine, std::size_t enumerated, int threads) {
  // The placement moves no memory: one placement's remedy stands for the others'.
  std::vector<const Candidate*> short_of_memory;
  for (const auto& c : mine)
    if (c.rejected == "memory" && c.origin.empty() && (axes.placement.empty() || c.layout.placement == axes.placement.front()))
      short_of_memory.push_back(&c);
  std::vector<std::optional<Candidate>> found(short_of_memory.size());
  // Pass costs priced once per worker and PassCostsLayout (a remedy moves ZeRO and offload,
  // which they do not read).
  std::vector<PassCostsMemo> costs(static_cast<std::size_t>(std::max(1, threads)));
  parallel_for(short_of_memory.size(), threads, [&](std::size_t k, std::size_t worker) {
    const Candidate& c = *short_of_memory[k];
    PassCostsMemo& memo = costs[worker];
    const auto memory_bound = [&memo](const wl::Scenario& s) {
      return tools::memory_lower_bound(s, wl::ProgramInputs(s, memo.of(s)));
    };
    try {
      const wl::Scenario sc = candidate_scenario(base, global_batch, c.layout);
      // Near misses only: a remedy that has to move more state off the GPU costs more
      // PCIe time, and the analytic stage is not to double for layouts that far over. A
      // rule of the candidate alone, so that shards find the same remedies as one process.
      if (memory_bound(sc) > kNearMiss * base.gpu.memory_bytes) return;
      for (const auto& remedy : wl::memory_remedies(sc)) {
        const wl::LayoutSpec& L = remedy.scenario.layout;
        // ZeRO one stage up alone is a point of the space already.
        if (L.shard_group == sc.layout.shard_group && L.offload.activations == sc.layout.offload.activations &&
            L.offload.optimizer == sc.layout.offload.optimizer)
          continue;
        if (!fits_with_margin(remedy.scenario, memory_bound(remedy.scenario))) continue;
        Candidate r;
        r.index = enumerated + c.index;
        r.layout = c.layout;
        r.layout.zero = L.zero;
        r.layout.shard_group = L.shard_group;
        r.layout.offload = L.offload;
        r.origin = fmt::format("remedy of #{}: {}", c.index, remedy.change);
        found[k] = std::move(r);
        break;
      }
    } catch (const std::exception&) {
      // A remedy that cannot be priced is not offered (the candidate stays rejected).
    }
  });
  std::vector<Candidate> out;
  for (auto& f : found)
    if (f) out.push_back(std::move(*f));
  return out;  // in index order: `mine` is
}

SearchReport run_search(const wl::ResolvedScenario& base_resolved, const SearchOptions& opts) {
  const auto t0 = Clock::now();
  if (opts.shard_count < 1 || opts.shard_index < 0 || opts.shard_index >= opts.shard_count)
    throw std::invalid_argument(fmt::format("--shard {}/{}: need 0 <= I < N", opts.shard_index, opts.shard_count));
  const wl::Scenario& base = base_resolved.scenario();
  SearchReport rep = report_header(base, opts);
  std::size_t enumerated = 0;
  std::vector<Candidate> mine = shard_candidates(base, rep, opts, enumerated);
  const auto analysed_first =
      static_cast<std::size_t>(std::count_if(mine.begin(), mine.end(), [](const Candidate& c) { return c.rejected.empty(); }));
  std::vector<CandidateOutcome> kept = estimate_candidates(base, rep, opts, mine, 0);
  if (opts.remedies) {
    // What the out-of-memory warning would offer a candidate that does not fit is a
    // candidate too: estimated like the others, then ranked among them. Progress goes
    // on counting from the first pass.
    const std::size_t first = mine.size();
    for (auto& c : remedy_candidates(base, rep.global_batch, opts.axes, mine, enumerated, rep.threads)) mine.push_back(std::move(c));
    SearchOptions more_opts = opts;
    if (opts.on_analyzed)
      more_opts.on_analyzed = [&](std::size_t done, std::size_t total) { opts.on_analyzed(analysed_first + done, analysed_first + total); };
    std::vector<CandidateOutcome> more = estimate_candidates(base, rep, more_opts, mine, first);
    kept.insert(kept.end(), more.begin(), more.end());
    std::sort(kept.begin(), kept.end(),
              [&](const CandidateOutcome& a, const CandidateOutcome& b) { return better_estimate(opts.objective, a, b); });
  }
  rep.evaluated = mine.size();
  rep.analytic_wall_s = seconds_since(t0);
  const auto t1 = Clock::now();
  simulate_best(base_resolved, rep, opts, kept, mine);
  rep.simulate_wall_s = seconds_since(t1);
  rank_outcomes(rep, opts, std::move(kept), mine);
  if (!rep.ranked.empty() && rep.ranked.front().step_time_s > 0) {
    const CandidateOutcome& best = rep.ranked.front();
    rep.best_band = wl::error_band(best.step_time_s, wl::band_features(candidate_scenario(base, rep.global_batch, best.layout)),
                                   wl::shipped_residuals());
  }
  rep.wall_s = seconds_since(t0);
  return rep;
}

}  // namespace ls::tools