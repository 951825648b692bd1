// _strata_torch_hooks: what gives every nn.Module forward a scope
// (python/strata/_torch.py installs it), in C. Two ways in:
//  - wrap_call(nn.Module.__call__): a replacement __call__ that opens the
//    module's scope, calls the original and closes the scope, also when the
//    forward raises. Used where nothing traces nn.Module.__call__ itself
//    (PyTorch 1.x: no torch.compile).
//  - pre_hook/post_hook: global forward hooks (PyTorch 2.x, whose
//    torch.compile knows about global hooks and would have to trace through a
//    replaced __call__). With any global hook registered, every module call
//    takes nn.Module's slow path in Python, which the wrapper avoids:
//    +0.65% vs +0.12% of a small CNN's training step with PyTorch 1.13
//    (BENCHMARKS.md).
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
// The same extension wraps the host-reading calls of the program (Tensor.item,
// Tensor.tolist, torch.cuda.synchronize: wrap_site) so that each says where the
// program called it: the calling Python frame's "file:line (function)" (the
// first frame outside torch's own package), interned once per call site and
// written before and after the call (strata_torch_site_begin/end). The ops
// run inside the call carry that site: a sync finding names the program's
// lines. The frame must be read here, with the GIL held: the ops themselves
// run with it released (.item() releases it before dispatching).
//
// Everything here runs with the GIL held (module calls, and init from attach()).
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

using BeginFn = void (*)(uint32_t name, uint32_t flags, int64_t batch);
using EndFn = void (*)(uint32_t name);
using RaisedFn = void (*)();
using RootBatchFn = void (*)(uint32_t flags, int64_t batch);

BeginFn g_begin = nullptr;
EndFn g_end = nullptr;
PyObject* g_entry = nullptr;   // entry(module, parent or None) -> (name id, is a ScriptModule)
PyObject* g_root = nullptr;    // root(module, inputs) -> (flags, batch)
PyObject* g_script = nullptr;  // script(module): records its graph once
PyObject* g_root_end = nullptr;  // root_end(module): a root module's forward returned (optional)
RaisedFn g_root_raised = nullptr;  // the root module's forward in progress raised (optional)
RootBatchFn g_root_batch = nullptr;  // a root forward's batch, from its output (optional)
PyObject* g_batch_of = nullptr;      // batch_of(output, in_batch) -> the root's batch or -1 (with g_root_batch)

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
  uint32_t flags = 0;      // a root's, as its begin said
  bool sizable = false;    // a root whose output may give its batch size
  long long in_batch = 0;  // a root's batch from its inputs (-1: none)
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

// Opens the scope of `module`'s forward; false when it gets none. Its
// positional arguments come as a tuple (`inputs`, the hooks') or as an array
// (the wrapper's); only a root module's are looked at (batch size).
bool Open(PyObject* module, PyObject* inputs, PyObject* const* items, Py_ssize_t n) {
  std::vector<Frame>& stack = t_stack;
  const Entry* e = Find(module);
  if (!e) e = Make(module, stack.empty() ? Py_None : stack.back().module);
  if (!e) {
    PyErr_Clear();
    return false;  // no scope for it; Close does not find it on the stack
  }
  uint32_t id = e->id;
  bool script = e->script;
  uint32_t flags = 0;
  long long batch = -1;
  if (stack.empty()) {
    PyObject* in = inputs ? Py_NewRef(inputs) : PyTuple_New(n);
    if (in && !inputs)
      for (Py_ssize_t i = 0; i < n; ++i) PyTuple_SET_ITEM(in, i, Py_NewRef(items[i]));
    PyObject* res = in ? PyObject_CallFunctionObjArgs(g_root, module, in, nullptr) : nullptr;
    unsigned int f = 0;
    if (res && PyArg_ParseTuple(res, "IL", &f, &batch)) flags = f;
    else batch = -1;
    Py_XDECREF(res);
    Py_XDECREF(in);
    PyErr_Clear();
  }
  if (script) {
    PyObject* res = PyObject_CallOneArg(g_script, module);
    Py_XDECREF(res);
    PyErr_Clear();
  }
  bool sizable = stack.empty() && g_root_batch && g_batch_of;
  stack.push_back({Py_NewRef(module), id, flags, sizable, batch});
  g_begin(id, flags, static_cast<int64_t>(batch));
  return true;
}

// A root forward that returned `output`: its batch from the output where its
// inputs gave none (keyword arguments, which the global hooks do not see), or
// where the output has fewer rows than the first input (graphs given as their
// nodes): batch_of(output, in_batch) says, > 0 when it does. Called with no
// exception set.
void SizeFromOutput(PyObject* module, PyObject* output) {
  if (t_stack.size() != 1 || t_stack.back().module != module || !t_stack.back().sizable || !output ||
      output == Py_None)
    return;
  long long in_batch = t_stack.back().in_batch;
  PyObject* res = PyObject_CallFunction(g_batch_of, "OL", output, in_batch);
  long long b = res ? PyLong_AsLongLong(res) : -1;
  Py_XDECREF(res);
  PyErr_Clear();
  constexpr uint32_t kReplaces = 16;  // the output's batch replaces the inputs'
  if (b > 0) g_root_batch(t_stack.back().flags | (in_batch > 0 ? kReplaces : 0), static_cast<int64_t>(b));
}

// Closes the module's scope and those of modules inside it still open (with
// the hooks: modules whose forward raised never see their post hook).
void Close(PyObject* module) {
  std::vector<Frame>& stack = t_stack;
  if (!stack.empty() && stack.back().module == module) {  // the usual case
    Frame f = stack.back();
    stack.pop_back();
    g_end(f.id);
    // A root forward that returned (not raised): the Python side may watch
    // for the loop's next iteration (python/strata/_loop_head.py).
    if (stack.empty() && g_root_end && !PyErr_Occurred()) {
      PyObject* res = PyObject_CallOneArg(g_root_end, f.module);
      Py_XDECREF(res);
      PyErr_Clear();
    }
    Py_DECREF(f.module);
    return;
  }
  size_t i = stack.size();
  while (i > 0 && stack[i - 1].module != module) --i;
  if (i == 0) return;  // not on the stack: Open recorded nothing
  std::vector<Frame> closed(stack.begin() + static_cast<std::ptrdiff_t>(i - 1), stack.end());
  stack.resize(i - 1);
  for (size_t k = closed.size(); k-- > 0;) g_end(closed[k].id);
  for (const Frame& f : closed) Py_DECREF(f.module);
}

PyObject* PreHook(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs >= 2 && g_entries) Open(args[0], args[1], nullptr, 0);
  Py_RETURN_NONE;
}

// Whether `module` is the root forward open on this thread (the only scope).
bool IsOpenRoot(PyObject* module) { return t_stack.size() == 1 && t_stack.back().module == module; }

// PyTorch 2.x calls the post hook (always_call) also when the forward raised,
// from its exception handler, with no output: an exception being handled and
// no output is a forward that raised.
bool RaisedInHook(Py_ssize_t nargs, PyObject* const* args) {
  if (nargs < 3 || args[2] != Py_None) return false;
  PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
  PyErr_GetExcInfo(&type, &value, &tb);
  bool handling = type != nullptr && type != Py_None;
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  return handling;
}

PyObject* PostHook(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs < 1 || !g_entries) Py_RETURN_NONE;
  if (IsOpenRoot(args[0])) {
    if (RaisedInHook(nargs, args)) {
      if (g_root_raised) g_root_raised();
    } else if (nargs >= 3) {
      SizeFromOutput(args[0], args[2]);
    }
  }
  Close(args[0]);
  Py_RETURN_NONE;
}

// --- the __call__ wrapper ----------------------------------------------------------
//
// Py_TPFLAGS_METHOD_DESCRIPTOR makes type(m).__call__ call it unbound with the
// module first (no bound method made per call); attribute access (m.__call__)
// still binds it. Attributes it lacks (__name__, __qualname__, ...) are the
// original's; __wrapped__ is the original (inspect.signature follows it).
struct ModuleCall {
  PyObject_HEAD
  PyObject* orig;  // the nn.Module.__call__ it wraps (owned)
  vectorcallfunc vectorcall;
};

PyObject* ModuleCallVectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  PyObject* orig = reinterpret_cast<ModuleCall*>(self)->orig;
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (nargs < 1 || !g_entries) return PyObject_Vectorcall(orig, args, nargsf, kwnames);
  PyObject* module = args[0];
  // The keyword arguments' values follow the positional ones: a model called
  // as model(**batch) has its batch size from them.
  Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  bool opened = Open(module, nullptr, args + 1, nargs - 1 + nkw);
  PyObject* res = PyObject_Vectorcall(orig, args, nargsf, kwnames);
  if (opened && res == nullptr && g_root_raised && IsOpenRoot(module)) g_root_raised();
  if (opened && res != nullptr) SizeFromOutput(module, res);
  if (opened) Close(module);  // raises nothing: an exception of the forward stays set
  return res;
}

PyObject* ModuleCallGet(PyObject* self, PyObject* obj, PyObject*) {
  if (obj == nullptr || obj == Py_None) return Py_NewRef(self);
  return PyMethod_New(self, obj);
}

PyObject* ModuleCallGetAttr(PyObject* self, PyObject* name) {
  PyObject* v = PyObject_GenericGetAttr(self, name);
  if (v || !PyErr_ExceptionMatches(PyExc_AttributeError)) return v;
  PyErr_Clear();
  return PyObject_GetAttr(reinterpret_cast<ModuleCall*>(self)->orig, name);
}

void ModuleCallDealloc(PyObject* self) {
  Py_XDECREF(reinterpret_cast<ModuleCall*>(self)->orig);
  Py_TYPE(self)->tp_free(self);
}

PyObject* ModuleCallWrapped(PyObject* self, void*) { return Py_NewRef(reinterpret_cast<ModuleCall*>(self)->orig); }

PyGetSetDef kModuleCallGetSet[] = {
    {"__wrapped__", ModuleCallWrapped, nullptr, "the callable it wraps", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

// A wrapper type: a method descriptor (see above) showing the original's
// attributes, whose calls go to `vectorcall` with the original in `orig`.
PyTypeObject WrapperType(const char* name, const char* doc) {
  PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
  t.tp_name = name;
  t.tp_basicsize = sizeof(ModuleCall);
  t.tp_dealloc = ModuleCallDealloc;
  t.tp_vectorcall_offset = offsetof(ModuleCall, vectorcall);
  t.tp_call = PyVectorcall_Call;
  t.tp_getattro = ModuleCallGetAttr;
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR;
  t.tp_doc = doc;
  t.tp_descr_get = ModuleCallGet;
  t.tp_getset = kModuleCallGetSet;
  return t;
}

PyObject* NewWrapper(PyTypeObject* type, vectorcallfunc call, PyObject* orig, const char* not_callable) {
  if (!PyCallable_Check(orig)) {
    PyErr_SetString(PyExc_TypeError, not_callable);
    return nullptr;
  }
  if (PyType_Ready(type) < 0) return nullptr;
  auto* w = PyObject_New(ModuleCall, type);
  if (!w) return nullptr;
  w->orig = Py_NewRef(orig);
  w->vectorcall = call;
  return reinterpret_cast<PyObject*>(w);
}

PyTypeObject kModuleCallType =
    WrapperType("_strata_torch_hooks.ModuleCall", "nn.Module.__call__ with a strata scope around each module's forward");

PyObject* WrapCall(PyObject*, PyObject* orig) {
  return NewWrapper(&kModuleCallType, ModuleCallVectorcall, orig, "wrap_call: not callable");
}

// --- call sites of host-reading calls ----------------------------------------------

using SiteBeginFn = void (*)(uint32_t site);
using SiteEndFn = void (*)();
using InternFn = uint32_t (*)(const char* text);
SiteBeginFn g_site_begin = nullptr;
SiteEndFn g_site_end = nullptr;
InternFn g_intern = nullptr;
// Per code object: whether it is torch's own, and its sites by instruction
// offset (a dictionary probe per call; the line is computed once per site).
// The code objects are kept alive, so that an address always means the same
// code (call sites are few).
struct CodeSites {
  bool torch_own = false;
  std::unordered_map<int, uint32_t> by_offset;
};
std::unordered_map<PyObject*, CodeSites>* g_sites = nullptr;

CodeSites& SitesOf(PyCodeObject* code) {
  auto [it, fresh] = g_sites->try_emplace(reinterpret_cast<PyObject*>(code));
  if (fresh) {
    Py_INCREF(code);
    const char* file = PyUnicode_Check(code->co_filename) ? PyUnicode_AsUTF8(code->co_filename) : nullptr;
    if (!file) PyErr_Clear();
    it->second.torch_own = file && std::strstr(file, "-packages/torch/") != nullptr;
  }
  return it->second;
}

uint32_t SiteOf(PyCodeObject* code, CodeSites& cs, PyFrameObject* f) {
#if PY_VERSION_HEX >= 0x030B0000
  int key = PyFrame_GetLasti(f);
#else
  int key = PyFrame_GetLineNumber(f);
#endif
  auto it = cs.by_offset.find(key);
  if (it != cs.by_offset.end()) return it->second;
  int line = PyFrame_GetLineNumber(f);
  const char* file = PyUnicode_Check(code->co_filename) ? PyUnicode_AsUTF8(code->co_filename) : nullptr;
  if (!file) PyErr_Clear();
  const char* fn = PyUnicode_Check(code->co_name) ? PyUnicode_AsUTF8(code->co_name) : nullptr;
  if (!fn) PyErr_Clear();
  std::string text = std::string(file ? file : "?") + ":" + std::to_string(line) + " (" + (fn ? fn : "?") + ")";
  uint32_t id = g_intern(text.c_str());
  if (id != 0) cs.by_offset.emplace(key, id);
  return id;
}

// The site of the Python code calling now: the innermost frame outside torch's
// package (torch's own helpers call .item() for the program), else the innermost.
uint32_t CallerSite() {
  PyFrameObject* f = PyEval_GetFrame();  // borrowed; null outside Python code
  if (!f) return 0;
  Py_INCREF(f);
  PyFrameObject* first = nullptr;
  uint32_t id = 0;
  for (int depth = 0; f && depth < 32; ++depth) {
    PyCodeObject* code = PyFrame_GetCode(f);  // new reference
    CodeSites& cs = SitesOf(code);
    if (!cs.torch_own) {
      id = SiteOf(code, cs, f);
      Py_DECREF(code);
      break;
    }
    Py_DECREF(code);
    if (!first) {
      Py_INCREF(f);
      first = f;
    }
    PyFrameObject* back = PyFrame_GetBack(f);  // new reference
    Py_DECREF(f);
    f = back;
  }
  Py_XDECREF(f);
  if (id == 0 && first) {
    PyCodeObject* code = PyFrame_GetCode(first);
    id = SiteOf(code, SitesOf(code), first);
    Py_DECREF(code);
  }
  Py_XDECREF(first);
  return id;
}

PyObject* SiteCallVectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  PyObject* orig = reinterpret_cast<ModuleCall*>(self)->orig;
  uint32_t site = g_sites ? CallerSite() : 0;
  if (site == 0) return PyObject_Vectorcall(orig, args, nargsf, kwnames);
  g_site_begin(site);
  PyObject* res = PyObject_Vectorcall(orig, args, nargsf, kwnames);
  g_site_end();
  return res;
}

// The wrapper of a host-reading call: a ModuleCall's layout and attributes,
// with a site around each call.
PyTypeObject kSiteCallType = WrapperType(
    "_strata_torch_hooks.SiteCall", "a host-reading call (Tensor.item, ...) that tells strata where the program called it");

PyObject* WrapSite(PyObject*, PyObject* orig) {
  return NewWrapper(&kSiteCallType, SiteCallVectorcall, orig, "wrap_site: not callable");
}

// init_sites(site_begin_address, site_end_address, intern_address)
PyObject* InitSites(PyObject*, PyObject* args) {
  unsigned long long begin = 0, end = 0, intern = 0;
  if (!PyArg_ParseTuple(args, "KKK", &begin, &end, &intern)) return nullptr;
  if (!begin || !end || !intern) {
    PyErr_SetString(PyExc_ValueError, "init_sites: null entry point");
    return nullptr;
  }
  g_site_begin = reinterpret_cast<SiteBeginFn>(static_cast<uintptr_t>(begin));
  g_site_end = reinterpret_cast<SiteEndFn>(static_cast<uintptr_t>(end));
  g_intern = reinterpret_cast<InternFn>(static_cast<uintptr_t>(intern));
  if (!g_sites) g_sites = new std::unordered_map<PyObject*, CodeSites>();  // lives as long as the process
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

// set_root_raised(address): strata_torch_root_raised, called when a root
// forward raises.
PyObject* SetRootRaised(PyObject*, PyObject* arg) {
  unsigned long long addr = PyLong_AsUnsignedLongLong(arg);
  if (PyErr_Occurred()) return nullptr;
  g_root_raised = reinterpret_cast<RaisedFn>(static_cast<uintptr_t>(addr));
  Py_RETURN_NONE;
}

// set_root_batch(address, batch_of): strata_torch_root_batch, called with the
// batch batch_of(output, in_batch) gives for a root forward as it returns
// (where the inputs gave none, or the output's rows are the samples).
PyObject* SetRootBatch(PyObject*, PyObject* args) {
  unsigned long long addr = 0;
  PyObject* fn = nullptr;
  if (!PyArg_ParseTuple(args, "KO", &addr, &fn)) return nullptr;
  if (!addr || !PyCallable_Check(fn)) {
    PyErr_SetString(PyExc_ValueError, "set_root_batch: null entry point or a callback that is not callable");
    return nullptr;
  }
  g_root_batch = reinterpret_cast<RootBatchFn>(static_cast<uintptr_t>(addr));
  Py_XSETREF(g_batch_of, Py_NewRef(fn));
  Py_RETURN_NONE;
}

// set_root_end(callable or None): called with the module after each root
// forward that returns.
PyObject* SetRootEnd(PyObject*, PyObject* fn) {
  if (fn != Py_None && !PyCallable_Check(fn)) {
    PyErr_SetString(PyExc_TypeError, "set_root_end: not callable");
    return nullptr;
  }
  Py_XSETREF(g_root_end, fn == Py_None ? nullptr : Py_NewRef(fn));
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
    {"wrap_call", WrapCall, METH_O, "wrap_call(nn.Module.__call__): the same, with a scope around each module's forward"},
    {"depth", Depth, METH_NOARGS, "depth of the calling thread's module stack"},
    {"set_root_end", SetRootEnd, METH_O, "set_root_end(f or None): f(module) after each root forward that returns"},
    {"set_root_raised", SetRootRaised, METH_O, "set_root_raised(address): called when a root forward raises"},
    {"set_root_batch", SetRootBatch, METH_VARARGS,
     "set_root_batch(address, batch_of): a root forward's batch from its output where its inputs do not give it"},
    {"wrap_site", WrapSite, METH_O, "wrap_site(f): f, telling strata the caller's file:line around each call"},
    {"init_sites", InitSites, METH_VARARGS, "init_sites(site_begin_address, site_end_address, intern_address)"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "_strata_torch_hooks", "strata's nn.Module scope hooks", -1, kMethods,
                       nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__strata_torch_hooks() { return PyModule_Create(&kModule); }
