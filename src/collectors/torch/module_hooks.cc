// _strata_torch_hooks: the global nn.Module forward pre/post hooks that give
// every module's forward a scope (python/strata/_torch.py installs them), in C.
//
// The same hooks written in Python cost ~15,700 instructions per module call
// (two interpreted functions, two ctypes calls), ~2 us with warm caches and
// more inside a training step, whose tensors evict the interpreter's working
// set between two module calls. Here a module seen before costs a hash lookup,
// a weak-reference check and a direct call into libstrata_torch.
//
// What stays in Python, called from here only when needed: naming a module the
// first time it runs (its qualified name from its parent), the root module's
// flags and batch size (once per forward of the whole model), and recording a
// TorchScript module's graph. An error there is cleared, never raised into the
// program: the module then runs without a scope.
//
// Everything here runs with the GIL held (hooks, and init from attach()).
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace {

using BeginFn = void (*)(uint32_t name, uint32_t flags, int64_t batch);
using EndFn = void (*)(uint32_t name);

BeginFn g_begin = nullptr;
EndFn g_end = nullptr;
PyObject* g_entry = nullptr;   // entry(module, parent or None) -> (name id, is a ScriptModule)
PyObject* g_root = nullptr;    // root(module, inputs) -> (flags, batch)
PyObject* g_script = nullptr;  // script(module): records its graph once

struct Entry {
  PyObject* ref = nullptr;  // weak reference to the module (owned)
  uint32_t id = 0;
  bool script = false;
};

// By module address; an entry is valid while its weak reference still points
// at the module (a new module at a freed one's address is named afresh).
std::unordered_map<PyObject*, Entry>* g_entries = nullptr;

struct Frame {
  PyObject* module;  // owned while on the stack
  uint32_t id;
};
thread_local std::vector<Frame> t_stack;

const Entry* Find(PyObject* module) {
  auto it = g_entries->find(module);
  if (it == g_entries->end() || PyWeakref_GetObject(it->second.ref) != module) return nullptr;
  return &it->second;
}

const Entry* Make(PyObject* module, PyObject* parent) {
  PyObject* ref = PyWeakref_NewRef(module, nullptr);
  if (!ref) return nullptr;
  PyObject* res = PyObject_CallFunctionObjArgs(g_entry, module, parent, nullptr);
  unsigned long id = 0;
  int script = 0;
  if (!res || !PyArg_ParseTuple(res, "kp", &id, &script) || id == 0) {
    Py_XDECREF(res);
    Py_DECREF(ref);
    return nullptr;
  }
  Py_DECREF(res);
  Entry& e = (*g_entries)[module];
  Py_XDECREF(e.ref);
  e.ref = ref;
  e.id = static_cast<uint32_t>(id);
  e.script = script != 0;
  return &e;
}

PyObject* PreHook(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs < 2 || !g_entries) Py_RETURN_NONE;
  PyObject* module = args[0];
  std::vector<Frame>& stack = t_stack;
  const Entry* e = Find(module);
  if (!e) e = Make(module, stack.empty() ? Py_None : stack.back().module);
  if (!e) {
    PyErr_Clear();
    Py_RETURN_NONE;  // no scope for it; its post hook finds it off the stack
  }
  uint32_t id = e->id;
  bool script = e->script;
  uint32_t flags = 0;
  long long batch = -1;
  if (stack.empty()) {
    PyObject* res = PyObject_CallFunctionObjArgs(g_root, module, args[1], nullptr);
    unsigned int f = 0;
    if (res && PyArg_ParseTuple(res, "IL", &f, &batch)) flags = f;
    else batch = -1;
    Py_XDECREF(res);
    PyErr_Clear();
  }
  if (script) {
    PyObject* res = PyObject_CallOneArg(g_script, module);
    Py_XDECREF(res);
    PyErr_Clear();
  }
  Py_INCREF(module);
  stack.push_back({module, id});
  g_begin(id, flags, static_cast<int64_t>(batch));
  Py_RETURN_NONE;
}

// Closes the module's scope and those of modules inside it whose forward
// raised (they never saw their post hook).
PyObject* PostHook(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs < 1) Py_RETURN_NONE;
  PyObject* module = args[0];
  std::vector<Frame>& stack = t_stack;
  if (!stack.empty() && stack.back().module == module) {  // the usual case
    Frame f = stack.back();
    stack.pop_back();
    g_end(f.id);
    Py_DECREF(f.module);
    Py_RETURN_NONE;
  }
  size_t i = stack.size();
  while (i > 0 && stack[i - 1].module != module) --i;
  if (i == 0) Py_RETURN_NONE;  // not on the stack: its pre hook recorded nothing
  std::vector<Frame> closed(stack.begin() + static_cast<std::ptrdiff_t>(i - 1), stack.end());
  stack.resize(i - 1);
  for (size_t k = closed.size(); k-- > 0;) g_end(closed[k].id);
  for (const Frame& f : closed) Py_DECREF(f.module);
  Py_RETURN_NONE;
}

// init(begin_address, end_address, entry, root, script)
PyObject* Init(PyObject*, PyObject* args) {
  unsigned long long begin = 0, end = 0;
  PyObject *entry = nullptr, *root = nullptr, *script = nullptr;
  if (!PyArg_ParseTuple(args, "KKOOO", &begin, &end, &entry, &root, &script)) return nullptr;
  if (!begin || !end || !PyCallable_Check(entry) || !PyCallable_Check(root) || !PyCallable_Check(script)) {
    PyErr_SetString(PyExc_ValueError, "init: null entry point or a callback that is not callable");
    return nullptr;
  }
  g_begin = reinterpret_cast<BeginFn>(static_cast<uintptr_t>(begin));
  g_end = reinterpret_cast<EndFn>(static_cast<uintptr_t>(end));
  Py_INCREF(entry);
  Py_INCREF(root);
  Py_INCREF(script);
  Py_XSETREF(g_entry, entry);
  Py_XSETREF(g_root, root);
  Py_XSETREF(g_script, script);
  if (!g_entries) g_entries = new std::unordered_map<PyObject*, Entry>();  // lives as long as the process
  Py_RETURN_NONE;
}

// How deep the calling thread's module stack is (tests).
PyObject* Depth(PyObject*, PyObject*) { return PyLong_FromSize_t(t_stack.size()); }

PyMethodDef kMethods[] = {
    {"init", Init, METH_VARARGS, "init(begin_address, end_address, entry, root, script)"},
    {"pre_hook", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(PreHook)), METH_FASTCALL,
     "global forward pre hook: opens the module's scope"},
    {"post_hook", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(PostHook)), METH_FASTCALL,
     "global forward hook: closes the module's scope"},
    {"depth", Depth, METH_NOARGS, "depth of the calling thread's module stack"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "_strata_torch_hooks", "strata's nn.Module scope hooks", -1, kMethods,
                       nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__strata_torch_hooks() { return PyModule_Create(&kModule); }
