// tests/test_zero3_prefetch.cpp — how ZeRO-3 gathers run: implementation.max_live_parameters
// (which module gathers are fetched ahead under DeepSpeed's rule, against the module sizes
// by hand) and implementation.per_parameter_sharding (FSDP2's copies, against their bytes).
#include <doctest/doctest.h>

#include <string>

#include "scenario_fixtures.hpp"
#include "tools/scenario/scenario.hpp"
#include "workloads/build/program_builder.hpp"
#include "workloads/build/offload.hpp"
#include "workloads/cost/kernels.hpp"
#include "workloads/cost/pass_costs.hpp"
#include "workloads/simulate.hpp"
#include "workloads/spec/vocabulary.hpp"

using namespace ls;

namespace {

/// One node of 8 A100s and a GPT of `layers` blocks of hidden 4096, as YAML lines.
std::string node_and_gpt(int layers, int seq_len) {
  return "cluster: {gpu: a100-80gb, nodes: 1, gpus_per_node: 8}\n"
         "model: {layers: " + std::to_string(layers) + ", hidden: 4096, heads: 32, ffn_hidden: 16384, vocab: 1024, seq_len: " +
         std::to_string(seq_len) + ", activation: gelu}\n";
}

// A GPT block of hidden 4096: modules of 3h² (QKV), h² (projection), 4h² and 4h² (MLP) =
// 50.3 M, 16.8 M, 67.1 M, 67.1 M parameters; ZeRO-3 over 8 GPUs, gathered per module and
// prefetched, no recompute (so no re-gather between recompute and backward).
std::string yaml(const std::string& max_live) {
  return node_and_gpt(4, 1024) +
         "layout: {dp: 8, zero: 3, microbatch_size: 1, microbatches: 1, recompute: none}\n"
         "implementation: {preset: deepspeed, param_gather_overlap: true, gather_granularity: module, "
         "gather_list_copies: false, max_reuse_distance: 0, max_live_parameters: " + max_live + "}\n";
}

/// Share of the weight all-gathers' bytes issued on the compute stream (not prefetched).
double exposed_share(const std::string& max_live) {
  const auto s = tools::load_scenario_string(yaml(max_live), "<prefetch>");
  const auto bp = wl::build_program(*s);
  double on_compute = 0, all = 0;
  const auto& st = bp.program.stages.front();
  for (auto stream : {wl::stream::compute, wl::stream::prefetch})
    for (const auto& op : st.streams[static_cast<std::size_t>(stream)]) {
      if (op.kind != sim::OpKind::collective || op.coll != sim::CollOp::all_gather) continue;
      const double bytes = op.bytes * op.repeat;
      all += bytes;
      if (stream == wl::stream::compute) on_compute += bytes;
    }
  REQUIRE(all > 0);
  return on_compute / all;
}

}  // namespace

TEST_CASE("max_live_parameters: a module after one of that many parameters or more waits for its own gather") {
  // No limit, or one above every module (1e8 > 67.1 M): everything prefetched.
  CHECK(exposed_share("0") == 0);
  CHECK(exposed_share("1e8") == 0);
  // 60 M: forward (QKV, proj, fc1, fc2), a module is exposed after fc2 (67 M) or fc1
  // (67 M): QKV and fc2, 7h² of 12h². Backward (fc2, fc1, proj, QKV): after fc2 and fc1:
  // fc1 and proj, 5h² of 12h². Each layer gathers the same bytes both ways: (7 + 5) / 24.
  // The first layer's gather also carries the (small) embedding, spread the same way.
  CHECK(exposed_share("6e7") == doctest::Approx(0.5).epsilon(0.01));
  // 40 M: QKV (50 M) now counts too. Forward: QKV after fc2, proj after QKV, fc2 after
  // fc1: 3 + 1 + 4 = 8h². Backward (the layer before fc2 ends in QKV): fc2 after QKV, fc1
  // after fc2, proj after fc1: 4 + 4 + 1 = 9h². (8 + 9) / 24.
  CHECK(exposed_share("4e7") == doctest::Approx(17.0 / 24).epsilon(0.01));
  // Below the smallest module (16.8 M): nothing is prefetched.
  CHECK(exposed_share("1e7") == doctest::Approx(1.0).epsilon(1e-12));
}

TEST_CASE("max_live_parameters: DeepSpeed's default in its preset, none elsewhere, a located error when negative") {
  const std::string base = "model: llama3-8b\nlayout: {dp: 8, zero: 3}\n";
  const auto load = [&](const std::string& implementation, const std::string& name) {
    return test::with_implementation(base, implementation, name);
  };
  CHECK(load("preset: deepspeed", "<ds>")->implementation.max_live_parameters == 1e9);
  CHECK(load("preset: megatron-core", "<mc>")->implementation.max_live_parameters == 0);
  CHECK(load("preset: pytorch-fsdp", "<fsdp>")->implementation.max_live_parameters == 0);
  const std::string what = test::scenario_error([&] { (void)load("max_live_parameters: -1", "bad.yaml"); });
  REQUIRE_MESSAGE(!what.empty(), "a negative max_live_parameters was accepted");
  CHECK(what.find("bad.yaml:3:") != std::string::npos);
  CHECK(what.find("implementation.max_live_parameters") != std::string::npos);
}

TEST_CASE("blocking_offload_copies: DeepSpeed's CPU checkpointing in its preset, overlapped copies elsewhere") {
  const std::string base = "model: llama3-8b\nlayout: {dp: 8, zero: 3, offload: {activations: true}}\n";
  const auto load = [&](const std::string& implementation, const std::string& name) {
    return test::with_implementation(base, implementation, name);
  };
  CHECK(load("preset: deepspeed", "<ds>")->implementation.blocking_offload_copies);
  CHECK_FALSE(load("preset: megatron-core", "<mc>")->implementation.blocking_offload_copies);
  CHECK_FALSE(load("preset: pytorch-fsdp", "<fsdp>")->implementation.blocking_offload_copies);
  CHECK_FALSE(load("preset: deepspeed, blocking_offload_copies: false", "<ds-off>")->implementation.blocking_offload_copies);
  const std::string what = test::scenario_error([&] { (void)load("blocking_offload_copies: maybe", "bad.yaml"); });
  REQUIRE_MESSAGE(!what.empty(), "a non-boolean blocking_offload_copies was accepted");
  CHECK(what.find("implementation.blocking_offload_copies") != std::string::npos);
}

TEST_CASE("overlapped activation offload beside prefetched ZeRO-3 gathers costs no more than its copies") {
  // The copies share the in-order prefetch stream with the weight gathers. Run one after
  // another they would take the step longer by their sum, at most; queued right behind
  // their layers' compute they used to hold each next layer's gather back until that
  // layer ended (the step 0.28 s longer here for 0.25 s of copies).
  const std::string yaml =
      node_and_gpt(8, 2048) + "layout: {dp: 8, zero: 3, microbatch_size: 2, microbatches: 2, recompute: none, offload: {activations: ";
  const auto with = tools::load_scenario_string(yaml + "true}}\n", "<offload>");
  const auto without = tools::load_scenario_string(yaml + "false}}\n", "<no-offload>");
  REQUIRE_FALSE(with->implementation.blocking_offload_copies);
  const wl::Result r = wl::simulate(with);
  REQUIRE(r.offload.present);
  const double copies = r.offload.pcie_bytes_per_device / wl::pcie_copy_rate(*with);
  const double excess = r.step_time_s - wl::simulate(without).step_time_s;
  CAPTURE(copies);
  CHECK(excess >= 0);
  CHECK(excess < copies);
}

TEST_CASE("per_parameter_sharding: FSDP2 copies each gather out and each reduce-scatter's input in, on the compute stream") {
  // ZeRO-3 over 8 A100s, one FSDP unit per layer: with FSDP2's per-parameter sharding the
  // compute stream gains, per gather call, one launch and the gathered bytes read and
  // written once; per gradient reduce-scatter, the unsharded gradients read in the weights'
  // dtype (2 B) and written in the reduce dtype (fp32: 4 B). Nothing else changes.
  const std::string base = node_and_gpt(4, 1024) +
                           "layout: {dp: 8, zero: 3, microbatch_size: 1, microbatches: 2, recompute: none}\n"
                           "precision: {weights: bf16, gradients: fp32}\n";
  const auto flat = tools::load_scenario_string(base + "implementation: {preset: pytorch-fsdp}\n", "<flat>");
  const auto fsdp2 = tools::load_scenario_string(base + "implementation: {preset: torchtitan}\n", "<fsdp2>");
  CHECK_FALSE(flat->implementation.per_parameter_sharding);
  REQUIRE(fsdp2->implementation.per_parameter_sharding);
  const auto a = wl::build_program(*flat), b = wl::build_program(*fsdp2);
  const wl::ComputeProfile profile = wl::kernel_profile(*fsdp2);
  auto compute_seconds = [](const wl::BuiltProgram& bp) {
    double t = 0;
    for (const auto& op : bp.program.stages.front().streams[static_cast<std::size_t>(wl::stream::compute)])
      if (op.kind == sim::OpKind::compute) t += op.duration.seconds();
    return t;
  };
  double expect = 0;
  int gathers = 0, scatters = 0;
  const auto& st = b.program.stages.front();
  for (auto stream : {wl::stream::compute, wl::stream::prefetch, wl::stream::dp})
    for (const auto& op : st.streams[static_cast<std::size_t>(stream)]) {
      if (op.kind != sim::OpKind::collective) continue;
      const double bytes = op.bytes * op.repeat;
      if (op.coll == sim::CollOp::all_gather) {
        ++gathers;
        expect += op.repeat * profile.launch_overhead_s + wl::memory_time(profile, fsdp2->gpu, 2 * bytes).seconds();
      } else if (op.coll == sim::CollOp::reduce_scatter) {
        ++scatters;
        expect += wl::memory_time(profile, fsdp2->gpu, (2.0 + 4.0) / 4.0 * bytes).seconds();
      }
    }
  // Forward and backward gathers of 4 layers (and the embedding's unit) per micro-batch,
  // a reduce-scatter per layer per micro-batch.
  CHECK(gathers >= 2 * 2 * 4);
  CHECK(scatters >= 2 * 4);
  // Every op's time is rounded to a picosecond, the sum's error far below 1e-9 of it.
  CHECK(compute_seconds(b) - compute_seconds(a) == doctest::Approx(expect).epsilon(1e-9));
  // The preset is pytorch-fsdp's but for the sharding: the same step without it.
  auto same = tools::load_scenario_string(base + "implementation: {preset: torchtitan, per_parameter_sharding: false}\n", "<same>");
  CHECK(compute_seconds(wl::build_program(*same)) == doctest::Approx(compute_seconds(a)).epsilon(1e-12));
}
