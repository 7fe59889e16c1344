// tests/test_zero12_sync.cpp — ZeRO-1/2's synchronisation of a step. Where the all-gathers
// of the updated weights run: after the optimizer when not overlapped (Megatron's
// distributed optimizer and DeepSpeed's ZeRO-1/2 gather synchronously at the end of their
// step), before each layer's first forward on the prefetch stream when overlapped. How
// ZeRO-1's gradients reach each shard (implementation.zero1_grad_reduce). Checked on the
// program's ops, its bytes and a simulated step.
#include <doctest/doctest.h>

#include <string>

#include "tools/scenario/scenario.hpp"
#include "workloads/build/program_builder.hpp"
#include "workloads/simulate.hpp"
#include "workloads/spec/vocabulary.hpp"

using namespace ls;

namespace {

// Four nodes of two H100s: pp 4 × dp 2 with ZeRO-1, each stage's two data-parallel ranks in
// one node (placement [tp, dp, pp]), so no two stages' gathers share a link. One layer
// per stage (one gather each), one micro-batch: the step is the pipeline's chain, then stage 0's gradient
// reduce-scatter, optimizer and gathers.
std::string yaml(bool overlap, const std::string& extra = "") {
  return std::string(
             "cluster: {gpu: h100-sxm, nodes: 4, gpus_per_node: 2}\n"
             "model: {layers: 4, hidden: 2048, heads: 16, ffn_hidden: 8192, vocab: 32000, seq_len: 2048, activation: gelu}\n"
             "layout: {pp: 4, dp: 2, zero: 1, microbatch_size: 1, microbatches: 1}\n"
             "implementation: {preset: megatron-core, dp_overlap: false, param_gather_overlap: ") +
         (overlap ? "true" : "false") + extra + "}\n";
}

wl::ResolvedScenario load(const std::string& text) { return tools::load_scenario_string(text, "<gathers>"); }

bool is_param_gather(const sim::Op& op) {
  return op.kind == sim::OpKind::collective && op.tag == static_cast<std::uint8_t>(wl::Work::param_gather);
}

}  // namespace

TEST_CASE("ZeRO-1 without overlap: every layer's gather runs after the optimizer, on the compute stream") {
  const auto bp = wl::build_program(*load(yaml(false)));
  REQUIRE(bp.program.stages.size() == 4);
  for (const auto& st : bp.program.stages) {
    CHECK(st.streams[static_cast<std::size_t>(wl::stream::prefetch)].empty());
    const auto& ops = st.streams[static_cast<std::size_t>(wl::stream::compute)];
    std::size_t optimizer = ops.size();
    for (std::size_t i = 0; i < ops.size(); ++i)
      if (ops[i].tag == static_cast<std::uint8_t>(wl::Work::optimizer)) optimizer = i;
    REQUIRE(optimizer < ops.size());
    int after = 0;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (!is_param_gather(ops[i])) continue;
      CHECK(i > optimizer);
      ++after;
    }
    CHECK(after == 1);  // one per layer of the stage
  }
}

TEST_CASE("ZeRO-1 gathers after the optimizer cost one stage's gathers, as overlapped ones do with one micro-batch") {
  // Overlapped, each stage's gathers start with the step on the prefetch stream: stage 0's
  // forward waits for its own, every later stage's are done long before its input
  // arrives. After the optimizer, stage 0 (the last to finish) runs its own at the end.
  // Either way the step is the chain plus stage 0's gathers: equal steps, up to the
  // slowdown of what computes beside the overlapped gathers (stage 0's embedding, 20 µs:
  // 0.2 % here), hence 1 %. Gathering before each stage's first forward would put all
  // four stages' gathers on the chain: 3 × 0.34 ms more on a 10 ms step.
  wl::SimOptions opt;
  opt.what_if = false;
  const wl::Result after = wl::simulate(load(yaml(false)), opt);
  const wl::Result overlapped = wl::simulate(load(yaml(true)), opt);
  CHECK(after.step_time_s == doctest::Approx(overlapped.step_time_s).epsilon(0.01));
  const auto dp = static_cast<std::size_t>(wl::Axis::dp);
  CHECK(after.comm[dp].bytes_per_device == doctest::Approx(overlapped.comm[dp].bytes_per_device));
  CHECK(after.comm[dp].exposed_s > 0);
}

TEST_CASE("zero1_grad_reduce all-reduce moves (n-1)/n of the gradient buffer more per device than reduce-scatter") {
  // Ring over n = 2 ranks: a reduce-scatter sends (n−1)/n·S of an S-byte buffer, an
  // all-reduce twice that; the weight gathers are the same. So the dp bytes per device
  // differ by (n−1)/n · S, S the stage's gradient buffers (the grad_sync ops' bytes).
  const auto rs = load(yaml(false));
  const auto ar = load(yaml(false, ", zero1_grad_reduce: all-reduce"));
  const auto prog_rs = wl::build_program(*rs), prog_ar = wl::build_program(*ar);
  double S = 0;  // summed over the stages
  for (std::size_t st = 0; st < prog_rs.program.stages.size(); ++st) {
    for (const auto* prog : {&prog_rs, &prog_ar}) {
      int reduce_scatters = 0, all_reduces = 0;
      for (const auto& op : prog->program.stages[st].streams[static_cast<std::size_t>(wl::stream::dp)]) {
        if (op.tag != static_cast<std::uint8_t>(wl::Work::grad_sync)) continue;
        reduce_scatters += op.coll == sim::CollOp::reduce_scatter ? 1 : 0;
        all_reduces += op.coll == sim::CollOp::all_reduce ? 1 : 0;
        if (prog == &prog_rs) S += op.bytes * op.repeat;
      }
      CHECK((prog == &prog_rs ? reduce_scatters : all_reduces) > 0);
      CHECK((prog == &prog_rs ? all_reduces : reduce_scatters) == 0);
    }
  }
  REQUIRE(S > 0);
  wl::SimOptions opt;
  opt.what_if = false;
  const auto dp = static_cast<std::size_t>(wl::Axis::dp);
  const double extra = wl::simulate(ar, opt).comm[dp].bytes_per_device - wl::simulate(rs, opt).comm[dp].bytes_per_device;
  CHECK(extra == doctest::Approx(0.5 * S / 4).epsilon(1e-9));  // (n−1)/n = 1/2, the mean over 4 stages
}

TEST_CASE("zero1_grad_reduce all-reduce under ZeRO-2 warns that it does not apply") {
  auto has = [](const wl::Result& r, const std::string& code) {
    for (const auto& w : r.warnings)
      if (w.code == code) return true;
    return false;
  };
  wl::SimOptions opt;
  opt.what_if = false;
  std::string z2 = yaml(false, ", zero1_grad_reduce: all-reduce");
  z2.replace(z2.find("zero: 1"), 7, "zero: 2");
  CHECK(has(wl::simulate(load(z2), opt), "zero1-grad-reduce-ignored"));
  CHECK_FALSE(has(wl::simulate(load(yaml(false, ", zero1_grad_reduce: all-reduce")), opt), "zero1-grad-reduce-ignored"));
}
