// tests/test_grad_reduce_dtype.cpp — precision.grad_reduce: a data-parallel gradient
// reduction in another dtype than the gradient buffer's (DeepSpeed's communication_data_type).
// The reduction moves r instead of g bytes per element, and casts the buffer to it and back
// before each reduction: 2·(g + r) bytes through HBM per element. Checked on the program's
// ops and a simulated step's bytes.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tools/scenario/scenario.hpp"
#include "workloads/build/program_builder.hpp"
#include "workloads/cost/kernels.hpp"
#include "workloads/cost/pass_costs.hpp"
#include "workloads/simulate.hpp"
#include "workloads/spec/vocabulary.hpp"

using namespace ls;

namespace {

// One node of `dp` H100s (two unless said), data parallel without ZeRO (an all-reduce of
// every gradient after the backward), fp32 gradients; `reduce` is precision.grad_reduce
// ("" leaves it unset).
std::string yaml(const std::string& reduce, int dp = 2) {
  const std::string n = std::to_string(dp);
  return "cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: " + n + "}\n" +
         "model: {layers: 2, hidden: 1024, heads: 8, ffn_hidden: 4096, vocab: 32000, seq_len: 1024, activation: gelu}\n" +
         "layout: {dp: " + n + ", microbatch_size: 1, microbatches: 2}\n" + "precision: {gradients: fp32" +
         (reduce.empty() ? "" : ", grad_reduce: " + reduce) + "}\nimplementation: {preset: deepspeed}\n";
}

wl::ResolvedScenario load(const std::string& text) { return tools::load_scenario_string(text, "<grad_reduce>"); }

bool is_dp_reduce(const sim::Op& op) {
  return op.kind == sim::OpKind::collective && op.tag == wl::tag(wl::Work::grad_sync) && op.group_slot == wl::slot(wl::Axis::dp);
}

/// Compute ops outside any micro-batch tagged backward: the casts (nothing else here).
std::vector<const sim::Op*> casts(const sim::StageProgram& st) {
  std::vector<const sim::Op*> out;
  for (const auto& op : st.streams[static_cast<std::size_t>(wl::stream::compute)])
    if (op.kind == sim::OpKind::compute && op.tag == wl::tag(wl::Work::backward) && op.labels[wl::label::microbatch] < 0) out.push_back(&op);
  return out;
}

}  // namespace

TEST_CASE("grad_reduce bf16 over fp32 gradients: each reduction moves half the bytes, after its two casts") {
  const auto fp32 = wl::build_program(*load(yaml("")));
  const auto s = load(yaml("bf16"));
  const auto bf16 = wl::build_program(*s);
  // Unset, or set to the gradients' own dtype: no casts, the same program.
  const auto same = wl::build_program(*load(yaml("fp32")));
  CHECK(casts(fp32.program.stages[0]).empty());
  CHECK(casts(same.program.stages[0]).empty());

  std::vector<double> full, half;
  for (const auto& op : fp32.program.stages[0].streams[static_cast<std::size_t>(wl::stream::dp)])
    if (is_dp_reduce(op)) full.push_back(op.bytes);
  for (const auto& op : bf16.program.stages[0].streams[static_cast<std::size_t>(wl::stream::dp)])
    if (is_dp_reduce(op)) half.push_back(op.bytes);
  REQUIRE(!full.empty());
  REQUIRE(full.size() == half.size());
  for (std::size_t i = 0; i < full.size(); ++i) CHECK(half[i] == doctest::Approx(full[i] / 2).epsilon(1e-12));

  // One cast op per reduction: 2·(4 + 2) bytes per element through HBM, the reduction's
  // elements being its bytes over r = 2.
  const auto cs = casts(bf16.program.stages[0]);
  REQUIRE(cs.size() == half.size());
  const wl::ComputeProfile profile = wl::kernel_profile(*s);
  for (std::size_t i = 0; i < cs.size(); ++i)
    CHECK(cs[i]->duration == wl::memory_time(profile, s->gpu, 2.0 * (4 + 2) * half[i] / 2));
}

TEST_CASE("grad_reduce bf16: a simulated step's dp bytes per device are half the fp32 reduction's") {
  wl::SimOptions opt;
  opt.what_if = false;
  const wl::Result fp32 = wl::simulate(load(yaml("")), opt);
  const wl::Result bf16 = wl::simulate(load(yaml("bf16")), opt);
  const auto dp = static_cast<std::size_t>(wl::Axis::dp);
  REQUIRE(fp32.comm[dp].bytes_per_device > 0);
  CHECK(bf16.comm[dp].bytes_per_device == doctest::Approx(fp32.comm[dp].bytes_per_device / 2).epsilon(1e-9));
  CHECK(bf16.step_time_s < fp32.step_time_s);
}

TEST_CASE("grad_reduce where nothing reduces gradients: the key is said to change nothing") {
  wl::SimOptions opt;
  opt.what_if = false;
  auto has = [](const wl::Result& r) {
    for (const auto& w : r.warnings)
      if (w.code == "grad-reduce-ignored") return true;
    return false;
  };
  CHECK(has(wl::simulate(load(yaml("bf16", 1)), opt)));
  CHECK_FALSE(has(wl::simulate(load(yaml("bf16")), opt)));
  CHECK_FALSE(has(wl::simulate(load(yaml("", 1)), opt)));
}
