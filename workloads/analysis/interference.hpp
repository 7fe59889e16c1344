// workloads/analysis/interference.hpp — NCCL kernels slowing the compute they overlap.
//
// A collective runs as GPU kernels: NCCL launches one thread block per channel, and
// each block holds its SM for the whole collective, while its copies share HBM. Compute
// that runs beside it (FSDP's prefetched all-gathers, the overlapped gradient
// reduce-scatters and all-reduces) runs slower: fewer SMs, and a GEMM whose last wave no
// longer fits pays a whole extra wave. The multiplier ρ = overlap_slowdown(profile) is
// the SM share: sm_count / (sm_count − collective_ctas), the same work on the SMs the
// collective leaves; 1.22 on H100 with NCCL's 24 blocks, inside the 1.19 (mean) to 1.40
// (worst) measured in Lee et al., arXiv:2507.03114 (citations in compute_profile.cpp).
// The wave tail and the HBM the collective's copies take are not counted.
//
// How it is applied: a first simulated step measures, per rank, how long its compute
// ops overlap a collective of a side stream (the engine's overlap meter,
// EngineConfig::overlap_streams, which holds at any program size); each rank's compute
// then runs with the factor 1 + (ρ − 1)·overlap/compute in the step that is reported.
// First order: the overlap itself is taken from the unslowed step. Where that step finds
// no overlap at all (every factor exactly 1) it is the reported step, run once.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/engine.hpp"
#include "workloads/build/result.hpp"

namespace ls::wl {

/// The side streams whose collectives slow the compute beside them: every stream but
/// the main one and the overlap stream, whose collectives (TP comm-GEMM overlap, the
/// CP ring) are priced with their own SM-sharing factor (implementation.tp_overlap_slowdown,
/// stage_emitter.cpp): counting them here too would slow those GEMMs twice.
std::uint8_t interference_streams();

/// Whether any stage program has a collective on one of `streams` (a mask of stream
/// bits): without one the overlap meter reads zero on every rank and every factor below
/// is exactly 1. O(ops of the stage programs).
bool has_collectives_on(const sim::Program& prog, std::uint8_t streams);

/// The compute multiplier 1 + (ρ − 1) · beside / compute for `beside` seconds of a rank's
/// `compute` seconds run beside side-stream collectives (beside capped at compute); 1
/// without compute. The simulation's factor below and the search's estimate both use it.
double interference_factor(double rho, double beside_s, double compute_s);

/// Per rank: interference_factor(ρ, RankStats::compute_beside_comm, compute_busy), from
/// `stats` of a step `engine` ran with EngineConfig::overlap_streams =
/// interference_streams(). 1 for a rank without compute, and for one the symmetric fast
/// path did not run (the caller gives it its representative's factor). O(ranks).
std::vector<double> interference_factors(const sim::Engine& engine, const std::vector<sim::RankStats>& stats, double rho);

/// Books each stage's compute time beyond its kernels (what interference and scale noise,
/// scale_noise.hpp, added) under the breakdown's `launch` (reported as overhead), so that
/// the breakdown still adds up to the stage's measured compute time. Call after the
/// per-stage compute and the breakdown are folded, only when either slowed the compute.
/// O(stages).
void book_slowdown_as_overhead(Result& res);

}  // namespace ls::wl
