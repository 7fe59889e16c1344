// tests/test_trace_check.cpp — the Chrome trace checker accepts a well-formed trace and
// catches each rule violation on a deliberately broken one.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tools/report/trace.hpp"
#include "tools/report/trace_check.hpp"

using ls::tools::check_trace_text;

namespace {

// A minimal valid trace: names, a parent slice with a nested child, a flow from a
// sender slice to a receiver slice on another thread, a counter.
const char* kGood = R"({"traceEvents":[
{"ph":"M","name":"process_name","pid":0,"tid":0,"args":{"name":"node0"}},
{"ph":"M","name":"process_sort_index","pid":0,"tid":0,"args":{"sort_index":0}},
{"ph":"M","name":"thread_name","pid":0,"tid":0,"args":{"name":"node0.gpu0 compute"}},
{"ph":"M","name":"thread_sort_index","pid":0,"tid":0,"args":{"sort_index":0}},
{"ph":"X","name":"F mb0 L0-5","pid":0,"tid":0,"ts":0.000000,"dur":100.000000},
{"ph":"X","name":"inner","pid":0,"tid":0,"ts":10.5,"dur":89.5},
{"ph":"X","name":"after","pid":0,"tid":0,"ts":100.000000,"dur":1.000001},
{"ph":"X","name":"send F mb0","pid":0,"tid":2,"ts":100,"dur":10,"bind_id":1,"flow_out":true},
{"ph":"X","name":"recv F mb0","pid":1,"tid":10,"ts":0,"dur":110,"bind_id":1,"flow_in":true},
{"ph":"C","name":"mem node0.gpu0","pid":0,"tid":0,"ts":0,"args":{"value":0}},
{"ph":"C","name":"mem node0.gpu0","pid":0,"tid":0,"ts":5,"args":{"value":1.5e9}}
],"displayTimeUnit":"ns","metadata":{"k":1}})";

// Replaces the first occurrence of `from` in kGood by `to`.
std::string broken(const std::string& from, const std::string& to) {
  std::string s = kGood;
  const auto p = s.find(from);
  REQUIRE(p != std::string::npos);
  s.replace(p, from.size(), to);
  return s;
}

bool has(const ls::tools::TraceCheckReport& r, const std::string& needle) {
  for (const auto& v : r.violations)
    if (v.find(needle) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("a well-formed trace passes") {
  const auto r = check_trace_text(kGood);
  for (const auto& v : r.violations) MESSAGE(v);
  CHECK(r.ok());
  CHECK(r.events == 11);
  CHECK(r.slices == 5);
  CHECK(r.flows == 1);
  CHECK(r.counters == 2);
  CHECK(r.metadata == 4);
}

TEST_CASE("slices that overlap without nesting are caught") {
  // "inner" now ends at 110 > parent's end 100: partial overlap on (0, 0).
  const auto r = check_trace_text(broken(R"("ts":10.5,"dur":89.5)", R"("ts":10.5,"dur":99.5)"));
  CHECK_FALSE(r.ok());
  CHECK(has(r, "without nesting"));
  // The same slices on different threads are fine.
  CHECK(check_trace_text(broken(R"("name":"inner","pid":0,"tid":0)", R"("name":"inner","pid":0,"tid":1)")).ok());
  // Touching (end == next start) is not an overlap: "after" starts at the parent's end.
  CHECK(check_trace_text(kGood).ok());
}

TEST_CASE("nesting in double precision: ts + dur one ulp past the next start is caught") {
  // 0.1 + 0.2 = 0.30000000000000004 in double: a slice [0.1, 0.3) followed by one that
  // starts at 0.3 touches in exact decimals but overlaps for a viewer that adds them.
  const std::string t = R"({"traceEvents":[
    {"ph":"X","name":"a","pid":0,"tid":0,"ts":0.1,"dur":0.2},
    {"ph":"X","name":"b","pid":0,"tid":0,"ts":0.3,"dur":1}]})";
  const auto r = check_trace_text(t);
  CHECK_FALSE(r.ok());
  CHECK(has(r, "in double precision"));
  // Times on a dyadic grid (1/64 us) add exactly: no violation.
  const std::string g = R"({"traceEvents":[
    {"ph":"X","name":"a","pid":0,"tid":0,"ts":0.109375,"dur":0.203125},
    {"ph":"X","name":"b","pid":0,"tid":0,"ts":0.3125,"dur":1}]})";
  CHECK(check_trace_text(g).ok());
}

TEST_CASE("flow rules") {
  SUBCASE("flow_in missing: bind_id with only one end") {
    const auto r = check_trace_text(broken(R"("bind_id":1,"flow_in":true)", R"("bind_id":2,"flow_in":true)"));
    CHECK(has(r, "bind_id 1: 1 flow_out and 0 flow_in"));
    CHECK(has(r, "bind_id 2: 0 flow_out and 1 flow_in"));
  }
  SUBCASE("two senders for one id") {
    const auto r = check_trace_text(broken(R"("bind_id":1,"flow_in":true)", R"("bind_id":1,"flow_out":true)"));
    CHECK(has(r, "2 flow_out and 0 flow_in"));
  }
  SUBCASE("flow_in as a string is not a boolean") {
    const auto r = check_trace_text(broken(R"("flow_in":true)", R"("flow_in":"true")"));
    CHECK(has(r, "\"flow_in\" must be a boolean"));
  }
  SUBCASE("flow_out without bind_id") {
    const auto r = check_trace_text(broken(R"("bind_id":1,"flow_out":true)", R"("flow_out":true)"));
    CHECK(has(r, "\"flow_out\" without \"bind_id\""));
  }
  SUBCASE("bind_id on a counter is not bound to a slice") {
    const auto r = check_trace_text(broken(R"("ts":0,"args":{"value":0})", R"("ts":0,"bind_id":9,"flow_out":true,"args":{"value":0})"));
    CHECK(has(r, "not a slice"));
  }
  SUBCASE("arrow backwards in time") {
    const auto r = check_trace_text(broken(R"("ts":100,"dur":10,"bind_id":1)", R"("ts":200,"dur":10,"bind_id":1)"));
    CHECK(has(r, "starts after the receiving slice"));
  }
}

TEST_CASE("counters, metadata, ids and timestamps") {
  CHECK(has(check_trace_text(broken(R"({"value":1.5e9})", R"({"value":"1.5e9"})")), "counter arg \"value\" is not a number"));
  CHECK(has(check_trace_text(broken(R"("ts":5,"args":{"value":1.5e9})", R"("ts":5,"args":{})")), "non-empty \"args\""));
  CHECK(has(check_trace_text(broken(R"("name":"process_sort_index")", R"("name":"process_order")")), "metadata name 'process_order'"));
  CHECK(has(check_trace_text(broken(R"({"sort_index":0})", R"({"sort_index":"0"})")), "integer args.sort_index"));
  CHECK(has(check_trace_text(broken(R"({"name":"node0"})", R"({"name":0})")), "string args.name"));
  CHECK(has(check_trace_text(broken(R"("name":"inner","pid":0)", R"("name":"inner","pid":"0")")), "\"pid\" must be an integer"));
  CHECK(has(check_trace_text(broken(R"("name":"inner","pid":0,"tid":0)", R"("name":"inner","pid":0,"tid":0.5)")), "\"tid\" must be an integer"));
  CHECK(has(check_trace_text(broken(R"("ts":10.5,"dur":89.5)", R"("ts":-10.5,"dur":89.5)")), "\"ts\" is negative"));
  CHECK(has(check_trace_text(broken(R"("ts":10.5,"dur":89.5)", R"("ts":10.5,"dur":-1)")), "\"dur\" is negative"));
  CHECK(has(check_trace_text(broken(R"("ts":10.5,"dur":89.5)", R"("ts":10.5000001,"dur":89.4999999)")), "more than 6 decimals"));
  CHECK(has(check_trace_text(broken(R"("ts":10.5,"dur":89.5)", R"("ts":1.05e-7,"dur":89.5)")), "more than 6 decimals"));
  // Trailing zeros and exponents that keep the precision are fine.
  CHECK(check_trace_text(broken(R"("ts":10.5,"dur":89.5)", R"("ts":10.500000000,"dur":8.95e1)")).ok());
  CHECK(has(check_trace_text(broken(R"("ph":"X","name":"inner")", R"("ph":"Q","name":"inner")")), "unknown phase"));
  CHECK(has(check_trace_text(broken(R"("name":"after","pid":0,"tid":0,"ts":100.000000,"dur":1.000001)", R"("name":"after","pid":0,"tid":0,"ts":100.000000)")),
            "missing \"dur\""));
  CHECK(has(check_trace_text(broken(R"("displayTimeUnit":"ns")", R"("displayTimeUnit":"s")")), "displayTimeUnit"));
}

TEST_CASE("document-level errors are violations, never exceptions") {
  CHECK(has(check_trace_text("[]"), "object form"));
  CHECK(has(check_trace_text("{\"events\":[]}"), "traceEvents"));
  CHECK(has(check_trace_text("{\"traceEvents\":[1]}"), "not an object"));
  CHECK(has(check_trace_text("{\"traceEvents\":[{\"ts\":1}]}"), "\"ph\""));
  CHECK_FALSE(check_trace_text("{\"traceEvents\":[").ok());
  CHECK_FALSE(check_trace_text("").ok());
  CHECK(check_trace_text("{\"traceEvents\":[]}").ok());
}

TEST_CASE("check_trace_file reads plain and gzip files") {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string gz = (dir / "ls_trace_check.json.gz").string();
  const std::string bad = (dir / "ls_trace_check_bad.json").string();
  ls::tools::write_text_file(gz, kGood);
  ls::tools::write_text_file(bad, broken(R"("ts":10.5,"dur":89.5)", R"("ts":10.5,"dur":99.5)"));
  CHECK(ls::tools::check_trace_file(gz).ok());
  CHECK_FALSE(ls::tools::check_trace_file(bad).ok());
  CHECK_THROWS_AS(ls::tools::check_trace_file((dir / "does-not-exist.json").string()), std::runtime_error);
  std::filesystem::remove(gz);
  std::filesystem::remove(bad);
}

TEST_CASE("slices past 2^53 ps (steps longer than 2.5 h) on the 1/64-us grid are exact: back to back is not an overlap") {
  // 9197572535.125 us + 117.296875 us = 9197572652.421875 us: each a multiple of 1/64 us,
  // exact in double, but 9.2e15 ps is past 2^53, where us · 1e6 in one double rounds.
  const std::string t = R"({"traceEvents":[)"
                        R"({"ph":"X","name":"a","pid":0,"tid":0,"ts":9197572535.125,"dur":117.296875},)"
                        R"({"ph":"X","name":"b","pid":0,"tid":0,"ts":9197572652.421875,"dur":0.015625}]})";
  const auto r = check_trace_text(t);
  const std::string first = r.violations.empty() ? std::string() : r.violations.front();
  INFO(first);
  CHECK(r.ok());
}
