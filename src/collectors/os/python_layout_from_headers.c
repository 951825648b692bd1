// The layout of the CPython whose internal headers this file is compiled
// against (3.11, 3.12 or 3.13), computed by the compiler. Not part of strata:
// tests/python_layout_test.cc compares it with the typed-in table of
// python_layouts.c, once per Python version whose headers CMake found.
// STRATA_LAYOUT_FN names the function (one per version in one binary).
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
