// CPU samples of a CPython 3.11 program carry its Python frames (read from the
// interpreter's memory by the supervisor). Preloads libstrata into Python, so
// it is labelled no_sanitizer.
#include <gtest/gtest.h>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "analysis/os.h"
#include "base/files.h"
#include "tests/testing.h"

namespace strata {
namespace {

TEST(OsPython, SamplesNameTheHotPythonFunction) {
  const char* python = "/usr/bin/python3.11";
  if (::access(python, X_OK) != 0) GTEST_SKIP() << python << " is not installed";
  std::string dir = testing::TempDir("os_python");
  auto r = testing::Record(dir, {python, testing::SourceDir() + "/tests/programs/os_hot.py", "0.6"},
                           {"--sample-hz", "499"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto m = nlohmann::json::parse(*ReadFile(dir + "/strata.json"));
  std::string state, detail;
  for (const auto& c : m["collectors"])
    if (c["name"] == "os.samples" || c["name"] == "os.python")
      if (c["state"] != "ok") GTEST_SKIP() << c["name"] << " is " << c["state"] << ": " << c["detail"];
  analysis::OsSummary o = analysis::AnalyzeOs(testing::Load(dir));
  ASSERT_GE(o.python_samples, 30u);
  ASSERT_FALSE(o.python_functions.empty());
  EXPECT_EQ(o.python_functions[0].function.rfind("hot_python_function (os_hot.py:", 0), 0u)
      << o.python_functions[0].function;
  EXPECT_GE(static_cast<double>(o.python_functions[0].self), 0.7 * static_cast<double>(o.python_samples));
  // Its caller is on the stack.
  bool outer = false;
  for (const auto& f : o.python_functions) outer |= f.function.rfind("outer (", 0) == 0 && f.total > 0;
  EXPECT_TRUE(outer);
}

}  // namespace
}  // namespace strata
