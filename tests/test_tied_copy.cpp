// tests/test_tied_copy.cpp — a tied embedding table split over the pipeline. The stage of
// the LM head keeps a copy of the table (what an untied head costs it, in memory and in
// gradient reduction), and the copies' gradients are summed over the pair of end stages
// before the optimizer: one all-reduce of V·h/tp gradients, on the pp slot, that a
// pipeline of one stage, a schedule with both ends on one stage, or a frozen table does not
// have. Checked on the program's ops, its static memory, and a simulated step.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tools/scenario/scenario.hpp"
#include "workloads/build/program_builder.hpp"
#include "workloads/simulate.hpp"
#include "workloads/spec/vocabulary.hpp"

using namespace ls;

namespace {

constexpr double kVocab = 32000, kHidden = 2048;

// Two nodes of one H100 each, so that the pair's all-reduce crosses the one InfiniBand
// link between them; four layers, one micro-batch unless `layout` says.
std::string yaml(bool tied, const std::string& layout = "pp: 2", const std::string& extra = "") {
  return std::string("cluster: {gpu: h100-sxm, nodes: 2, gpus_per_node: 1}\n"
                     "model: {layers: 4, hidden: 2048, heads: 16, ffn_hidden: 8192, vocab: 32000, seq_len: 2048, "
                     "activation: gelu, tied_embeddings: ") +
         (tied ? "true" : "false") + "}\nlayout: {" + layout +
         (layout.find("microbatches") == std::string::npos ? ", microbatch_size: 1, microbatches: 1" : "") + "}\n" +
         "implementation: {preset: megatron-core}\n" + extra;
}

wl::ResolvedScenario load(const std::string& text) { return tools::load_scenario_string(text, "<tied>"); }

bool is_pair_sum(const sim::Op& op) {
  return op.kind == sim::OpKind::collective && op.group_slot == wl::slot(wl::Axis::pp);
}

/// The pair sums of each stage's compute stream, checked to sit before its optimizer op.
std::vector<const sim::Op*> pair_sums(const sim::StageProgram& st) {
  const auto& ops = st.streams[static_cast<std::size_t>(wl::stream::compute)];
  std::vector<const sim::Op*> sums;
  bool optimizer_seen = false;
  for (const auto& op : ops) {
    if (op.tag == wl::tag(wl::Work::optimizer)) optimizer_seen = true;
    if (!is_pair_sum(op)) continue;
    CHECK_FALSE(optimizer_seen);
    sums.push_back(&op);
  }
  return sums;
}

double state(const wl::MemoryTerms& m) { return m.weights + m.gradients + m.master + m.optimizer; }

}  // namespace

TEST_CASE("a tied table over two stages: each end stage all-reduces V·h/tp gradients with its pair, before the optimizer") {
  const auto s = load(yaml(true));
  const auto bp = wl::build_program(*s);
  REQUIRE(bp.program.stages.size() == 2);
  const double bytes = kVocab * kHidden * s->precision.gradients;
  for (const auto& st : bp.program.stages) {
    const auto sums = pair_sums(st);
    REQUIRE(sums.size() == 1);
    CHECK(sums[0]->coll == sim::CollOp::all_reduce);
    CHECK(sums[0]->tag == wl::tag(wl::Work::grad_sync));
    CHECK(sums[0]->bytes == doctest::Approx(bytes).epsilon(1e-12));
  }
  // One group: rank 0 (stage 0) with rank 1 (stage 1).
  const auto& r0 = bp.program.ranks[0];
  const auto& r1 = bp.program.ranks[1];
  const auto pp = static_cast<std::size_t>(wl::Axis::pp);
  REQUIRE(r0.group[pp] >= 0);
  CHECK(r0.group[pp] == r1.group[pp]);
  CHECK(bp.program.groups[static_cast<std::size_t>(r0.group[pp])].ranks == std::vector<std::int32_t>{0, 1});
}

TEST_CASE("no pair sum without a copy: untied, one stage, both ends on one stage (zb-v, dualpipe), or a frozen table") {
  for (const std::string& text : {yaml(false), yaml(true, "pp: 1, dp: 2"), yaml(true, "pp: 2, schedule: zb-v, virtual_stages: 2"),
                                  yaml(true, "pp: 2, schedule: dualpipe, microbatches: 4"),
                                  yaml(true, "pp: 2", "training: {method: full-finetune, frozen: [embedding]}\n")}) {
    CAPTURE(text);
    const auto bp = wl::build_program(*load(text));
    for (const auto& st : bp.program.stages) CHECK(pair_sums(st).empty());
    for (const auto& r : bp.program.ranks) CHECK(r.group[static_cast<std::size_t>(wl::Axis::pp)] < 0);
  }
}

TEST_CASE("the copy costs the head's stage what an untied head does; on one stage the tied table is held once") {
  // Split over two stages, tied and untied hold the same parameters on every stage: the
  // untied head's V·h there is the copy's.
  const auto tied = wl::build_program(*load(yaml(true)));
  const auto untied = wl::build_program(*load(yaml(false)));
  for (std::size_t st = 0; st < 2; ++st) CHECK(state(tied.static_memory[st]) == doctest::Approx(state(untied.static_memory[st])).epsilon(1e-12));
  // On one stage (pp 1, dp 2 without ZeRO: every rank holds everything) the untied model
  // holds V·h more parameters, 2 + 4 + 4 + 8 = 18 B each.
  const auto s1 = load(yaml(true, "pp: 1, dp: 2"));
  const auto one_tied = wl::build_program(*s1);
  const auto one_untied = wl::build_program(*load(yaml(false, "pp: 1, dp: 2")));
  const double per_param = s1->precision.weights + s1->precision.gradients + s1->precision.master + 8.0;
  CHECK(state(one_untied.static_memory[0]) - state(one_tied.static_memory[0]) ==
        doctest::Approx(kVocab * kHidden * per_param).epsilon(1e-9));
}

TEST_CASE("the pair's all-reduce lengthens the step by a two-rank ring's time over the link: S/B to S/(0.9·B)") {
  // A ring all-reduce over n = 2 ranks sends 2(n−1)/n·S = S bytes each way over the one
  // 400 Gb/s link: at least S/B, at most S over the profile's achievable InfiniBand rate
  // (46 of 50 GB/s) plus two ring steps and a launch (tens of µs): S/(0.9·B) + 0.1 ms
  // bounds it. Nothing else differs between the tied and the untied run: the head, its
  // gradients and their memory are the same, dp is 1.
  wl::SimOptions opt;
  opt.what_if = false;
  const auto s = load(yaml(true));
  const wl::Result tied = wl::simulate(s, opt);
  const wl::Result untied = wl::simulate(load(yaml(false)), opt);
  const double S = kVocab * kHidden * s->precision.gradients, B = 400e9 / 8;
  const double extra = tied.step_time_s - untied.step_time_s;
  CHECK(extra >= S / B);
  CHECK(extra <= S / (0.9 * B) + 1e-4);
  // Both ranks book the all-reduce from the later one's arrival: stage 1, done with its
  // backward first, waits out the pipeline's drain there, which is not communication.
  const auto pp = static_cast<std::size_t>(wl::Axis::pp);
  CHECK(tied.comm[pp].exposed_s - untied.comm[pp].exposed_s == doctest::Approx(extra).epsilon(1e-6));
  // Every pp member sends S: the pair's two ranks are the pipeline's only two.
  CHECK(tied.comm[pp].bytes_per_device - untied.comm[pp].bytes_per_device == doctest::Approx(S).epsilon(1e-9));
}
