// tests/test_memory_options.cpp — gradient accumulation under ZeRO-2/3, HSDP shard
// groups, memory headroom and offload, against closed forms.
#include <doctest/doctest.h>

#include <string>

#include "fixtures.hpp"
#include "workloads/model/headroom.hpp"
#include "workloads/model/layout.hpp"
#include "workloads/advice/diagnostics.hpp"
#include "workloads/advice/memory_remedies.hpp"
#include "workloads/model/model.hpp"
#include "workloads/build/offload.hpp"
#include "workloads/layout_report.hpp"
#include "workloads/build/program_totals.hpp"
#include "workloads/build/program_builder.hpp"
#include "workloads/resolve.hpp"
#include "workloads/simulate.hpp"
#include "workloads/build/stage_memory.hpp"
#include "workloads/spec/vocabulary.hpp"

using namespace ls;
using namespace ls::wl;

namespace {

/// One node of `dp` H100s, pure data parallelism, 4 layers, free communication (the
/// byte accounting is the real network's), embedding and head free: the state of the
/// device is exactly P = 4·layer_params parameters.
Scenario data_parallel(int dp, int zero, int microbatches) {
  Scenario s;
  s.cluster.nodes = 1;
  s.cluster.gpus_per_node = dp;
  s.cluster.ideal_network = true;
  s.gpu = *gpu_preset("h100-sxm");
  s.model = test::small_model(4);
  s.layout.dp = dp;
  s.layout.zero = zero;
  s.layout.microbatches = microbatches;
  s.layout.embedding_free = true;
  s.precision.master = 4;  // what resolve() sets for bf16 weights
  return s;
}

double layer_state_params(const Scenario& s) { return s.model.layers * layer_params(s.model); }

/// Bytes the program's ops of kind `work` on `stream` carry, stage 0.
double op_bytes(const BuiltProgram& bp, sim::Stream st, Work work) {
  double b = 0;
  for (const auto& op : bp.program.stages[0].streams[static_cast<std::size_t>(st)])
    if (work_of(op) == work) b += op.bytes;
  return b;
}

}  // namespace

TEST_CASE("ZeRO-2/3 reduce-scatter every micro-batch; accumulate_unsharded reduces once and keeps full gradients") {
  // P parameters, g = 4 B gradients, m = 4 micro-batches, dp = 4. Gradient bytes handed to
  // the dp reductions per step: m·P·g per micro-batch reduce-scatter, P·g once unsharded.
  const int m = 4, d = 4;
  for (int zero : {2, 3}) {
    Scenario s = data_parallel(d, zero, m);
    const double P = layer_state_params(s), g = s.precision.gradients;
    const BuiltProgram every = build_program(s);
    CHECK(op_bytes(every, stream::dp, Work::grad_sync) == doctest::Approx(m * P * g).epsilon(1e-9));
    CHECK(every.static_memory[0].gradients == doctest::Approx(P * g / d).epsilon(1e-12));
    s.layout.accumulate_unsharded = true;
    const BuiltProgram once = build_program(s);
    CHECK(op_bytes(once, stream::dp, Work::grad_sync) == doctest::Approx(P * g).epsilon(1e-9));
    CHECK(once.static_memory[0].gradients == doctest::Approx(P * g).epsilon(1e-12));  // as ZeRO-1
  }
  // Simulated dp bytes per device under ZeRO-2 (ring: each member sends (n−1)/n of the
  // buffer per reduce-scatter and per all-gather): (n−1)/n·(m·P·g + P·w) — the gradients
  // every micro-batch, the updated weights gathered once.
  Scenario s = data_parallel(d, 2, m);
  const double P = layer_state_params(s), g = s.precision.gradients, w = s.precision.weights;
  const double k = (d - 1.0) / d;
  CHECK(simulate(resolve(s)).comm[static_cast<int>(Axis::dp)].bytes_per_device == doctest::Approx(k * (m * P * g + P * w)).epsilon(1e-6));
  s.layout.accumulate_unsharded = true;
  CHECK(simulate(resolve(s)).comm[static_cast<int>(Axis::dp)].bytes_per_device == doctest::Approx(k * (P * g + P * w)).epsilon(1e-6));
}

TEST_CASE("ZeRO-2/3 with pipeline parallelism warns (Megatron and DeepSpeed do not run it)") {
  Scenario s = test::uniform_pipeline(2, 4);
  s.cluster.gpus_per_node = 4;
  s.layout.dp = 2;
  s.layout.zero = 2;
  auto has = [](const Result& r, const std::string& code) {
    for (const auto& w : r.warnings)
      if (w.code == code) return true;
    return false;
  };
  CHECK(has(simulate(resolve(s)), "zero-with-pp"));
  s.layout.zero = 1;
  CHECK_FALSE(has(simulate(resolve(s)), "zero-with-pp"));
}

TEST_CASE("HSDP: ZeRO shards over the shard group, the shard all-reduces across replicas") {
  // dp = 8 = 4 shard groups of 2; ZeRO-3, m = 1. Memory: every state term / 2.
  const int d = 8, gsz = 2, R = d / gsz;
  Scenario s = data_parallel(d, 3, 1);
  s.layout.shard_group = gsz;
  const double P = layer_state_params(s);
  const auto& pr = s.precision;
  const BuiltProgram bp = build_program(s);
  const auto& mt = bp.static_memory[0];
  CHECK(mt.weights == doctest::Approx(P * pr.weights / gsz).epsilon(1e-12));
  CHECK(mt.gradients == doctest::Approx(P * pr.gradients / gsz).epsilon(1e-12));
  CHECK(mt.optimizer == doctest::Approx(P * pr.optimizer / gsz).epsilon(1e-12));
  // Groups: 4 shard groups of 2 consecutive dp ranks (dp slot), 2 replica groups of 4.
  int shard_groups = 0, replica_groups = 0;
  for (const auto& g : bp.program.groups) {
    if (axis_of(g) == Axis::dp) { ++shard_groups; CHECK(g.ranks.size() == gsz); }
    if (axis_of(g) == Axis::dpr) { ++replica_groups; CHECK(g.ranks.size() == R); }
  }
  CHECK(shard_groups == R);
  CHECK(replica_groups == gsz);
  // Ops: the replica all-reduces carry the reduced shard, (P·g)/shard_group in all.
  CHECK(op_bytes(bp, stream::dp, Work::grad_sync) == doctest::Approx(P * pr.gradients * (1 + 1.0 / gsz)).epsilon(1e-9));
  // Simulated bytes per device, one micro-batch: in the shard group (ring, 2 members)
  // ½·(2·P·w gathers + P·g reduce-scatter); across replicas a ring all-reduce of the
  // shard, 2·(R−1)/R · P·g/2.
  const double expect = (gsz - 1.0) / gsz * (2 * P * pr.weights + P * pr.gradients) + 2.0 * (R - 1) / R * P * pr.gradients / gsz;
  CHECK(simulate(resolve(s)).comm[static_cast<int>(Axis::dp)].bytes_per_device == doctest::Approx(expect).epsilon(1e-6));
}

TEST_CASE("HSDP validation: shard_group divides dp and needs ZeRO") {
  Scenario s = data_parallel(8, 1, 1);
  s.layout.shard_group = 3;
  auto first_key = [](const Scenario& x) {
    const auto errors = validate(x);
    return errors.empty() ? std::string() : errors.front().key_path;
  };
  CHECK(first_key(s) == "layout.shard_group");
  s.layout.shard_group = 4;
  CHECK(first_key(s).empty());
  s.layout.zero = 0;
  CHECK(first_key(s) == "layout.shard_group");
}

TEST_CASE("headroom: usable = capacity - reserved - fragmentation * capacity") {
  Scenario s = data_parallel(4, 1, 1);
  s.gpu.memory_bytes = 80e9;  // round figures for the arithmetic below
  // 80e9 B; default reserved 2e9 B; fragmentation 0.05 -> 80 - 2 - 4 = 74 GB.
  CHECK(usable_memory_bytes(s) == doctest::Approx(74e9));
  s.gpu.reserved_memory_bytes = 4e9;
  s.memory.fragmentation = 0.1;
  CHECK(usable_memory_bytes(s) == doctest::Approx(68e9));
  CHECK(memory_fits(s, 68e9));
  // Three states: over usable but within capacity - reserved (76 GB) is tight, which
  // still fits (the allocator's fragmentation margin is what is short); past it, no fit.
  CHECK(memory_verdict(s, 68e9) == MemoryVerdict::fits);
  CHECK(memory_verdict(s, 68.1e9) == MemoryVerdict::tight);
  CHECK(memory_fits(s, 68.1e9));
  CHECK(memory_verdict(s, 76e9) == MemoryVerdict::tight);
  CHECK(memory_verdict(s, 76.1e9) == MemoryVerdict::does_not_fit);
  CHECK_FALSE(memory_fits(s, 76.1e9));
  CHECK(std::string(memory_verdict_name(MemoryVerdict::does_not_fit)) == "does-not-fit");
  s.memory.fragmentation = 0.6;
  CHECK(validate(s).front().key_path == "memory.fragmentation");
  s.memory.fragmentation = 0.05;
  s.gpu.reserved_memory_bytes = 30e9;
  CHECK(validate(s).front().key_path == "cluster.gpu.reserved_memory");
}

TEST_CASE("headroom: memory-tight above 95% of usable, out-of-memory above usable; the plan says usable") {
  Scenario s = data_parallel(4, 1, 1);
  auto codes = [](const Scenario& x) {
    std::string out;
    for (const auto& w : layout_report(resolve(x)).warnings) out += w.code + " ";
    return out;
  };
  const double peak = layout_report(resolve(s)).memory_per_stage[0].peak;
  // No reserve, no fragmentation: usable = capacity. Peak at 97 % of it, then 101 %.
  s.gpu.reserved_memory_bytes = 0;
  s.memory.fragmentation = 0;
  s.gpu.memory_bytes = peak / 0.97;
  CHECK(layout_report(resolve(s)).memory_usable_bytes == doctest::Approx(peak / 0.97));
  CHECK(codes(s).find("memory-tight") != std::string::npos);
  s.gpu.memory_bytes = peak / 1.01;
  CHECK(codes(s).find("out-of-memory") != std::string::npos);
  CHECK(codes(s).find("memory-tight") == std::string::npos);
}

TEST_CASE("activation offload: bytes over PCIe per step and the activations that stay") {
  // L layers in one chunk, m micro-batches: the first L−2 layers' activations go down in
  // the forward and come back in the backward: 2·m·(L−2)·a bytes per step, each copy
  // a/(0.8·pcie_bandwidth) long.
  Scenario s = data_parallel(1, 0, 4);
  s.model = test::small_model(6);
  const int m = 4, L = 6;
  const BuiltProgram base = build_program(s);
  s.layout.offload.activations = true;
  const BuiltProgram bp = build_program(s);
  const double a = layer_activation(s, pass_bytes(s), 0);
  CHECK(op_bytes(bp, stream::prefetch, Work::offload) == doctest::Approx(2.0 * m * (L - 2) * a).epsilon(1e-9));
  for (const auto& op : bp.program.stages[0].streams[static_cast<std::size_t>(stream::prefetch)])
    if (work_of(op) == Work::offload)
      CHECK(op.duration.seconds() == doctest::Approx(a / (kPcieCopyEfficiency * s.cluster.inter.pcie_bandwidth_Bps)).epsilon(1e-6));
  // 1F1B with pp = 1 runs one micro-batch at a time: the peak held without offload is
  // L·a, with offload at most three layers (two resident, one whose copy is in flight).
  const double before = program_totals(base.program).activation_peak_bytes[0];
  const double after = program_totals(bp.program).activation_peak_bytes[0];
  CHECK(before == doctest::Approx(L * a).epsilon(1e-9));
  CHECK(after <= 3 * a * (1 + 1e-9));
  // The same bytes in the run's offload report, and their share of the PCIe rate.
  const Result r = simulate(resolve(s));
  REQUIRE(r.offload.present);
  CHECK(r.offload.pcie_bytes_per_device == doctest::Approx(2.0 * m * (L - 2) * a).epsilon(1e-9));
  CHECK(r.offload.pcie_utilization ==
        doctest::Approx(r.offload.pcie_bytes_per_device / (s.cluster.inter.pcie_bandwidth_Bps * r.step_time_s)).epsilon(1e-9));
}

TEST_CASE("blocking activation offload: every layer down after its forward and back before its backward, each waited for") {
  // DeepSpeed's CPU checkpointing: on one GPU with free communication nothing runs beside
  // the compute stream, so the step is the step without offload plus every copy,
  // 2·m·L of them of a/(0.8·pcie_bandwidth) each, and no more than one layer's
  // activations are on the GPU at a time.
  Scenario s = data_parallel(1, 0, 4);
  s.model = test::small_model(6);
  const int m = 4, L = 6;
  const Result bare = simulate(resolve(s));
  s.layout.offload.activations = true;
  s.implementation.blocking_offload_copies = true;
  const BuiltProgram bp = build_program(s);
  const double a = layer_activation(s, pass_bytes(s), 0);
  const double copy = a / (kPcieCopyEfficiency * s.cluster.inter.pcie_bandwidth_Bps);
  CHECK(op_bytes(bp, stream::compute, Work::offload) == doctest::Approx(2.0 * m * L * a).epsilon(1e-9));
  CHECK(op_bytes(bp, stream::prefetch, Work::offload) == 0);
  CHECK(program_totals(bp.program).activation_peak_bytes[0] == doctest::Approx(a).epsilon(1e-9));
  const Result r = simulate(resolve(s));
  CHECK(r.step_time_s == doctest::Approx(bare.step_time_s + 2.0 * m * L * copy).epsilon(1e-9));
  CHECK(r.offload.pcie_bytes_per_device == doctest::Approx(2.0 * m * L * a).epsilon(1e-9));
  // The overlapped copies hide under the compute here: the step barely moves.
  s.implementation.blocking_offload_copies = false;
  CHECK(simulate(resolve(s)).step_time_s < bare.step_time_s + 2.0 * m * (L - 2) * copy);
}

TEST_CASE("optimizer offload: no master or moments on the GPU; the step is D2H + CPU Adam + H2D") {
  Scenario s = data_parallel(1, 0, 1);
  const double P = layer_state_params(s);
  s.layout.offload.optimizer = true;
  const BuiltProgram bp = build_program(s);
  CHECK(bp.static_memory[0].master == 0);
  CHECK(bp.static_memory[0].optimizer == 0);
  // PCIe bytes per step: P·(g + w); CPU Adam: P·(g + 2(m + o) + w) bytes of host memory.
  CHECK(optimizer_offload_bytes(s, P) == doctest::Approx(P * (4 + 2)));
  const double expect = P * 6 / (kPcieCopyEfficiency * s.cluster.inter.pcie_bandwidth_Bps) + P * (4 + 2 * (4 + 8) + 2) / kHostMemoryBandwidthPerGpu;
  double opt_s = 0;
  for (const auto& op : bp.program.stages[0].streams[static_cast<std::size_t>(stream::compute)])
    if (work_of(op) == Work::optimizer) opt_s += op.duration.seconds();
  CHECK(opt_s == doctest::Approx(expect).epsilon(1e-6));
}

TEST_CASE("ZeRO-3 optimizer offload as DeepSpeed runs it: each shard goes down after its reduce-scatter, the backward waiting") {
  // Eight GPUs, ZeRO-3, two micro-batches, reductions beside the backward. With
  // blocking_offload_copies the last micro-batch's every reduce-scatter is followed on the
  // compute stream by the copy of its shard, which waits for it; the step's end then copies
  // only the updated weights up. The bytes are the same either way: P/8·g down during the
  // backward, P/8·w up at the end.
  Scenario s = data_parallel(8, 3, 2);
  const double P = layer_state_params(s), shard = P / 8;
  s.layout.offload.optimizer = true;
  s.implementation.dp_overlap = true;
  s.implementation.blocking_offload_copies = false;
  CHECK_FALSE(gradient_shards_copied_in_backward(s));
  const BuiltProgram at_end = build_program(s);
  const Result free_at_end = simulate(resolve(s));
  s.implementation.blocking_offload_copies = true;
  REQUIRE(gradient_shards_copied_in_backward(s));
  const BuiltProgram during = build_program(s);
  CHECK(op_bytes(at_end, stream::compute, Work::offload) == 0);
  CHECK(op_bytes(during, stream::compute, Work::offload) == doctest::Approx(shard * s.precision.gradients).epsilon(1e-9));
  CHECK(optimizer_offload_bytes(s, shard) == doctest::Approx(shard * s.precision.weights));
  // One copy per reduce-scatter of the last micro-batch, each right after it on the dp stream.
  const auto& st = during.program.stages[0];
  const auto& compute = st.streams[static_cast<std::size_t>(stream::compute)];
  const auto& dp = st.streams[static_cast<std::size_t>(stream::dp)];
  int copies = 0;
  for (const auto& op : compute) {
    if (work_of(op) != Work::offload) continue;
    ++copies;
    REQUIRE(op.dep_count == 1);
    const sim::OpRef dep = st.deps[op.dep_begin];
    CHECK(dep.stream == static_cast<std::uint8_t>(stream::dp));
    CHECK(work_of(dp[dep.index]) == Work::grad_sync);
  }
  CHECK(copies > 0);
  CHECK(2 * copies == static_cast<int>(dp.size()));
  // Free communication: the copies only moved, the step is the same; on the node's
  // NVSwitch the backward now waits for every reduction of its last micro-batch.
  const Result free_during = simulate(resolve(s));
  CHECK(free_during.step_time_s == doctest::Approx(free_at_end.step_time_s).epsilon(1e-12));
  CHECK(free_during.offload.pcie_bytes_per_device == doctest::Approx(free_at_end.offload.pcie_bytes_per_device).epsilon(1e-12));
  s.cluster.ideal_network = false;
  const Result waits = simulate(resolve(s));
  s.implementation.blocking_offload_copies = false;
  CHECK(waits.step_time_s > simulate(resolve(s)).step_time_s);
}

TEST_CASE("out-of-memory remedies: offload and HSDP candidates, valid layouts only") {
  Scenario s = data_parallel(8, 0, 1);
  s.cluster.gpus_per_node = 4;
  s.cluster.nodes = 2;
  const auto rs = memory_remedies(s);
  REQUIRE(rs.size() == 4);
  CHECK(rs[0].change == "layout.zero: 1");
  CHECK(rs[1].change == "layout.zero: 3, layout.shard_group: 4");
  CHECK(rs[2].change == "layout.offload.activations: true");
  CHECK(rs[3].change == "layout.offload.optimizer: true");
  CHECK(built_peak_bytes(rs[1].scenario) < built_peak_bytes(s));
  // With pipeline parallelism ZeRO stops at 1 and there is no HSDP candidate: both
  // would raise zero-with-pp, which the scenario does not have.
  Scenario piped = test::uniform_pipeline(2, 4);
  piped.precision.master = 4;
  piped.cluster.gpus_per_node = 4;
  piped.layout.dp = 2;
  piped.layout.zero = 1;
  const auto rp = memory_remedies(piped);
  REQUIRE(rp.size() == 2);
  CHECK(rp[0].change == "layout.offload.activations: true");
  for (const auto& r : rp) CHECK(scenario_warnings(r.scenario).empty());
  Scenario zero2 = piped;  // the same layout with ZeRO-2 asked for: a remedy may not add a warning
  zero2.layout.zero = 2;
  CHECK(scenario_warnings(zero2).size() == 1);
  CHECK(scenario_warnings(zero2).front().code == "zero-with-pp");
}

TEST_CASE("the loss's working buffers: fused holds lo + f32 then lo, eager lo + 2·f32 then 2·f32; the peak counts them") {
  // T tokens of the micro-batch on a device, V/t logits each: lo = T·V/t·2 (bf16), f32 =
  // T·V/t·4. At the loss every forward activation of the micro-batch is kept, so the
  // backward's buffers sit on top of all of them (with the kept softmax, f32 ≥ lo) and the
  // step's peak differs between the two forms by exactly 2·f32 − lo = 3·lo.
  Scenario s = data_parallel(2, 1, 2);
  s.layout.embedding_free = false;
  s.layout.tp = 2;
  s.layout.dp = 1;
  s.layout.microbatch_size = 2;
  const double T = 2.0 * s.model.seq_len, V = s.model.vocab / 2.0;
  const double lo = T * V * 2, f32 = T * V * 4;
  auto peak = [&](bool fused) {
    Scenario x = s;
    x.implementation.fused_loss = fused;
    const PassBytes b = pass_bytes(x);
    CHECK(b.loss_working.forward == doctest::Approx(fused ? lo + f32 : lo + 2 * f32));
    CHECK(b.loss_working.backward == doctest::Approx(fused ? lo : 2 * f32));
    const BuiltProgram bp = build_program(x);
    return program_totals(bp.program).activation_peak_bytes[0];
  };
  const double eager = peak(false), fused = peak(true);
  CHECK(eager - fused == doctest::Approx(3 * lo).epsilon(1e-9));
  // The simulated peak is the plan's: the engine counts the working buffers as the
  // program's totals do.
  Scenario x = s;
  x.implementation.fused_loss = false;
  const ResolvedScenario rx = resolve(x);
  const BuiltProgram bp = build_program(rx.scenario());
  const MemoryTerms& m = bp.static_memory[0];
  const Result r = simulate(rx);
  CHECK(r.max_peak_bytes == doctest::Approx(m.weights + m.gradients + m.master + m.optimizer + m.buffers +
                                            program_totals(bp.program).activation_peak_bytes[0])
                                .epsilon(1e-9));
}
