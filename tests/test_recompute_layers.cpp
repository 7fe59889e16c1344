// tests/test_recompute_layers.cpp — layout.recompute.layers: which layers recompute, and
// what that does to the step's FLOPs and the stage's activation memory, against closed
// forms built from one layer's costs.
#include <doctest/doctest.h>

#include <vector>

#include "fixtures.hpp"
#include "workloads/build/program_builder.hpp"
#include "workloads/build/program_totals.hpp"
#include "workloads/build/stage_layers.hpp"
#include "workloads/build/stage_memory.hpp"
#include "workloads/cost/pass_costs.hpp"
#include "workloads/model/layout.hpp"

using namespace ls;
using namespace ls::wl;

namespace {

/// One pipeline stage of 8 layers on one H100 (uniform_pipeline), 2 micro-batches.
Scenario eight_layers(Recompute rc, RecomputeLayers layers) {
  Scenario s = test::uniform_pipeline(1, 2);
  s.model = test::small_model(8);
  s.layout.stage_layers = {8};
  s.layout.dp = 1;
  s.layout.recompute = rc;
  s.layout.recompute_layers = std::move(layers);
  return s;
}

double step_hardware_flops(const Scenario& s) { return program_totals(build_program(s).program).hardware_flops; }

}  // namespace

TEST_CASE("every-K selects the model's K-th, 2K-th, ... layer; a list selects exactly its layers") {
  LayoutSpec L;
  L.recompute = Recompute::full;
  L.recompute_layers.every = 3;
  std::vector<int> picked;
  for (int l = 0; l < 9; ++l)
    if (recompute_of_layer(L, l) == Recompute::full) picked.push_back(l);
  CHECK(picked == std::vector<int>{2, 5, 8});  // 1-based layers 3, 6, 9
  CHECK(recomputed_layer_share(L, 9) == doctest::Approx(1.0 / 3));
  L.recompute_layers = {1, {0, 4}};
  CHECK(recompute_of_layer(L, 0) == Recompute::full);
  CHECK(recompute_of_layer(L, 1) == Recompute::none);
  CHECK(recompute_of_layer(L, 4) == Recompute::full);
  CHECK(recompute_layers_text(L.recompute_layers) == "[0, 4]");
  CHECK(recompute_layers_text({2, {}}) == "every-2");
  CHECK(recompute_layers_text({}) == "all");
  L.recompute = Recompute::none;  // no ops: no layer recomputes, whatever is selected
  CHECK(recomputed_layer_share(L, 9) == 0);
}

TEST_CASE("recomputing every second layer adds half the recompute FLOPs of recomputing all") {
  for (Recompute rc : {Recompute::selective, Recompute::every_second_matmul, Recompute::full}) {
    CAPTURE(static_cast<int>(rc));
    const double none = step_hardware_flops(eight_layers(Recompute::none, {}));
    const double all = step_hardware_flops(eight_layers(rc, {}));
    const double half = step_hardware_flops(eight_layers(rc, {2, {}}));
    const double listed = step_hardware_flops(eight_layers(rc, {1, {0, 1, 2}}));
    CHECK(all > none);
    CHECK(half - none == doctest::Approx((all - none) / 2).epsilon(1e-12));
    CHECK(listed - none == doctest::Approx((all - none) * 3 / 8).epsilon(1e-12));
  }
}

TEST_CASE("a stage keeps the recomputed layers' activations for those layers and every activation for the others") {
  for (Recompute rc : {Recompute::every_second_matmul, Recompute::full}) {
    CAPTURE(static_cast<int>(rc));
    const Scenario s = eight_layers(rc, {4, {}});  // layers 3 and 7 (0-based) recompute
    const PassBytes bytes = pass_bytes(s);
    CHECK(bytes.activation_per_layer < bytes.activation_full_layer);
    CHECK(layer_activation(s, bytes, 3) == bytes.activation_per_layer);
    CHECK(layer_activation(s, bytes, 2) == bytes.activation_full_layer);
    const std::vector<ChunkLayers> chunk = stage_layers(s).chunks[0];
    CHECK(activation_bytes_per_microbatch(s, bytes, chunk, 0) ==
          doctest::Approx(2 * bytes.activation_per_layer + 6 * bytes.activation_full_layer).epsilon(1e-12));
  }
}
