// The layout of the CPython whose internal headers this file is compiled
// against (3.11, 3.12 or 3.13), computed by the compiler. Not part of strata:
// tests/python_layout_test.cc compares it with the typed-in table of
// python_layouts.c, once per Python version whose headers CMake found.
// STRATA_LAYOUT_FN names the function (one per version in one binary);
// STRATA_DEBUG_FN, where _Py_DebugOffsets exists (3.13), the positions in it
// of the offsets python_stacks.cc reads (kDebugOffsets313).
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>

#include "collectors/os/python_layout.h"

#if PY_VERSION_HEX >= 0x030D0000
#define CURRENT_FRAME_DIRECT 1
#define TSTATE_FRAME offsetof(PyThreadState, current_frame)
#define CFRAME_CURRENT 0
#define FRAME_CODE offsetof(_PyInterpreterFrame, f_executable)
#define FRAME_INSTR offsetof(_PyInterpreterFrame, instr_ptr)
#else
#define CURRENT_FRAME_DIRECT 0
#define TSTATE_FRAME offsetof(PyThreadState, cframe)
#define CFRAME_CURRENT offsetof(_PyCFrame, current_frame)
#define FRAME_CODE offsetof(_PyInterpreterFrame, f_code)
#define FRAME_INSTR offsetof(_PyInterpreterFrame, prev_instr)
#endif
#if PY_VERSION_HEX >= 0x030C0000
#define CSTACK_OWNER FRAME_OWNED_BY_CSTACK
#else
#define CSTACK_OWNER 0xff
#endif

const struct StrataPyLayout* STRATA_LAYOUT_FN(void) {
  static const struct StrataPyLayout kLayout = {
      PY_VERSION_HEX & 0xffff0000u,
      CURRENT_FRAME_DIRECT,
      CSTACK_OWNER,
      offsetof(PyObject, ob_type),
      offsetof(_PyRuntimeState, interpreters.head),
      offsetof(PyInterpreterState, threads.head),
      offsetof(PyThreadState, next),
      offsetof(PyThreadState, native_thread_id),
      TSTATE_FRAME,
      CFRAME_CURRENT,
      FRAME_CODE,
      offsetof(_PyInterpreterFrame, previous),
      offsetof(_PyInterpreterFrame, owner),
      FRAME_INSTR,
      offsetof(PyCodeObject, co_filename),
      offsetof(PyCodeObject, co_qualname),
      offsetof(PyCodeObject, co_firstlineno),
      offsetof(PyCodeObject, co_linetable),
      offsetof(PyCodeObject, co_code_adaptive),
      offsetof(PyVarObject, ob_size),
      offsetof(PyBytesObject, ob_sval),
      offsetof(PyASCIIObject, length),
      offsetof(PyASCIIObject, state),
      sizeof(PyASCIIObject),
      sizeof(PyCompactUnicodeObject),
      offsetof(PyCompactUnicodeObject, utf8),
      offsetof(PyCompactUnicodeObject, utf8_length),
  };
  return &kLayout;
}

// 3.13+: a layout whose fields say where _Py_DebugOffsets holds that field's
// offset (0 for those it does not give); *bytes, where its unicode_object
// part ends (what strata reads). NULL before 3.13.
const struct StrataPyLayout* STRATA_DEBUG_FN(size_t* bytes) {
#if PY_VERSION_HEX >= 0x030D0000
  static const struct StrataPyLayout kPositions = {
      .object_type = offsetof(_Py_DebugOffsets, pyobject.ob_type),
      .runtime_interpreters_head = offsetof(_Py_DebugOffsets, runtime_state.interpreters_head),
      .interp_threads_head = offsetof(_Py_DebugOffsets, interpreter_state.threads_head),
      .tstate_next = offsetof(_Py_DebugOffsets, thread_state.next),
      .tstate_native_thread_id = offsetof(_Py_DebugOffsets, thread_state.native_thread_id),
      .tstate_cframe = offsetof(_Py_DebugOffsets, thread_state.current_frame),
      .frame_code = offsetof(_Py_DebugOffsets, interpreter_frame.executable),
      .frame_previous = offsetof(_Py_DebugOffsets, interpreter_frame.previous),
      .frame_owner = offsetof(_Py_DebugOffsets, interpreter_frame.owner),
      .frame_prev_instr = offsetof(_Py_DebugOffsets, interpreter_frame.instr_ptr),
      .code_filename = offsetof(_Py_DebugOffsets, code_object.filename),
      .code_qualname = offsetof(_Py_DebugOffsets, code_object.qualname),
      .code_firstlineno = offsetof(_Py_DebugOffsets, code_object.firstlineno),
      .code_linetable = offsetof(_Py_DebugOffsets, code_object.linetable),
      .code_code_adaptive = offsetof(_Py_DebugOffsets, code_object.co_code_adaptive),
      .bytes_size = offsetof(_Py_DebugOffsets, bytes_object.ob_size),
      .bytes_sval = offsetof(_Py_DebugOffsets, bytes_object.ob_sval),
      .ascii_length = offsetof(_Py_DebugOffsets, unicode_object.length),
      .ascii_state = offsetof(_Py_DebugOffsets, unicode_object.state),
      .ascii_size = offsetof(_Py_DebugOffsets, unicode_object.asciiobject_size),
  };
  *bytes = offsetof(_Py_DebugOffsets, unicode_object) + sizeof(((_Py_DebugOffsets*)0)->unicode_object);
  return &kPositions;
#else
  *bytes = 0;
  return NULL;
#endif
}
