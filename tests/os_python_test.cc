// CPU samples of a CPython 3.11, 3.12 or 3.13 program carry its Python
// frames, of the same instant as the sample (read by a BPF program in the
// sample's interrupt), with the line being executed. Preloads libstrata into
// Python, so it is labelled no_sanitizer. 3.11 is Debian's; 3.12 and 3.13 are
// taken where pyenv (or the distribution) installed them, else skipped.
#include <gtest/gtest.h>

#include <glob.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "analysis/os.h"
#include "collectors/os/python_bpf.h"
#include "base/files.h"
#include "tests/testing.h"

namespace strata {
namespace {

// The interpreter of Python `version` ("3.12") on this machine, or "".
std::string PythonOf(const std::string& version) {
  std::string system = "/usr/bin/python" + version;
  if (::access(system.c_str(), X_OK) == 0) return system;
  const char* home = std::getenv("HOME");
  std::string pattern = std::string(home ? home : "/root") + "/.pyenv/versions/" + version + ".*/bin/python" + version;
  glob_t g{};
  std::string found;
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0 && g.gl_pathc > 0) found = g.gl_pathv[g.gl_pathc - 1];
  ::globfree(&g);
  return found;
}

class OsPythonVersion : public ::testing::TestWithParam<const char*> {};

TEST_P(OsPythonVersion, SamplesNameTheHotPythonFunction) {
  std::string python = PythonOf(GetParam());
  if (python.empty()) GTEST_SKIP() << "no Python " << GetParam() << " here";
  std::string dir = testing::TempDir("os_python");
  auto r = testing::Record(dir, {python, testing::SourceDir() + "/tests/programs/os_hot.py", "0.6"},
                           {"--sample-hz", "499"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto m = nlohmann::json::parse(*ReadFile(dir + "/strata.json"));
  std::string state, detail;
  for (const auto& c : m["collectors"]) {
    if (c["name"] == "os.samples" && c["state"] != "ok")
      GTEST_SKIP() << c["name"] << " is " << c["state"] << ": " << c["detail"];
    // os.python says which interpreter it read; "partial" (read after the
    // sample, without BPF) still names the hot function, but where the BPF
    // program is built and may be loaded (root), it must read every version.
    if (c["name"] == "os.python") {
      ASSERT_NE(c["state"], "unavailable") << c.dump();
      ASSERT_NE(c["state"], "off") << c.dump();
      if (collectors::os::PythonBpf::Built() && ::geteuid() == 0) EXPECT_EQ(c["state"], "ok") << c.dump();
      EXPECT_NE(c["detail"].get<std::string>().find("Python " + std::string(GetParam()) + " frames"), std::string::npos)
          << c.dump();
    }
  }
  model::Trace t = testing::Load(dir);
  analysis::OsSummary o = analysis::AnalyzeOs(t);
  ASSERT_GE(o.python_samples, 30u);
  ASSERT_FALSE(o.python_functions.empty());
  EXPECT_EQ(o.python_functions[0].function.rfind("hot_python_function (os_hot.py:6)", 0), 0u)
      << o.python_functions[0].function;
  EXPECT_GE(static_cast<double>(o.python_functions[0].self), 0.7 * static_cast<double>(o.python_samples));
  // Its callers are on the stack, to the module; 3.12+'s shim frames (entries
  // from C) are not.
  // A code object that could not be read by the time the sample was named (an
  // imported module's code, freed once it ran) is "<unknown>": a few samples
  // at most run in one.
  bool outer = false, module = false;
  uint64_t unknown = 0;
  for (const auto& f : o.python_functions) {
    outer |= f.function.rfind("outer (os_hot.py:13)", 0) == 0 && f.total > 0;
    module |= f.function.rfind("<module> (os_hot.py", 0) == 0 && f.total > 0;
    EXPECT_EQ(f.function.find("trampoline"), std::string::npos) << f.function;
    if (f.function.rfind("<unknown>", 0) == 0) unknown += f.self;
  }
  EXPECT_TRUE(outer);
  EXPECT_TRUE(module);
  EXPECT_LE(static_cast<double>(unknown), 0.05 * static_cast<double>(o.python_samples));
  // The hot function's samples carry the line of its loop, not its first line.
  std::map<uint32_t, uint64_t> lines;
  for (size_t i = 0; i < t.frames.size(); ++i)
    if (t.frames.kind[i] == model::FrameKind::kPython && t.strings.Get(t.frames.function[i]) == "hot_python_function")
      ++lines[t.frames.line[i]];
  EXPECT_TRUE(lines.count(8) || lines.count(9)) << lines.size();
}

INSTANTIATE_TEST_SUITE_P(Versions, OsPythonVersion, ::testing::Values("3.11", "3.12", "3.13"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           std::string n = std::string("Python") + i.param;
                           n.erase(std::remove(n.begin(), n.end(), '.'), n.end());
                           return n;
                         });

// The innermost Python frame of a sample's stack, or -1.
int32_t InnermostPython(const model::Trace& t, int32_t callsite) {
  for (int32_t c = callsite; c >= 0; c = t.callsites.parent[static_cast<size_t>(c)]) {
    uint32_t f = t.callsites.frame[static_cast<size_t>(c)];
    if (t.frames.kind[f] == model::FrameKind::kPython) return static_cast<int32_t>(f);
  }
  return -1;
}

// The outermost op open on `track` at `ts` (the one Python called), or -1.
int32_t OutermostOp(const model::Trace& t, uint32_t track, int64_t ts) {
  int32_t op = -1;
  for (int32_t s = t.SliceAt(track, ts); s >= 0; s = t.slices.parent[static_cast<size_t>(s)])
    if (t.slices.kind[static_cast<size_t>(s)] == model::SliceKind::kOp) op = s;
  return op;
}

// Three functions each call one distinctive torch op, in turn, 100 times; then
// module-level code loops on one line. A sample inside an op must carry that
// op's calling function as its innermost Python frame (a stack read a few
// milliseconds late names the next function), and module-level samples their
// real line (not the module's first line).
// STRATA_OS_PYATTR_PYTHON runs it with another interpreter that has torch (a
// venv of Python 3.12 or 3.13 with torch 2.x from PyPI, say).
TEST(OsPython, SamplesInsideAnOpCarryThePythonStackOfThatInstant) {
  const char* other = std::getenv("STRATA_OS_PYATTR_PYTHON");
  std::string python = other && *other ? other : "/usr/bin/python3.11";
  if (::access(python.c_str(), X_OK) != 0) GTEST_SKIP() << python << " is not installed";
  std::string why;
  if (!other && !testing::TorchUsable(&why)) GTEST_SKIP() << why;
  std::string program = testing::SourceDir() + "/tests/programs/os_pyattr.py";
  uint32_t module_line = 0;
  {
    std::ifstream f(program);
    std::string line;
    for (uint32_t n = 1; std::getline(f, line); ++n)
      if (line.find("# MODULE_LINE") != std::string::npos) module_line = n;
  }
  ASSERT_GT(module_line, 0u);
  std::string dir = testing::TempDir("os_pyattr");
  auto r = testing::Record(dir, {python, program, "100"}, {"--sample-hz", "997"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : {"os.samples", "os.python"}) {
    nlohmann::json c = testing::ManifestCollector(dir, name);
    // Without BPF (no privilege, or built without libbpf) stacks are read after
    // the sample by design, and the note says so: nothing to hold them to here.
    if (c.is_null() || c["state"] != "ok") GTEST_SKIP() << name << " is " << c.dump();
  }
  model::Trace t = testing::Load(dir);
  const std::map<std::string, std::string> caller = {
      {"aten::mm", "call_mm"}, {"aten::sort", "call_sort"}, {"aten::conv2d", "call_conv"}};
  std::map<std::string, std::map<std::string, uint64_t>> by_op;  // op -> innermost Python function -> samples
  std::map<uint32_t, uint64_t> module_lines;  // samples of the program's module-level code outside ops, by line
  // (After the last op: the set-up lines before the loop, torch.set_num_threads
  // starting its pool, take samples of their own, more of them on a busy
  // machine; so do the loop's lines calling the three functions, between
  // their ops: 10 of 82 under the CI's load once. The module-level loop after
  // them is what is checked.)
  int64_t last_op = INT64_MIN;
  for (size_t i = 0; i < t.slices.size(); ++i)
    if (t.slices.kind[i] == model::SliceKind::kOp) last_op = std::max(last_op, t.slices.end(i));
  const auto& cs = t.cpu_samples;
  for (size_t i = 0; i < cs.size(); ++i) {
    int32_t f = InnermostPython(t, cs.callsite[i]);
    if (f < 0) continue;
    std::string fn(t.strings.Get(t.frames.function[static_cast<size_t>(f)]));
    int32_t op = OutermostOp(t, cs.track[i], cs.ts[i]);
    if (op >= 0) {
      ++by_op[std::string(t.strings.Get(t.slices.name[static_cast<size_t>(op)]))][fn];
    } else if (fn == "<module>" && cs.ts[i] >= last_op &&
               std::string(t.strings.Get(t.frames.module[static_cast<size_t>(f)])) == program) {
      ++module_lines[t.frames.line[static_cast<size_t>(f)]];
    }
  }
  for (const auto& [op, fn] : caller) {
    uint64_t total = 0, right = 0;
    std::string seen;
    for (const auto& [name, n] : by_op[op]) {
      total += n;
      if (name == fn) right += n;
      seen += name + "=" + std::to_string(n) + " ";
    }
    EXPECT_GE(total, 15u) << op << ": " << seen;
    // Every sample inside the op names its caller; a little slack for a sample
    // taken on the very instruction that enters or leaves the op.
    EXPECT_GE(static_cast<double>(right), 0.97 * static_cast<double>(total)) << op << ": " << seen;
  }
  uint64_t module_total = 0;
  std::string by_line;
  for (const auto& [line, n] : module_lines) {
    module_total += n;
    by_line += " line " + std::to_string(line) + ": " + std::to_string(n) + ";";
  }
  ASSERT_GE(module_total, 10u);
  EXPECT_GE(static_cast<double>(module_lines[module_line]), 0.9 * static_cast<double>(module_total))
      << "module-level samples on line " << module_line << ": " << module_lines[module_line] << " of " << module_total
      << " (" << by_line << ")";
  // The function table names each function by its first line.
  analysis::OsSummary o = analysis::AnalyzeOs(t);
  bool named = false;
  for (const auto& f : o.python_functions) named |= f.function == "call_sort (os_pyattr.py:21)";
  EXPECT_TRUE(named);
}

}  // namespace
}  // namespace strata
