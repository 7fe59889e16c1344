// tests/fuzz/fuzz_trace_check.cpp — libFuzzer harness over the Chrome trace checker:
// check_trace_text() promises never to throw on bad input (a parse error is a
// violation), so any exception, crash, sanitizer report, hang or blow-up is a
// finding. Built with -DLAYOUTSIM_FUZZ=ON (Clang); run by .ci/run, seeded with
// tests/fuzz/traces/.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string_view>

#include "tools/trace_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    (void)ls::tools::check_trace_text(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_trace_check: check_trace_text threw: %s\n", e.what());
    std::abort();
  }
  return 0;
}
