// Helpers for strata's tests: run programs (strata itself, test programs),
// load traces, and cross-check them with babeltrace2.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/trace.h"

namespace strata::testing {

std::string StrataBin();                     // the `strata` executable under test
std::string TestProgram(const std::string& name);  // a program built from tests/programs
std::string SourceDir();
// ../shared/data/external next to the checkout, or "" when absent (a fresh clone).
std::string ExternalDataDir();
// Every trace under ExternalDataDir(): JSON, XSpace and LTTng CTF directories, sorted.
std::vector<std::string> SharedTraces();
// A fresh, empty directory for one test.
std::string TempDir(const std::string& name);

struct RunResult {
  int exit_code = -1;  // 128+N when killed by signal N
  std::string out, err;
};
RunResult RunCommand(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
              int timeout_s = 120);
// `strata record -o DIR [opts] -- cmd...`
RunResult Record(const std::string& dir, const std::vector<std::string>& cmd,
                 const std::vector<std::string>& opts = {}, const std::map<std::string, std::string>& env = {});

model::Trace Load(const std::string& path);

// Event count babeltrace2 reads from the trace, or nullopt (with a skip message)
// when babeltrace2 is not installed. Fails the test if babeltrace2 reports an error.
std::optional<uint64_t> Babeltrace2Events(const std::string& dir);
// Asserts that babeltrace2 reads the trace without error and counts what strata counts.
void ExpectBabeltraceAgrees(const std::string& dir);
// Asserts that babeltrace2 counts exactly `lost` discarded events in the trace (the
// sum of its "Tracer discarded N events" warnings), and never reports an unknown
// count ("may have discarded"). Prints every event as text: for traces of up to
// a few million events.
void ExpectBabeltraceCountsLost(const std::string& dir, uint64_t lost);

// Slices named `name` (any kind).
size_t CountSlices(const model::Trace& t, const std::string& name);

// The build's library directory (lib/ beside the bin/ of the `strata` under test).
std::string LibDir();
// The manifest's collectors[] entry named `name` in a trace directory, or null.
nlohmann::json ManifestCollector(const std::string& dir, const std::string& name);

// The Python that tests record (Debian's, with python3-torch).
inline constexpr const char* kPython = "/usr/bin/python3";
// True if the PyTorch level can be tested: strata was built with
// libstrata_torch.so and kPython imports torch (checked once); else says why.
bool TorchUsable(std::string* why);
#define REQUIRE_TORCH()                                                   \
  do {                                                                    \
    std::string why_;                                                     \
    if (!::strata::testing::TorchUsable(&why_)) GTEST_SKIP() << why_;     \
  } while (0)

}  // namespace strata::testing
