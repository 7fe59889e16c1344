// tests/test_pass_costs.cpp — workloads/pass_costs.hpp: what one layer pass costs.
#include <doctest/doctest.h>

#include "fixtures.hpp"
#include "workloads/model.hpp"
#include "workloads/pass_costs.hpp"

using namespace ls::wl;

namespace {
Scenario one_gpu(ModelSpec m) {
  Scenario s;
  s.cluster.nodes = 1;
  s.cluster.gpus_per_node = 1;
  s.gpu = *gpu_preset("h100-sxm");
  s.model = std::move(m);
  return s;
}
}  // namespace

TEST_CASE("model FLOPs per pass: forward 1x, backward 2x, its halves 1x each, recompute 0") {
  Scenario s = one_gpu(ls::test::small_model(4));
  s.layout.recompute = Recompute::selective;
  const RooflinePassCosts t(s);
  const double fwd = t.layer(LayerKind::dense, Pass::forward).model_flops;
  CHECK(fwd > 0);
  CHECK(t.layer(LayerKind::dense, Pass::backward).model_flops == 2 * fwd);
  CHECK(t.layer(LayerKind::dense, Pass::backward_input).model_flops == fwd);
  CHECK(t.layer(LayerKind::dense, Pass::backward_weight).model_flops == fwd);
  CHECK(t.layer(LayerKind::dense, Pass::recompute).model_flops == 0);
  CHECK(t.layer(LayerKind::dense, Pass::recompute).hardware_flops > 0);  // the attention core again
  // The zb-h1 halves add up to the whole backward (model.hpp).
  CHECK(t.layer(LayerKind::dense, Pass::backward_input).hardware_flops +
            t.layer(LayerKind::dense, Pass::backward_weight).hardware_flops ==
        doctest::Approx(t.layer(LayerKind::dense, Pass::backward).hardware_flops).epsilon(1e-15));
  // The embedding is a lookup: its backward is no model work.
  CHECK(t.embedding(Pass::backward).model_flops == 0);
  CHECK(t.head(Pass::backward).model_flops == 2 * t.head(Pass::forward).model_flops);
}

TEST_CASE("an MoE layer is its dense part plus its routed experts") {
  Scenario s = one_gpu(*model_preset("mixtral-8x7b"));
  const RooflinePassCosts t(s);
  const LayerCosts whole = layer_costs(s.model, 0, 1, 1, 1, false, Recompute::none, 2);
  const double parts = t.layer(LayerKind::moe, Pass::forward).hardware_flops + t.experts(Pass::forward).hardware_flops;
  CHECK(parts == doctest::Approx(whole.forward.flops).epsilon(1e-12));
  const double model = t.layer(LayerKind::moe, Pass::forward).model_flops + t.experts(Pass::forward).model_flops;
  CHECK(model == doctest::Approx(whole.model_flops_fwd).epsilon(1e-12));
  // The dense table entry stays the plain dense layer (no experts).
  CHECK(t.layer(LayerKind::dense, Pass::forward).hardware_flops < whole.forward.flops);
}
