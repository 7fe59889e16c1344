// tools/study/search.hpp — `layoutsim search`: find the best parallelism layout for a
// scenario's cluster, model and global batch.
//
// The scenario fixes the cluster, the model, the precision and the global batch
// (sequences per step; seq_len from the model); the search varies the layout:
// tp, pp (stage layers auto or balanced, schedule 1f1b / interleaved-1f1b with v /
// zb-h1), dp (derived: GPUs / (tp·pp)), ep (MoE), ZeRO stage, sequence parallel,
// recompute, micro-batch size and placement. micro-batches = global_batch / (dp·mbs).
//
// Three stages, each cheaper than the next is expensive:
//  1. enumerate (search_space.cpp): the product of the axes' value lists, minus
//     points that are the same layout spelled twice (an axis of degree 1); the
//     divisibility rules reject points with a named reason, without building anything.
//  2. analytic (search_estimate.hpp): check the loader's layout rules ("invalid-KEY"),
//     bound the memory in O(layers), build the program (the ops `run` replays; with
//     many micro-batches, one at the fewest the schedule takes and its middle
//     micro-batch's ops for each it lacks, the peak walked over its schedule items) and
//     read the memory peak per stage and the op durations off it: a candidate over the
//     GPU's memory is rejected ("memory"), the rest get an estimated step time.
//     The near misses of the memory rule come back with the out-of-memory warning's
//     remedy (remedy_candidates) and are estimated the same way.
//  3. simulate the best `simulate_top` points by the estimate and the best
//     simulate_top/8 remedy candidates, in parallel threads.
// Ranking: simulated candidates by their simulated objective, then the others by
// the estimate; ties by candidate index. Every stage is a pure function of the
// inputs and results are kept in candidate order, so the output does not depend on
// the thread count (only the wall-time fields do).
//
// Sharding (job arrays): candidate i belongs to shard i mod N. A shard evaluates
// only its candidates and simulates its own top K; see search_csv for merging.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "workloads/analysis/error_band.hpp"
#include "workloads/resolve.hpp"
#include "workloads/spec/scenario_spec.hpp"

namespace ls::tools {

/// One layout of the search space: a LayoutSpec whose searched keys (tp, pp, dp, ep, cp,
/// zero, sequence_parallel, recompute, microbatch_size, schedule, virtual_stages,
/// stage_layers_mode, placement) a candidate sets, and microbatches derived from the
/// global batch (0 when it does not divide); candidate_scenario() puts those keys over
/// the base scenario's layout, whose other keys stay.
///
/// Two implementation switches ride along, because they change which layout wins (a TP
/// degree whose collectives hide behind the GEMMs, gradient reduction that waits for
/// the backward): each candidate states them, the base's values unless searched
/// (`--vary tp_overlap=off,on`, `--vary dp_overlap=on,off`).
struct SearchLayout : wl::LayoutSpec {
  bool tp_comm_overlap = false;  // implementation.tp_comm_overlap
  bool dp_overlap = true;        // implementation.dp_overlap
  bool operator==(const SearchLayout&) const = default;
};

/// "t8·p16(v2)·d16 z1 sp sel mbs1 1f1b": degrees (ep as ·e4 when > 1; "bal" inside
/// the pp parentheses for balanced stage layers), ZeRO stage, "sp" when on, "sel" or
/// "full" recompute, micro-batch size, schedule ("1f1b" for interleaved-1f1b too: the
/// "(vN)" says it is interleaved), and the placement when it is not [tp, dp, pp].
std::string compact_layout(const SearchLayout& l);
const char* stage_layers_name(wl::StageLayersMode m);

/// The value list of every axis. Order matters: it is the enumeration order, and an
/// axis that a candidate makes meaningless (sp at tp 1, ZeRO at dp 1, the schedule
/// and stage layers at pp 1, placement orders that differ only in degree-1 axes)
/// takes its first value only.
struct SearchAxes {
  std::vector<int> tp, pp, dp, ep, zero, microbatch_size, virtual_stages;  // dp empty: any (derived)
  /// `--vary v=all`: every v >= 2 that divides the layers of a stage (layers / pp), in
  /// place of the virtual_stages list (at 1,024 A100s on GPT-3's 96 layers and pp 8:
  /// v 2, 3, 4, 6, 12 where the list has 2 and 4).
  bool every_virtual_stages = false;
  /// `--vary mbs=all`: every micro-batch size that divides a data-parallel rank's
  /// sequences per step (global batch / dp), in place of the microbatch_size list.
  bool every_microbatch_size = false;
  /// implementation.tp_comm_overlap / dp_overlap per candidate; default: the base's value.
  std::vector<bool> tp_overlap{false}, dp_overlap{true};
  std::vector<int> cp{1};  // default: 1; also 2 from 4k tokens, and 4 and 8 from 16k (search_space.cpp)
  std::vector<bool> sequence_parallel;
  std::vector<wl::Recompute> recompute;
  std::vector<wl::Schedule> schedule;
  std::vector<wl::StageLayersMode> stage_layers;
  std::vector<std::vector<std::string>> placement;
  /// Sequences per step to compare (`--vary global_batch=...`); empty: the base scenario's
  /// only. Each candidate then carries its batch (SearchLayout::global_batch, "gbN" in
  /// the compact string); step times of different batches are not comparable, so the
  /// objective must be tokens_per_s or cost.
  std::vector<std::int64_t> global_batch;
};

/// The default space for a resolved base scenario: tp and pp the divisors of the GPU
/// count (tp up to the head count), ep the divisors of the expert count (1 for a
/// dense model), ZeRO 0–3, sp off/on, recompute none/selective/full, micro-batch
/// size 1, 2, 4, 8, schedules 1f1b, interleaved-1f1b (v 2, 4), zb-h1, stage layers
/// auto and balanced, placements [tp, dp, pp] and [tp, pp, dp], the base's
/// tp_comm_overlap and dp_overlap.
SearchAxes default_axes(const wl::Scenario& base);

/// The search's axis keys ("tp", "pp", "dp", "ep", "cp", "zero", "sp", "recompute",
/// "mbs", "schedule", "v", "stage_layers", "placement", "global_batch", "tp_overlap",
/// "dp_overlap"; long forms like "layout.microbatch_size" or
/// "implementation.tp_comm_overlap" are accepted too). `v` and `mbs` also take `all`.
std::vector<std::string> search_axis_keys();

/// Applies `--vary KEY=V1,V2,...` (the list replaces the axis's values, so it can
/// restrict or extend it) or `--fix KEY=V` (exactly one value). Placement values are
/// written "tp/dp/pp". Throws std::invalid_argument (a usage error) on an unknown key
/// or a malformed value.
void apply_axis_option(SearchAxes& axes, const std::string& text, bool fix);

/// "I/N" → (I, N) with 0 ≤ I < N. Throws std::invalid_argument (a usage error).
std::pair<int, int> parse_shard(const std::string& text);

/// One enumerated point. `rejected` is the reason it was dropped ("" = kept so far).
struct Candidate {
  std::size_t index = 0;
  SearchLayout layout;
  std::string rejected;
  /// "" for a point of the space; for a remedy candidate, what it changed in which
  /// candidate: "remedy of #12: layout.offload.optimizer: true" (remedy_candidates).
  std::string origin;
};

/// Every point of the space for the base scenario's GPU count and global batch, in
/// enumeration order (index = position), with the divisibility rejections filled in:
/// "tp-indivisible" (heads, kv_heads, ffn_hidden or expert ffn), "ep-indivisible"
/// (experts or dp), "too-few-layers" (pp·v > layers), "layers-indivisible" (auto
/// stage layers: layers mod pp·v), "batch-indivisible" (global batch mod dp·mbs),
/// "interleaved-microbatches" (interleaved-1f1b: micro-batches mod pp), "zero-with-pp"
/// (ZeRO-2/3 with pp > 1, which Megatron-Core does not run). dp·tp·pp =
/// GPUs holds by construction.
std::vector<Candidate> enumerate_candidates(const wl::Scenario& base, std::int64_t global_batch, const SearchAxes& axes);

/// The out-of-memory warning's remedies as candidates: for each candidate in `mine`
/// rejected for memory whose memory lower bound is at most the GPU's memory (a near
/// miss: farther over, a remedy moves more state over PCIe and costs more than it
/// saves) and whose placement is the axes' first (placement moves no memory), the first
/// of wl::memory_remedies that is not a point of the space already (HSDP inside a
/// node, activation offload, optimizer offload; not ZeRO one stage up, which the space
/// holds) and whose memory lower bound fits. Each becomes a candidate of index
/// `enumerated + the candidate's index` (unique across shards) whose origin names the
/// change. A rule of each candidate alone: shards find the same remedies as one
/// process. O(memory-rejected · remedies · layers); no program is built.
std::vector<Candidate> remedy_candidates(const wl::Scenario& base, std::int64_t global_batch, const SearchAxes& axes,
                                         const std::vector<Candidate>& mine, std::size_t enumerated, int threads = 1);

/// The base scenario with the candidate's layout (global batch fixed, explicit
/// stage_layers and microbatch counts replaced), not yet resolved.
wl::Scenario candidate_scenario(const wl::Scenario& base, std::int64_t global_batch, const SearchLayout& l);

/// The global batch (sequences per step) the base scenario fixes: layout.global_batch,
/// else microbatches·microbatch_size·dp.
std::int64_t base_global_batch(const wl::Scenario& base);

/// A lower bound of the peak memory per device that `layoutsim check` reports, in
/// O(layers): the stage's static memory plus the activations of one micro-batch (the
/// first micro-batch's forward through every chunk of the stage completes before
/// its backward starts, so they are all held at once). The analytic stage rejects a
/// candidate over the GPU's memory on this bound before building its program.
double memory_lower_bound(const wl::Scenario& resolved);

/// cost: the cost per token (devices · gpu_hour_price / tokens_per_s), which needs the
/// scenario's training.gpu_hour_price; with training.tokens it is the cost to train.
enum class SearchObjective { step_time, tokens_per_s, cost };
/// "step_time", "tokens_per_s" or "cost".
const char* objective_name(SearchObjective o);

/// Several processes working on one search (tools/cli/mpi_shard.cpp under mpirun): each
/// analyses and simulates every size()-th candidate of its list and all_gather
/// shares the verdicts, so every process ends with the same report as a single
/// process would (the analytic stage and every simulation are pure functions of the
/// candidate). Only the wall times differ.
class SearchExchange {
public:
  virtual ~SearchExchange() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Every process passes its blob; each gets all processes' blobs, by rank.
  virtual std::vector<std::string> all_gather(const std::string& blob) = 0;
};

struct SearchOptions {
  SearchAxes axes;
  /// Sequences per step; 0: the base scenario's (base_global_batch).
  std::int64_t global_batch = 0;
  SearchObjective objective = SearchObjective::step_time;
  int simulate_top = 64;
  /// Add the out-of-memory remedies of the candidates that do not fit (remedy_candidates).
  bool remedies = true;
  int jobs = 0;  // ≤ 0: hardware threads
  int shard_index = 0, shard_count = 1;
  SearchExchange* exchange = nullptr;  // not owned; null: one process
  /// Called after each simulated candidate with (done, total), from worker threads.
  std::function<void(std::size_t, std::size_t)> on_simulated;
  /// Called as the analytic stage estimates candidates, with (done, total), serialised
  /// (every 256 candidates and at the end): the first of the search's two stages.
  std::function<void(std::size_t, std::size_t)> on_analyzed;
};

/// Exposed communication by axis (time the compute stream waited on it), seconds.
struct ExposedComm {
  double tp = 0, pp = 0, dp = 0, ep = 0;
  double cp = 0;  // JSON only (the table and the CSV keep their four columns)
};

/// A candidate that passed pruning: its analytic estimate and, when simulated, the
/// simulation's numbers (else the metrics hold the estimate).
struct CandidateOutcome {
  std::size_t index = 0;
  SearchLayout layout;
  double analytic_step_s = 0;
  double analytic_peak_bytes = 0;
  bool simulated = false;
  double step_time_s = 0, tokens_per_s = 0, mfu = 0;
  double peak_memory_bytes = 0;
  double bubble_fraction = 0;  // simulated: measured; else the schedule's analytic bubble
  bool fits = true;
  ExposedComm exposed;  // simulated only
  double compute_s = 0;  // simulated only: the busiest stage's compute per step
  std::string origin;    // Candidate::origin
};

struct SearchReport {
  std::string scenario;  // the base scenario's source
  int devices = 0;
  std::int64_t global_batch = 0, seq_len = 0;
  std::vector<std::int64_t> global_batches;  // --vary global_batch: the batches compared (else empty)
  double memory_capacity_bytes = 0;
  double memory_usable_bytes = 0;  // what "fits" compares with (workloads/model/headroom.hpp)
  double dp_bucket_bytes = 0;   // the base layout's keys the search keeps (for --emit)
  bool embedding_free = false;
  bool cp_all_gather = false;   // the base layout's cp_kind (the search varies cp, not its kind)
  bool base_tp_comm_overlap = false, base_dp_overlap = true;  // the base's switches (--emit writes a changed one)
  SearchObjective objective = SearchObjective::step_time;
  wl::TrainingSpec training;    // the base scenario's: time and cost columns when given
  int shard_index = 0, shard_count = 1;
  std::vector<CandidateOutcome> ranked;          // kept candidates, best first
  /// The best candidate's error band (workloads/analysis/error_band.hpp): where its
  /// measured step time would lie for 80 % of held-out runs like it (rows 0: none).
  /// A candidate whose step time is within the band's width of the best's is one the
  /// model's accuracy cannot tell apart from it (within_band()).
  wl::ErrorBand best_band;
  std::vector<Candidate> rejected;               // in index order, with their reasons
  std::size_t evaluated = 0, simulated = 0;
  std::map<std::string, std::size_t> rejected_by_reason;
  int threads = 1;
  double wall_s = 0, analytic_wall_s = 0, simulate_wall_s = 0;  // the only nondeterministic fields
};

/// Runs the search. Throws std::invalid_argument on bad options (a shard outside
/// 0..N-1). Candidates the resolver or simulation reject are counted, never thrown.
SearchReport run_search(const wl::ResolvedScenario& base, const SearchOptions& opts);

// ---- reports (search_report.cpp)

/// Indices into report.ranked of the Pareto front of step time vs peak memory among
/// the simulated candidates that fit, fastest first.
std::vector<std::size_t> pareto_front(const SearchReport& r);

/// Whether ranked candidate `c` (an element of r.ranked) is closer to the best's step
/// time than the width of the best's error band (false for the best itself, and
/// without a band). Similar layouts share much of their
/// error, so this is the cautious reading: the order between them is not established.
bool within_band(const SearchReport& r, const CandidateOutcome& c);

/// How the analytic estimate that ranks the space did against the simulation, over the
/// candidates that were simulated: Spearman's rank correlation between estimated and
/// simulated step times (tied values share their mean rank; 0 with fewer than two
/// candidates or when either side is constant), and the mean signed and absolute
/// relative gap, estimate / simulation − 1. Only the estimate's best K are simulated,
/// so the correlation is over a narrow band of near-equal layouts: lower than over the
/// whole space would be, and the cautious reading. O(K log K).
struct EstimateCheck {
  std::size_t count = 0;
  double rank_correlation = 0;
  double mean_gap = 0, mean_abs_gap = 0;
};
EstimateCheck estimate_check(const SearchReport& r);
/// The table's and the HTML page's sentence for it ("Estimate against simulation (72
/// simulated): rank correlation 0.34; ..."); "" under two simulated candidates.
std::string estimate_check_text(const SearchReport& r);

/// Spearman's rank correlation of two equal-length series (ties share their mean
/// rank); 0 when shorter than 2 or when either series is constant.
double spearman(const std::vector<double>& x, const std::vector<double>& y);

/// A candidate's exposed communication as the table prints it, "tp / pp / dp / ep"
/// seconds, or "(estimate, not simulated)".
std::string exposed_comm_text(const CandidateOutcome& c);

/// What the best's error band says of the ranking: "within the best's error band: its
/// measured step time would lie in LO … HI (...); N other candidate(s) closer ..." or
/// "no error band: ...". The table's line under the ranking and the HTML page's.
std::string best_band_note(const SearchReport& r);

/// Why the best beats the runner-up — the best simulated candidate whose degrees (tp,
/// pp, dp, cp, ep, zero) differ from the best's, not a variant of it — one line per
/// part of the step: compute, bubble, exposed communication by axis, memory. Empty
/// when fewer than two such candidates were simulated.
std::string explain_winner(const SearchReport& r);

/// Ranked candidates of one set of degrees (tp, pp, dp, cp, ep): the other placements,
/// recomputes, schedules and interleavings of a layout, so that a table's rows are
/// different layouts, not one layout ten ways. Indices into SearchReport::ranked.
struct DegreeGroup {
  std::vector<std::size_t> members;  // best first; members.front() is the group's row
};
/// The groups in the order of their best member. O(candidates · log).
std::vector<DegreeGroup> degree_groups(const SearchReport& r);

/// The ranked table (first `top` rows), the Pareto front, the counts and the wall time.
std::string format_search(const SearchReport& r, int top);

/// `search --html`: one self-contained page (tools/report/html_page.hpp) with the ranked
/// table (the best of each set of degrees, its variants, ties within the error band
/// marked), why the winner wins, step time against peak memory for the simulated
/// candidates with the Pareto front, and the counts; search_json embedded.
std::string search_html_report(const SearchReport& r, int top);

/// One row per evaluated candidate: kept ones best first, then the rejected in index
/// order. The first three columns (tier, step_time_s, index) order rows across
/// shards: concatenate the shards' rows under one header and sort with
/// `sort -t, -k1,1n -k2,2g -k3,3n` (tier 0 simulated and fits, 1 simulated, 2
/// estimated, 3 rejected).
std::string search_csv(const SearchReport& r);

/// {scenario, devices, global_batch, seq_len, objective, [shard], candidates: [...],
/// pareto: [indices], counts: {evaluated, kept, rejected: {REASON: n}, simulated},
/// wall_s, analytic_wall_s, simulate_wall_s}; candidates best first.
nlohmann::ordered_json search_json(const SearchReport& r);

/// The base scenario file's text with its top-level `layout:` block replaced by the
/// winner's layout (every key written out), and a header comment saying where it
/// came from. Throws ScenarioError when the text does not parse.
std::string emit_scenario_yaml(const std::string& scenario_text, const std::string& source, const SearchReport& r,
                               const CandidateOutcome& best);

}  // namespace ls::tools
