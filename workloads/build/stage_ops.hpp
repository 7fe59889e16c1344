// workloads/build/stage_ops.hpp — the op makers the stage emitter's files share
// (stage_emitter.cpp: the passes, pipeline transfers and in-layer collectives;
// stage_emitter_dp.cpp: the data-parallel gathers and gradient reductions).
#pragma once

#include "sim/program.hpp"
#include "workloads/spec/vocabulary.hpp"

namespace ls::wl {

/// Fields every op of a micro-batch pass carries; microbatch < 0 marks work outside any micro-batch.
inline sim::Op base_op(sim::OpKind kind, Work work, int microbatch, int chunk, int layer_begin, int layer_end) {
  sim::Op op;
  op.kind = kind;
  op.tag = tag(work);
  op.counts_as_busy = microbatch >= 0;
  op.labels[label::microbatch] = microbatch;
  op.labels[label::chunk] = chunk;
  op.labels[label::layer_begin] = layer_begin;
  op.labels[label::layer_end] = layer_end;
  return op;
}

/// A collective over `axis`'s group: `repeat` calls of `bytes` each, back to back.
inline sim::Op collective_op(Axis axis, sim::CollOp coll, Work work, int microbatch, int chunk, int layer_begin,
                             int layer_end, double bytes, int repeat) {
  sim::Op op = base_op(sim::OpKind::collective, work, microbatch, chunk, layer_begin, layer_end);
  op.group_slot = slot(axis);
  op.coll = coll;
  op.bytes = bytes;
  op.repeat = static_cast<std::uint8_t>(repeat);
  return op;
}

}  // namespace ls::wl
