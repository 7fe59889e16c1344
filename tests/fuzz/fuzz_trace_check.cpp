// tests/fuzz/fuzz_trace_check.cpp — libFuzzer harness over the Chrome trace checker:
// check_trace_text() promises never to throw on bad input (a parse error is a
// violation), so any exception, crash, sanitizer report, hang or blow-up is a
// finding. It is also a differential test of the streaming checker's two ways to
// check a track whose slices come out of order: a second read of the input (text,
// files) and records kept from the start (a pipe, which cannot be rewound) must give
// the same report. Built with -DLAYOUTSIM_FUZZ=ON (Clang); run by .ci/run, seeded
// with tests/fuzz/traces/.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <istream>
#include <streambuf>
#include <string_view>

#include "tools/report/trace_check.hpp"

namespace {

// The input as a pipe would give it: readable once, not seekable.
class OnceBuf : public std::streambuf {
public:
  OnceBuf(const char* p, std::size_t n) {
    char* b = const_cast<char*>(p);  // read-only: no put area
    setg(b, b, b + n);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const ls::tools::TraceCheckReport twice = ls::tools::check_trace_text(text);
    OnceBuf buf(text.data(), text.size());
    std::istream in(&buf);
    const ls::tools::TraceCheckReport once = ls::tools::check_trace_stream(in);
    if (once.violations != twice.violations || once.more_violations != twice.more_violations || once.events != twice.events ||
        once.flows != twice.flows || once.unordered_tracks != twice.unordered_tracks) {
      std::fprintf(stderr, "fuzz_trace_check: the one-read and two-read checks disagree (%zu vs %zu violations)\n",
                   once.violation_count(), twice.violation_count());
      std::abort();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_trace_check: check_trace_text threw: %s\n", e.what());
    std::abort();
  }
  return 0;
}
