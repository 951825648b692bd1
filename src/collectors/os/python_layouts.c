// The interpreter layouts strata reads (python_layout.h). Each row was taken
// from the compiler's offsetof() over that version's internal headers
// (Include/internal/pycore_{frame,interp,runtime}.h, cpython/{code,pystate,
// unicodeobject,bytesobject}.h) on x86-64 Linux, and is re-checked wherever
// those headers are installed (tests/python_layout_test.cc). CPython keeps
// these structs unchanged within a minor release.
#include "collectors/os/python_layout.h"

const struct StrataPyLayout kStrataPyLayouts[] = {
    // 3.11: frames hang off PyThreadState.cframe->current_frame; no shim frames.
    {0x030b0000, 0, 0xff, /*ob_type*/ 8, /*interpreters.head*/ 40, /*threads.head*/ 16, /*next*/ 8,
     /*native_thread_id*/ 160, /*cframe*/ 56, /*current_frame*/ 8, /*f_code*/ 32, /*previous*/ 48, /*owner*/ 69,
     /*prev_instr*/ 56, /*co_filename*/ 112, /*co_qualname*/ 128, /*co_firstlineno*/ 72, /*co_linetable*/ 136,
     /*co_code_adaptive*/ 184, /*ob_size*/ 16, /*ob_sval*/ 32, /*length*/ 16, /*state*/ 32,
     /*sizeof PyASCIIObject*/ 48, /*sizeof PyCompactUnicodeObject*/ 72, /*utf8*/ 56, /*utf8_length*/ 48},
    // 3.12: the same walk; each C entry into the interpreter pushes a shim
    // frame (owner FRAME_OWNED_BY_CSTACK); str lost its wstr field.
    {0x030c0000, 0, 3, 8, 40, 72, 8, 144, 56, 0, 0, 8, 70, 56, 112, 128, 68, 136, 192, 16, 32, 16, 32, 40, 56, 48,
     40},
    // 3.13: PyThreadState.current_frame replaces cframe; f_executable and
    // instr_ptr replace f_code and prev_instr (instr_ptr is the instruction
    // running, which lies on the same line).
    {0x030d0000, 1, 3, 8, 632, 7344, 8, 160, 72, 0, 0, 8, 70, 56, 112, 128, 68, 136, 200, 16, 32, 16, 32, 40, 56, 48,
     40},
};

const size_t kStrataPyLayoutCount = sizeof kStrataPyLayouts / sizeof kStrataPyLayouts[0];

const struct StrataPyLayout* StrataPythonLayout(uint32_t version_hex) {
  for (size_t i = 0; i < kStrataPyLayoutCount; ++i)
    if ((kStrataPyLayouts[i].version_hex >> 16) == (version_hex >> 16)) return &kStrataPyLayouts[i];
  return 0;
}
