// Compiled only when python3.11-dev's internal headers are present (see CMakeLists.txt).
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>

#include "collectors/os/python_layout.h"

static const struct StrataPyLayout kLayout = {
    PY_VERSION_HEX,
    offsetof(PyObject, ob_type),
    offsetof(_PyRuntimeState, interpreters.head),
    offsetof(PyInterpreterState, threads.head),
    offsetof(PyThreadState, next),
    offsetof(PyThreadState, native_thread_id),
    offsetof(PyThreadState, cframe),
    offsetof(_PyCFrame, current_frame),
    offsetof(_PyInterpreterFrame, f_code),
    offsetof(_PyInterpreterFrame, previous),
    offsetof(_PyInterpreterFrame, owner),
    offsetof(_PyInterpreterFrame, prev_instr),
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

const struct StrataPyLayout* StrataPython311Layout(void) { return &kLayout; }
