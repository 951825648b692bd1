// Byte offsets inside a CPython 3.11 interpreter, for reading its stacks from
// outside the process (python_stacks.cc). python311_layout.c computes them by
// compiling against the installed interpreter's internal headers
// (python3.11-dev), so no offset is typed in by hand.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct StrataPyLayout {
  uint32_t version_hex;              // PY_VERSION_HEX of the headers (major.minor must match the target)
  size_t object_type;                // PyObject.ob_type
  size_t runtime_interpreters_head;  // _PyRuntimeState.interpreters.head
  size_t interp_threads_head;        // PyInterpreterState.threads.head
  size_t tstate_next;                // PyThreadState.next
  size_t tstate_native_thread_id;    // PyThreadState.native_thread_id
  size_t tstate_cframe;              // PyThreadState.cframe
  size_t cframe_current_frame;       // _PyCFrame.current_frame
  size_t frame_code;                 // _PyInterpreterFrame.f_code
  size_t frame_previous;             // _PyInterpreterFrame.previous
  size_t frame_owner;                // _PyInterpreterFrame.owner (char)
  size_t frame_prev_instr;           // _PyInterpreterFrame.prev_instr (_Py_CODEUNIT*): the instruction running
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

// Null when strata was built without python3.11-dev.
const struct StrataPyLayout* StrataPython311Layout(void);

#ifdef __cplusplus
}
#endif
