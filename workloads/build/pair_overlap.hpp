// workloads/build/pair_overlap.hpp — a forward and a backward run as one overlapped pair
// (DualPipe's "F&B" chunk, DeepSeek-V3 technical report §3.2.1 and its Figure 4).
//
// The stage emitter writes the pair's two passes one after the other on the compute
// stream, as any two items. This pass then cuts each pass at its expert-parallel
// all-to-alls into segments (the compute up to and including the op before an
// all-to-all) and re-threads them alternately, forward segment, backward segment, ...,
// moving every all-to-all to a side stream: each pass's next segment waits for its own
// all-to-all, which meanwhile runs beside the other pass's segment. Each pass keeps its
// own order; the compute of the two passes never overlaps (one compute stream), only
// one pass's communication with the other's compute — what the pair is for.
// Cost: O(ops of the pair + dependencies of the stage).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "sim/program.hpp"

namespace ls::wl {

/// Re-threads the compute-stream ops [begin, split) (the forward) and [split, end) (the
/// backward), which must be the last ops of `compute`, as described above; `moved(op)`
/// says which ops go to `side` (appended there, in the new issue order). Every
/// dependency of the program on a re-threaded op is redirected. Returns, for each old
/// index begin + i, where that op is now.
std::vector<sim::OpRef> interleave_pair(sim::StageProgram& program, sim::Stream compute, sim::Stream side,
                                        std::uint32_t begin, std::uint32_t split, std::uint32_t end,
                                        const std::function<bool(const sim::Op&)>& moved);

}  // namespace ls::wl
