// tools/cli/mpi_shard.hpp — `mpirun -np N layoutsim search|sweep ...`: the search's
// candidates (tools/study/search.hpp, SearchExchange) or the sweep's points
// (tools/study/sweep_shard.hpp) split over MPI processes.
//
// Built with MPI when CMake finds it (LAYOUTSIM_MPI); otherwise mpi_exchange()
// always returns null and the search runs in one process.
#pragma once

#include <memory>

#include "tools/study/search.hpp"

namespace ls::tools {

/// The MPI world as a SearchExchange when this process was started by an MPI
/// launcher (mpirun, srun) with more than one process, else null. Initialises MPI
/// on the first call; the returned object finalises it when destroyed.
std::unique_ptr<SearchExchange> mpi_exchange();

}  // namespace ls::tools
