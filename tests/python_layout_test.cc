// The typed-in interpreter layouts (collectors/os/python_layouts.c) against
// the offsets the compiler computes from each Python version's own internal
// headers, for every version whose headers CMake found on this machine
// (Debian's python3.11-dev; 3.12 and 3.13 where pyenv or the distribution put
// them). A version without headers here is skipped, and says so.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "collectors/os/python_layout.h"
#include "collectors/os/python_stacks.h"

extern "C" {
#ifdef STRATA_HEADER_LAYOUT_311
const StrataPyLayout* StrataHeaderLayout311(void);
#endif
#ifdef STRATA_HEADER_LAYOUT_312
const StrataPyLayout* StrataHeaderLayout312(void);
#endif
#ifdef STRATA_HEADER_LAYOUT_313
const StrataPyLayout* StrataHeaderLayout313(void);
const StrataPyLayout* StrataHeaderDebugOffsets313(size_t* bytes);
#endif
}

namespace {

const StrataPyLayout* FromHeaders(uint32_t version) {
  switch (version) {
#ifdef STRATA_HEADER_LAYOUT_311
    case 0x030b0000: return StrataHeaderLayout311();
#endif
#ifdef STRATA_HEADER_LAYOUT_312
    case 0x030c0000: return StrataHeaderLayout312();
#endif
#ifdef STRATA_HEADER_LAYOUT_313
    case 0x030d0000: return StrataHeaderLayout313();
#endif
    default: return nullptr;
  }
}

using Field = std::pair<const char*, size_t StrataPyLayout::*>;
#define FIELD(f) Field{#f, &StrataPyLayout::f}
// The offsets of the typed-in tables that 3.13's _Py_DebugOffsets gives too,
// and those of compact strings, which strata derives there.
const std::vector<Field> kOffsetFields = {
    FIELD(object_type),      FIELD(runtime_interpreters_head), FIELD(interp_threads_head), FIELD(tstate_next),
    FIELD(tstate_native_thread_id), FIELD(tstate_cframe),      FIELD(cframe_current_frame), FIELD(frame_code),
    FIELD(frame_previous),   FIELD(frame_owner),               FIELD(frame_prev_instr),    FIELD(code_filename),
    FIELD(code_qualname),    FIELD(code_firstlineno),          FIELD(code_linetable),      FIELD(code_code_adaptive),
    FIELD(bytes_size),       FIELD(bytes_sval),                FIELD(ascii_length),        FIELD(ascii_state),
    FIELD(ascii_size)};
const std::vector<Field> kCompactFields = {FIELD(compact_size), FIELD(compact_utf8), FIELD(compact_utf8_length)};
#undef FIELD

void ExpectSame(const StrataPyLayout& typed, const StrataPyLayout& headers, const std::vector<Field>& fields) {
  for (const auto& [name, f] : fields) EXPECT_EQ(typed.*f, headers.*f) << name;
}

class PythonLayout : public ::testing::TestWithParam<uint32_t> {};

TEST_P(PythonLayout, TypedTableEqualsTheHeaders) {
  uint32_t v = GetParam();
  const StrataPyLayout* typed = StrataPythonLayout(v | 0x04f0);  // 3.x.4 final: any micro release reads the same
  ASSERT_NE(typed, nullptr);
  EXPECT_EQ(typed->version_hex, v);
  const StrataPyLayout* h = FromHeaders(v);
  if (!h) GTEST_SKIP() << "no internal headers of Python " << (v >> 24) << "." << ((v >> 16) & 0xff) << " here";
  ASSERT_EQ(h->version_hex, v);
EXPECT_EQ(typed->current_frame_direct, h->current_frame_direct);
  EXPECT_EQ(typed->cstack_owner, h->cstack_owner);
  ExpectSame(*typed, *h, kOffsetFields);
  ExpectSame(*typed, *h, kCompactFields);
}

INSTANTIATE_TEST_SUITE_P(Versions, PythonLayout, ::testing::Values(0x030b0000u, 0x030c0000u, 0x030d0000u),
                         [](const ::testing::TestParamInfo<uint32_t>& i) {
                           return "Python3" + std::to_string((i.param >> 16) & 0xff);
                         });

// 3.13's own description of its layout (_Py_DebugOffsets at the start of
// _PyRuntime) is read at the positions strata types in: each against the
// header's offsetof, and the bytes read against where the part strata uses ends.
TEST(PythonLayout, DebugOffsetPositionsEqualTheHeader313) {
  StrataPyLayout typed{};
  size_t typed_bytes = 0;
  ASSERT_TRUE(strata::collectors::os::PythonStacks::DebugOffsetPositions(0x030d04f0, &typed, &typed_bytes));
  EXPECT_FALSE(strata::collectors::os::PythonStacks::DebugOffsetPositions(0x030c04f0, &typed, &typed_bytes));
  ASSERT_TRUE(strata::collectors::os::PythonStacks::DebugOffsetPositions(0x030d04f0, &typed, &typed_bytes));
#ifdef STRATA_HEADER_LAYOUT_313
  size_t bytes = 0;
  const StrataPyLayout* h = StrataHeaderDebugOffsets313(&bytes);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(typed_bytes, bytes);
ExpectSame(typed, *h, kOffsetFields);
#else
  GTEST_SKIP() << "no internal headers of Python 3.13 here";
#endif
}

TEST(PythonLayout, OtherVersionsAreNotRead) {
  EXPECT_EQ(StrataPythonLayout(0x030a0cf0), nullptr);  // 3.10.12
  EXPECT_EQ(StrataPythonLayout(0x030e00f0), nullptr);  // 3.14.0
  EXPECT_EQ(StrataPythonLayout(0x020712f0), nullptr);  // 2.7.18
  EXPECT_EQ(kStrataPyLayoutCount, 3u);
}

}  // namespace
