// tests/fuzz/fuzz_scenario.cpp — libFuzzer harness over the scenario loader and the
// planner: any bytes are a scenario text; loading then planning must either succeed
// or fail with a user error (ScenarioError, InvalidScenario, TimeRangeError). Any
// other exception, a crash, a sanitizer report, a hang (-timeout) or a blow-up
// (-rss_limit_mb) is a finding. Built with -DLAYOUTSIM_FUZZ=ON (Clang); run by .ci/run
// for a bounded time, seeded with scenarios/ and tests/fuzz/corpus/, with the
// dictionary tests/fuzz/scenario.dict.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string_view>

#include "sim/time.hpp"
#include "tools/scenario/scenario.hpp"
#include "workloads/layout_report.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const ls::wl::ResolvedScenario sc = ls::tools::load_scenario_string(text, "fuzz.yaml", {});
    (void)ls::wl::layout_report(sc);
  } catch (const ls::tools::ScenarioError&) {
  } catch (const ls::wl::InvalidScenario&) {
  } catch (const ls::sim::TimeRangeError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_scenario: internal error (exit 3 in the command): %s\n", e.what());
    std::abort();
  }
  return 0;
}
