// tools/cli/mpi_shard.cpp — see mpi_shard.hpp. The MPI C API only, so that any MPI
// (Debian's OpenMPI, a cluster's MPICH) builds it.
#include "tools/cli/mpi_shard.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef LAYOUTSIM_MPI
#include <mpi.h>
#endif

namespace ls::tools {

#ifdef LAYOUTSIM_MPI
namespace {

/// True when a launcher started this process: initialising MPI in a plain run
/// would make OpenMPI start a singleton runtime (slow, and noisy without one).
bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(var)) return true;
  return false;
}

class MpiExchange final : public SearchExchange {
public:
  MpiExchange() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiExchange() override { MPI_Finalize(); }  // a C call: cannot throw out of the destructor
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::vector<std::string> all_gather(const std::string& blob) override {
    // Blobs are a few hundred bytes per candidate: int counts are plenty, and a
    // larger one is an error rather than a silent truncation.
    if (blob.size() > static_cast<std::size_t>(INT32_MAX)) throw std::runtime_error("search exchange: blob over 2 GiB");
    const int mine = static_cast<int>(blob.size());
    std::vector<int> counts(static_cast<std::size_t>(size_)), offsets(static_cast<std::size_t>(size_));
    MPI_Allgather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
    long long total = 0;
    for (int r = 0; r < size_; ++r) {
      offsets[static_cast<std::size_t>(r)] = static_cast<int>(total);
      total += counts[static_cast<std::size_t>(r)];
    }
    if (total > INT32_MAX) throw std::runtime_error("search exchange: gathered blobs over 2 GiB");
    std::string all(static_cast<std::size_t>(total), '\0');
    MPI_Allgatherv(blob.data(), mine, MPI_CHAR, all.data(), counts.data(), offsets.data(), MPI_CHAR, MPI_COMM_WORLD);
    std::vector<std::string> out;
    for (int r = 0; r < size_; ++r)
      out.push_back(all.substr(static_cast<std::size_t>(offsets[static_cast<std::size_t>(r)]),
                               static_cast<std::size_t>(counts[static_cast<std::size_t>(r)])));
    return out;
  }

private:
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<SearchExchange> mpi_exchange() {
  if (!launched_by_mpi()) return nullptr;
  int ready = 0;
  MPI_Initialized(&ready);
  if (!ready) MPI_Init(nullptr, nullptr);
  auto ex = std::make_unique<MpiExchange>();
  if (ex->size() <= 1) return nullptr;  // the destructor finalises
  return ex;
}
#else
std::unique_ptr<SearchExchange> mpi_exchange() { return nullptr; }
#endif

}  // namespace ls::tools
