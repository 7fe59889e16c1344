// sim/stage_program_builder.hpp — appends ops with their dependencies to one StageProgram.
//
// The engine's op layout (sim/program.hpp) keeps every op's dependencies in one flat
// array per stage; this builder is the one place that fills it, so a workload only
// says "this op, on this stream, after these ops". Indices it returns are positions
// in the stream, which is what OpRef and Op::peer_op hold. O(1) amortised per op.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <utility>

#include "sim/program.hpp"

namespace ls::sim {

class StageProgramBuilder {
public:
  /// Appends `op` to `stream`, depending on `deps` (ops of the same rank); returns its index.
  /// The op is copied once, into the stream (program building copies millions of them).
  std::uint32_t add(Stream stream, const Op& op, std::initializer_list<OpRef> deps = {}) {
    auto& ops = program_.streams[static_cast<std::size_t>(stream)];
    Op& added = ops.emplace_back(op);
    added.dep_begin = static_cast<std::uint32_t>(program_.deps.size());
    added.dep_count = static_cast<std::uint32_t>(deps.size());
    program_.deps.insert(program_.deps.end(), deps.begin(), deps.end());
    return static_cast<std::uint32_t>(ops.size() - 1);
  }
  /// Number of ops on `stream` so far.
  std::uint32_t count(Stream stream) const {
    return static_cast<std::uint32_t>(program_.streams[static_cast<std::size_t>(stream)].size());
  }
  /// Reference to the last op of a non-empty `stream`, for use as a dependency.
  OpRef last(Stream stream) const { return OpRef{static_cast<std::uint8_t>(stream), count(stream) - 1}; }

  /// Reserves room for as many ops and dependencies per stream as `like` holds: a
  /// pipeline's stages emit programs of nearly one size, so building stage s with
  /// stage s − 1's sizes reserved spares the growth copies of every vector.
  void reserve_like(const StageProgram& like) {
    for (std::size_t s = 0; s < like.streams.size(); ++s) program_.streams[s].reserve(like.streams[s].size());
    program_.deps.reserve(like.deps.size());
  }

  StageProgram& program() { return program_; }
  const StageProgram& program() const { return program_; }
  /// Moves the built program out; the builder is empty afterwards.
  StageProgram take() { return std::move(program_); }

private:
  StageProgram program_;
};

}  // namespace ls::sim
