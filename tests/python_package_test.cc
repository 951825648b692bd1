// The `strata` Python package (python/) installs with pip into a fresh venv,
// offline, and an annotated program runs there without `strata record` (every
// call a no-op); under `strata record` the same program records its steps.
// Runs Python under the recorder, so it is labelled no_sanitizer.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/testing.h"

namespace strata {
namespace {

constexpr const char* kPython = "/usr/bin/python3";
constexpr const char* kWheels = "/usr/share/python-wheels";  // Debian's python3-{setuptools,wheel}-whl

// An annotated program: five steps, each with a span, a counter and an instant.
constexpr const char* kProgram = R"(import time
import strata

for i in range(5):
    with strata.step(samples=8):
        with strata.span("work"):
            time.sleep(0.01)
        strata.counter("progress", i)
        strata.instant("tick")
print("recorded" if strata.enabled() else "not recorded", strata.__file__)
)";

class PythonPackage : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    namespace fs = std::filesystem;
    if (::access(kPython, X_OK) != 0) {
      skip_ = std::string(kPython) + " is not installed";
      return;
    }
    bool setuptools = false, wheel = false;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(kWheels, ec)) {
      std::string n = e.path().filename().string();
      setuptools |= n.rfind("setuptools-", 0) == 0;
      wheel |= n.rfind("wheel-", 0) == 0;
    }
    if (!setuptools || !wheel) {
      skip_ = std::string("no setuptools and wheel wheels in ") + kWheels + " (python3-setuptools-whl python3-wheel-whl)";
      return;
    }
    dir_ = testing::TempDir("python_package");
    fs::create_directories(dir_);
    // A copy: pip builds in the source tree (build/, strata.egg-info).
    fs::copy(testing::SourceDir() + "/python", dir_ + "/src", fs::copy_options::recursive, ec);
    ASSERT_FALSE(ec) << ec.message();
    auto venv = testing::RunCommand({kPython, "-m", "venv", dir_ + "/venv"}, {}, 120);
    if (venv.exit_code != 0) {
      skip_ = "python3 -m venv failed (python3-venv): " + venv.err;
      return;
    }
    // Offline: the build requirements come from Debian's wheels, nothing from an index.
    auto pip = testing::RunCommand(
        {dir_ + "/venv/bin/pip", "install", "--no-index", "--find-links", kWheels, dir_ + "/src"}, {}, 300);
    ASSERT_EQ(pip.exit_code, 0) << pip.out << pip.err;
    python_ = dir_ + "/venv/bin/python";
    std::ofstream(dir_ + "/annotated.py") << kProgram;
  }

  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_FALSE(python_.empty());
  }

  // Runs `args` with the venv's Python outside any recording.
  static testing::RunResult Plain(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"env", "-u", "STRATA_TRACE_DIR", "-u", "PYTHONPATH", "-u", "LD_PRELOAD", python_};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::RunCommand(argv, {}, 120);
  }

  static inline std::string skip_, dir_, python_;
};

TEST_F(PythonPackage, ImportsAndIsANoOpWithoutStrataRecord) {
  // The acceptance line, verbatim.
  auto r = Plain({"-c", "import strata; strata.step()"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  // Every annotation, and where the package came from: the venv, not the source tree.
  r = Plain({"-c",
             "import strata\n"
             "with strata.step(samples=4):\n"
             "    with strata.scope('a'), strata.span('b'):\n"
             "        strata.counter('c', 1.5); strata.instant('i'); strata.thread_name('t'); strata.flush()\n"
             "strata.step_begin(); strata.step_end()\n"
             "@strata.span('decorated')\n"
             "def f(): return 3\n"
             "assert f() == 3\n"
             "print(strata.enabled(), strata.__version__, strata.__file__)\n"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("False 0.1.0 " + dir_ + "/venv/lib/", 0), 0u) << r.out;
  r = Plain({dir_ + "/annotated.py"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("not recorded", 0), 0u) << r.out;
}

TEST_F(PythonPackage, TheSameProgramUnderStrataRecordRecordsItsSteps) {
  std::string trace = testing::TempDir("python_package_trace");
  auto r = testing::Record(trace, {python_, dir_ + "/annotated.py"}, {"--no-os"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("recorded", 0), 0u) << r.out;
  model::Trace t = testing::Load(trace);
  size_t steps = 0;
  for (size_t i = 0; i < t.slices.size(); ++i) steps += t.slices.kind[i] == model::SliceKind::kStep;
  EXPECT_EQ(steps, 5u);
  EXPECT_EQ(testing::CountSlices(t, "work"), 5u);
}

}  // namespace
}  // namespace strata
