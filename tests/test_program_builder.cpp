// tests/test_program_builder.cpp — sim/stage_program_builder.hpp: ops land on their stream
// in order, with their dependencies in the stage's flat dependency array.
#include <doctest/doctest.h>

#include "sim/stage_program_builder.hpp"

using namespace ls::sim;

TEST_CASE("add returns stream positions and records dependencies in order") {
  StageProgramBuilder b;
  Op op;
  CHECK(b.add(Stream::main, op) == 0);
  CHECK(b.add(Stream::main, op) == 1);
  const OpRef after = b.last(Stream::main);
  CHECK(after.stream == static_cast<std::uint8_t>(Stream::main));
  CHECK(after.index == 1);
  CHECK(b.add(Stream::side0, op, {after, OpRef{static_cast<std::uint8_t>(Stream::main), 0}}) == 0);
  CHECK(b.add(Stream::side0, op, {after}) == 1);
  CHECK(b.count(Stream::side0) == 2);
  CHECK(b.count(Stream::side1) == 0);

  const StageProgram sp = b.take();
  const auto& dp = sp.streams[static_cast<std::size_t>(Stream::side0)];
  REQUIRE(dp.size() == 2);
  CHECK(dp[0].dep_begin == 0);
  CHECK(dp[0].dep_count == 2);
  CHECK(dp[1].dep_begin == 2);
  CHECK(dp[1].dep_count == 1);
  REQUIRE(sp.deps.size() == 3);
  CHECK(sp.deps[1].index == 0);
  CHECK(sp.streams[static_cast<std::size_t>(Stream::main)][0].dep_count == 0);
}
