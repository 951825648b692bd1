// Byte offsets inside a CPython interpreter (3.11, 3.12, 3.13), for reading
// its stacks from outside the process (python_stacks.cc, python_stacks.bpf.c).
//
// The tables are typed in (python_layouts.c) so that one strata build reads
// every supported version, whatever Python's headers the build machine has.
// Each table is checked against the offsets the compiler computes from that
// version's own internal headers wherever they are installed
// (python_layout_from_headers.c, tests/python_layout_test.cc), so a typo or a
// layout change in a new release fails a test instead of misreading frames.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct StrataPyLayout {
  uint32_t version_hex;              // major.minor the table is for (PY_VERSION_HEX & 0xffff0000)
  uint32_t current_frame_direct;     // 1: tstate_cframe is PyThreadState.current_frame (3.13+), no _PyCFrame
  uint32_t cstack_owner;             // _PyInterpreterFrame.owner of the C stack's shim frames (3.12+), else 0xff
  size_t object_type;                // PyObject.ob_type
  size_t runtime_interpreters_head;  // _PyRuntimeState.interpreters.head
  size_t interp_threads_head;        // PyInterpreterState.threads.head
  size_t tstate_next;                // PyThreadState.next
  size_t tstate_native_thread_id;    // PyThreadState.native_thread_id
  size_t tstate_cframe;              // PyThreadState.cframe (3.11, 3.12) or .current_frame (3.13)
  size_t cframe_current_frame;       // _PyCFrame.current_frame (unused when current_frame_direct)
  size_t frame_code;                 // _PyInterpreterFrame.f_code (3.13: f_executable)
  size_t frame_previous;             // _PyInterpreterFrame.previous
  size_t frame_owner;                // _PyInterpreterFrame.owner (char)
  size_t frame_prev_instr;           // _PyInterpreterFrame.prev_instr (3.13: instr_ptr): the instruction running
  size_t code_filename;              // PyCodeObject.co_filename
  size_t code_qualname;              // PyCodeObject.co_qualname
  size_t code_firstlineno;           // PyCodeObject.co_firstlineno (int)
  size_t code_linetable;             // PyCodeObject.co_linetable (bytes): instruction -> line
  size_t code_code_adaptive;         // PyCodeObject.co_code_adaptive: the instructions, inside the object
  size_t bytes_size;                 // PyVarObject.ob_size of a bytes object
  size_t bytes_sval;                 // PyBytesObject.ob_sval: its contents
  size_t ascii_length;               // PyASCIIObject.length
  size_t ascii_state;                // PyASCIIObject.state (bit field word)
  size_t ascii_size;                 // sizeof(PyASCIIObject): the text of a compact ASCII str follows
  size_t compact_size;               // sizeof(PyCompactUnicodeObject): ... of a compact non-ASCII str
  size_t compact_utf8;               // PyCompactUnicodeObject.utf8 (char*, may be NULL)
  size_t compact_utf8_length;        // PyCompactUnicodeObject.utf8_length
};

// The layouts strata reads, oldest first, and how many.
extern const struct StrataPyLayout kStrataPyLayouts[];
extern const size_t kStrataPyLayoutCount;

// The layout for an interpreter whose Py_Version is `version_hex` (only major
// and minor count), or null when strata does not read that version.
const struct StrataPyLayout* StrataPythonLayout(uint32_t version_hex);

#ifdef __cplusplus
}
#endif
