"""strata's PyTorch support: attaches the observer (libstrata_torch) to a traced
process and adds what only Python sees.

`strata record` calls attach() from its import hook right after the program
imported torch; nothing here is needed in user code. The observer records ops,
memory and steps from C++ (RecordFunction callbacks, the allocator's memory
reporting); this module adds:
  - module scopes: every module's forward gets a slice named by its attribute
    path and class ("Net.features.0 (Conv2d)"), from nn.Module.__call__
    replaced by a C one (PyTorch 1.x) or from global forward pre/post hooks
    (2.x, see _install_module_hooks); both are in C (_strata_torch_hooks,
    built next to the observer for the Python Debian's torch is for); the
    hooks are also in Python below, for another Python (or with
    STRATA_TORCH_MODULES_VIA=python set in the program);
  - the batch size of a step: the leading dimension of the root module's first
    input;
  - the graph of each TorchScript module when it first runs;
  - spans around torch.autograd.backward (while no optimizer has stepped: a
    loop that updates its parameters by hand is stepped by its backward passes)
    and torch.save (a checkpoint written in the loop is a finding of its own).
If the observer cannot be loaded, the program runs unchanged and the trace says
why the PyTorch level is missing.
"""
import ctypes
import functools
import json
import os
import sys
import threading
import weakref

from strata import _loop_head

_lib = None
_torch = None
_tls = threading.local()
_names = {}  # id(module) -> (weakref to module, interned name id, scope name, is a ScriptModule, path)
_graphs = set()
_roots = {}  # class name -> weak references to the root modules of that class seen

_ROOT = 1
_TRAINING = 2
# A training forward of a root module that ran again with no backward pass
# since its last one (the importer counts its batch once with the one before:
# two views of the same images, a decoder called once per time step).
_AGAIN = 8


def _report(state, detail):
    from strata import _report_collector
    _report_collector("pytorch", state, detail)


def _loaded_libtorch():
    """Real path of the libtorch_cpu mapped into this process, or None."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6 and "libtorch_cpu" in parts[5]:
                    return os.path.realpath(parts[5].strip())
    except OSError:
        pass
    return None


def attached():
    """True when the observer records this process."""
    return _lib is not None


def attach(torch):
    """Loads and starts the observer for this process (idempotent)."""
    global _lib, _torch
    if _lib is not None:
        return True
    if not os.environ.get("STRATA_TRACE_DIR"):
        return False
    path = os.environ.get("STRATA_TORCH_LIB", "")
    if not path or not os.path.exists(path):
        _report("unavailable", "strata was built without its PyTorch observer (libtorch-dev was not found "
                "when strata was built)")
        return False
    info = {}
    try:
        with open(os.path.splitext(path)[0] + ".json") as f:
            info = json.load(f)
    except (OSError, ValueError):
        pass
    want = info.get("libtorch_cpu")
    have = _loaded_libtorch()
    if want and have and os.path.realpath(want) != have:
        # Loading the observer would load a second libtorch into the process.
        _report("unavailable", "the program uses torch %s (%s), but strata's observer was built against libtorch %s "
                "(%s); rebuild strata against the program's libtorch" %
                (getattr(torch, "__version__", "?"), have, info.get("torch_version", "?"), want))
        return False
    try:
        # Calls keep the GIL (ctypes.PyDLL, as strata's own in strata/__init__.py):
        # each marks an event, and a release per call would let another Python
        # thread of the program hold the interpreter for its switch interval.
        # Starting the observer goes through a handle that releases it.
        lib = ctypes.PyDLL(path)
        starter = ctypes.CDLL(path)
    except OSError as e:
        _report("unavailable", "cannot load %s: %s" % (path, e))
        return False
    lib.strata_torch_start.argtypes = [ctypes.c_char_p]
    lib.strata_torch_start.restype = ctypes.c_int
    lib.strata_torch_intern.argtypes = [ctypes.c_char_p]
    lib.strata_torch_intern.restype = ctypes.c_uint32
    lib.strata_torch_module_begin.argtypes = [ctypes.c_uint32, ctypes.c_uint32, ctypes.c_int64]
    lib.strata_torch_module_begin.restype = None
    if hasattr(lib, "strata_torch_root_batch"):
        lib.strata_torch_root_batch.argtypes = [ctypes.c_uint32, ctypes.c_int64]
        lib.strata_torch_root_batch.restype = None
    lib.strata_torch_module_end.argtypes = [ctypes.c_uint32]
    lib.strata_torch_module_end.restype = None
    if hasattr(lib, "strata_torch_root_raised"):
        lib.strata_torch_root_raised.argtypes = []
        lib.strata_torch_root_raised.restype = None
    lib.strata_torch_graph.argtypes = [ctypes.c_uint32, ctypes.c_char_p, ctypes.c_char_p]
    lib.strata_torch_graph.restype = None
    lib.strata_torch_step_samples.argtypes = [ctypes.c_int64]
    lib.strata_torch_step_samples.restype = None
    if hasattr(lib, "strata_torch_optimizer_step"):
        lib.strata_torch_optimizer_step.argtypes = [ctypes.c_uint32]
        lib.strata_torch_optimizer_step.restype = None
    lib.strata_torch_release_profiler_slot.restype = ctypes.c_int
    lib.strata_torch_reclaim_profiler_slot.restype = None
    starter.strata_torch_start.argtypes = [ctypes.c_char_p]
    starter.strata_torch_start.restype = ctypes.c_int
    if starter.strata_torch_start(b"python") != 0:
        return False  # the observer said why
    _lib = lib
    _torch = torch
    if os.environ.get("STRATA_TORCH_MODULES", "1") != "0":
        _install_module_hooks(torch)
    if os.environ.get("STRATA_TORCH_SITES", "1") != "0":
        _install_sites(torch)
    _make_way_for_profilers(torch)
    _mark_optimizer_steps(torch)
    _mark_backward(torch)
    _mark_saves(torch)
    _mark_point_to_point(torch)
    return True


def step_samples(n):
    """The current step processes `n` samples (used by strata.step(samples=n))."""
    if _lib is not None and n:
        _lib.strata_torch_step_samples(int(n))


# --- optimizer steps ---------------------------------------------------------------
# Which optimizer object each step() belongs to: with several optimizers per
# iteration (a GAN's generator and discriminator, both Adam), the observer's
# "Optimizer.step#Adam.step" scopes look alike, and one iteration would count as
# two steps. PyTorch 2.x has a global pre-hook for every optimizer's step; 1.x
# wraps each optimizer class's step once (Optimizer._hook_for_profile), and the
# mark is added around that wrapper. Never raises into the program.

_optimizers = {}  # id(optimizer) -> number, in the order they first step
_loop_head_on = False  # the observer takes loop heads (_loop_head.py)


def _optimizer_step(opt, *unused):
    try:
        n = _optimizers.get(id(opt))
        if n is None:
            n = _optimizers[id(opt)] = len(_optimizers)
        _lib.strata_torch_optimizer_step(n)
    except Exception:
        pass


def _root_end(module):
    """A root module's forward returned. In an inference loop (no optimizer
    has stepped; no gradients or the model in eval mode) the loop's next
    iteration is looked for as after an optimizer step: steps found from the
    forwards then end at the loop's head, not at the forward's end."""
    if _loop_head_on and not _optimizers:
        try:
            if not module.training or not _torch.is_grad_enabled():
                _loop_head.arm(_lib.strata_torch_loop_head)
        except Exception:
            pass


def _optimizer_step_done(*unused):
    if _loop_head_on:
        try:
            _loop_head.arm(_lib.strata_torch_loop_head)
        except Exception:
            pass


def _look_like(wrapper, real, attrs):
    """Copies the attributes `real` has among `attrs` onto `wrapper`."""
    for a in attrs:
        if hasattr(real, a):
            try:
                setattr(wrapper, a, getattr(real, a))
            except (AttributeError, TypeError):
                pass


def _mark_optimizer_steps(torch):
    global _loop_head_on
    if not hasattr(_lib, "strata_torch_optimizer_step"):
        return
    try:
        import importlib
        if hasattr(_lib, "strata_torch_loop_head") and os.environ.get("STRATA_TORCH_LOOP_HEAD", "1") != "0":
            _lib.strata_torch_loop_head.argtypes = [ctypes.c_uint32]
            _lib.strata_torch_loop_head.restype = None
            _loop_head.skip_dir(os.path.dirname(os.path.abspath(torch.__file__)))
            _loop_head_on = True
        optim = importlib.import_module("torch.optim.optimizer")
        if hasattr(optim, "register_optimizer_step_pre_hook"):
            optim.register_optimizer_step_pre_hook(_optimizer_step)
            if hasattr(optim, "register_optimizer_step_post_hook"):
                optim.register_optimizer_step_post_hook(_optimizer_step_done)
            return
        base = torch.optim.Optimizer
        real_hook = getattr(base, "_hook_for_profile", None)
        if real_hook is None or getattr(real_hook, "_strata_wrapped", False):
            return

        def hook_for_profile(self, *a, **kw):
            out = real_hook(self, *a, **kw)
            cls = self.__class__
            step = cls.__dict__.get("step")
            if step is not None and not getattr(step, "_strata_marked", False):
                def marked(opt, *args, **kwargs):
                    _optimizer_step(opt)
                    out = step(opt, *args, **kwargs)
                    _optimizer_step_done()
                    return out
                _look_like(marked, step, ("hooked", "__doc__", "__name__", "__qualname__", "__wrapped__"))
                marked._strata_marked = True
                cls.step = marked
            return out

        hook_for_profile._strata_wrapped = True
        base._hook_for_profile = hook_for_profile
    except Exception:
        pass


# --- backward passes without an optimizer, checkpoints ---------------------------------
# A loop that updates its parameters by hand (raw tensors, `p -= lr * p.grad`
# under no_grad) steps no optimizer: its iterations are its backward passes.
# While no optimizer has stepped, each torch.autograd.backward call (which
# Tensor.backward calls) is a span "torch.autograd.backward", and the loop's
# head after it is looked for as after an optimizer step; once an optimizer
# steps, the call goes straight through. torch.save is a span "torch.save" (a
# checkpoint written in the loop is a cause of its own: the analysis names it
# and replays the step without it). Never raises into the program; the calls
# themselves are unchanged.

def _span_around(owner, attr, name, when=None, after=None, before=None):
    """Replaces owner.attr by a wrapper that calls `before()` (if given), runs
    it inside a span `name` (when `when()` is true, if given), then calls
    `after()`."""
    try:
        import strata
        lib = strata._lib
        real = getattr(owner, attr, None)
        if lib is None or real is None or getattr(real, "_strata_marked", False):
            return
        sid = strata._intern(name)
        if not sid:
            return

        def wrapper(*args, **kwargs):
            if before is not None:
                before()
            if when is not None and not when():
                return real(*args, **kwargs)
            lib.strata_span_begin_(sid)
            try:
                return real(*args, **kwargs)
            finally:
                lib.strata_span_end_()
                if after is not None:
                    after()

        _look_like(wrapper, real, ("__doc__", "__name__", "__qualname__", "__module__"))
        wrapper.__wrapped__ = real
        wrapper._strata_marked = True
        setattr(owner, attr, wrapper)
    except Exception:
        pass


def _no_optimizer_yet():
    return not _optimizers


def _arm_loop_head():
    if _loop_head_on and not _optimizers:
        try:
            _loop_head.arm(_lib.strata_torch_loop_head)
        except Exception:
            pass


def _mark_backward(torch):
    _span_around(torch.autograd, "backward", "torch.autograd.backward", _no_optimizer_yet, _arm_loop_head,
                 _count_backward)


def _mark_saves(torch):
    _span_around(torch, "save", "torch.save")


# --- point-to-point peers -------------------------------------------------------
# torch.distributed's send/recv/isend/irecv as spans ("torch.distributed.send")
# whose argument is the peer's global rank (2**63 when any source): a backend's
# send and recv works do not say their peer, and `strata merge` pairs each
# rank's n-th send to a peer with that peer's n-th receive from it, which
# bounds the two hosts' clocks to the one-way latency. Never raises into the
# program; the call itself is unchanged.

_ANY_PEER = 1 << 63


def _mark_point_to_point(torch):
    try:
        import strata
        dist = torch.distributed
        if not dist.is_available() or strata._lib is None:
            return
        c10d = dist.distributed_c10d
        begin, end = strata._lib.strata_span_begin_arg_, strata._lib.strata_span_end_
        for fname, peer_arg in (("send", "dst"), ("isend", "dst"), ("recv", "src"), ("irecv", "src")):
            real = getattr(c10d, fname, None)
            if real is None or getattr(real, "_strata_marked", False):
                continue
            name_id = strata._intern("torch.distributed." + fname)
            if not name_id:
                continue

            def marked(*args, _real=real, _name=name_id, _peer_arg=peer_arg, **kwargs):
                peer = kwargs.get(_peer_arg, args[1] if len(args) > 1 else None)
                try:
                    peer = _ANY_PEER if peer is None else int(peer)
                    if peer < 0:
                        peer = _ANY_PEER
                    begin(_name, peer)
                except Exception:
                    return _real(*args, **kwargs)
                try:
                    return _real(*args, **kwargs)
                finally:
                    end()

            functools.update_wrapper(marked, real)  # its name, doc, module; __wrapped__
            marked._strata_marked = True
            setattr(c10d, fname, marked)
            if getattr(dist, fname, None) is real:
                setattr(dist, fname, marked)
    except Exception:
        pass


# --- module scopes ---------------------------------------------------------------


def _intern(name):
    return _lib.strata_torch_intern(name.encode("utf-8", "replace"))


def _qualified_name(module, parent):
    """(path, name): the module's attribute path from the root module ("Net.blocks.0"),
    and its scope's name, the path and the class ("Net.blocks.0 (Block)"; the root: "Net")."""
    cls = type(module).__name__
    if parent is None:
        # Several root models of one class alive together (a GAN's generator and
        # discriminator, both Sequential) are told apart: "Sequential", "Sequential#2".
        import weakref
        alive = [r for r in _roots.get(cls, []) if r() is not None and r() is not module]
        try:
            _roots[cls] = alive + [weakref.ref(module)]
        except TypeError:
            pass
        name = cls if not alive else "%s#%d" % (cls, len(alive) + 1)
        return name, name
    pent = _names.get(id(parent))
    ppath = pent[4] if pent is not None else type(parent).__name__
    for attr, child in getattr(parent, "_modules", {}).items():
        if child is module:
            path = "%s.%s" % (ppath, attr)
            return path, "%s (%s)" % (path, cls)
    path = "%s.<%s>" % (ppath, cls)
    return path, path


def _entry(module, parent):
    import weakref
    path, name = _qualified_name(module, parent)
    try:
        ref = weakref.ref(module)
    except TypeError:
        ref = lambda: module  # noqa: E731 (modules are weak-referenceable; be safe)
    # (whether it is a ScriptModule, decided once: isinstance cost 0.2 us per call)
    ent = (ref, _intern(name), name, isinstance(module, _torch.jit.ScriptModule), path)
    _names[id(module)] = ent
    return ent


def _batched(x):
    return isinstance(x, _torch.Tensor) and x.dim() > 0 and x.shape[0] > 0


def _first_batched(items):
    """The first tensor (not a scalar) among `items`, looking one level into
    dicts, lists and tuples (model(**batch), a dict of inputs, a (tokens,
    lengths) pair); None when there is none."""
    if not isinstance(items, (tuple, list)):
        items = (items,)
    for x in items:
        if _batched(x):
            return x
        if isinstance(x, dict):
            inner = x.values()
        elif isinstance(x, (list, tuple)):
            inner = x
        else:
            continue
        for v in inner:
            if _batched(v):
                return v
    return None


# Backward passes run so far (torch.autograd.backward calls), and, for each
# training module's last root forward, that count and its input tensor (a
# weak reference: the same object again is the same samples).
_backwards = 0
_backwards_at_forward = {}
_input_at_forward = {}


def _count_backward():
    global _backwards
    _backwards += 1


def _root_info(module, inputs):
    """Flags and batch size (-1: unknown) of a root module's forward. A forward
    trains when its module is in training mode and gradients are recorded: a
    policy acting under torch.no_grad() between updates (its module still in
    training mode) processes no training samples. The batch: the first
    tensor's leading dimension among the positional arguments (and, through
    the __call__ wrapper, the keyword ones)."""
    training = module.training and _torch.is_grad_enabled()
    flags = _ROOT | (_TRAINING if training else 0)
    x = _first_batched(inputs) if inputs else None
    if training:
        # The same samples again: no backward pass since the module's last
        # forward (two views, a decoder per time step), or the very same
        # input tensor (sharpness-aware minimization's second pass, after a
        # backward).
        key = id(module)
        last = _input_at_forward.get(key)
        if _backwards_at_forward.get(key) == _backwards or (x is not None and last is not None and last() is x):
            flags |= _AGAIN
        _backwards_at_forward[key] = _backwards
        try:
            _input_at_forward[key] = weakref.ref(x) if x is not None else None
        except TypeError:
            _input_at_forward[key] = None
    return flags, int(x.shape[0]) if x is not None else -1


def _output_batch(output, in_batch=-1):
    """A root forward's batch from its output, or -1 where its inputs' stands
    (`in_batch`: the first input tensor's leading dimension, -1 if none).

    Where the inputs gave none (keyword arguments, which PyTorch's global hooks
    do not see; strings tokenized inside the forward): the leading dimension of
    the output's first tensor. Where a batched output (2-D or more) has fewer
    rows than the first input, but more than one: the output's, for the inputs
    held the samples' parts (a batch of graphs given as all their nodes with an
    index of which graph each belongs to; point clouds as their points) and the
    output has a row per sample. (Not a 1-D output: a few losses stacked. Not
    one row: a recurrent network's hidden state first.)"""
    x = _first_batched(output)
    if x is None:
        return -1
    b = int(x.shape[0])
    if in_batch <= 0:
        return b
    return b if x.dim() >= 2 and 1 < b < in_batch else -1


# The batch a root forward's output gave replaces its inputs' (the importer
# drops the forward's first batch mark).
_REPLACES = 16


def _size_from_output(root, output):
    """A root forward's batch from its output where its inputs do not give it
    (_output_batch)."""
    if root is None or output is None or not hasattr(_lib, "strata_torch_root_batch"):
        return
    b = _output_batch(output, root[1])
    if b > 0:
        _lib.strata_torch_root_batch(root[0] | (_REPLACES if root[1] > 0 else 0), b)


# The hooks in C (_strata_torch_hooks, built next to the observer) call these
# the first time they see a module, once per root forward, and for
# ScriptModules.
def _entry_info(module, parent):
    ent = _entry(module, parent)
    return ent[1], ent[3]


def _script_graph(module):
    ent = _names.get(id(module))
    if ent is not None:
        _record_graph(module, ent[2])


# The same hooks in Python, for a Python the C ones were not built for.
def _pre_hook(module, inputs):
    stack = getattr(_tls, "stack", None)
    if stack is None:
        stack = _tls.stack = []
    ent = _names.get(id(module))
    if ent is None or ent[0]() is not module:
        ent = _entry(module, stack[-1][0] if stack else None)
    flags = 0
    batch = -1
    if not stack:
        flags, batch = _root_info(module, inputs)
        _tls.root = (flags, batch)
    if ent[3]:
        _record_graph(module, ent[2])
    stack.append((module, ent[1]))
    _lib.strata_torch_module_begin(ent[1], flags, batch)


def _post_hook(module, inputs, output):
    stack = getattr(_tls, "stack", None)
    if not stack or not any(m is module for m, _ in stack):
        return  # its pre hook recorded nothing
    # The root forward raised (PyTorch 2.x calls this hook from its exception
    # handler, with no output): it processed no samples.
    if (output is None and len(stack) == 1 and stack[0][0] is module and sys.exc_info()[0] is not None
            and hasattr(_lib, "strata_torch_root_raised")):
        _lib.strata_torch_root_raised()
    elif len(stack) == 1 and stack[0][0] is module:
        _size_from_output(getattr(_tls, "root", None), output)
    # Modules whose forward raised never saw this hook: close them too.
    while stack:
        m, nid = stack.pop()
        _lib.strata_torch_module_end(nid)
        if m is module:
            break
    if not stack:
        _root_end(module)


_hooks = None  # the C hooks' module, when they are in use


def _load_c_hooks():
    """The C hooks built for this Python, next to the observer; None if there are none."""
    import importlib.machinery
    import importlib.util
    libdir = os.path.dirname(os.environ.get("STRATA_TORCH_LIB", ""))
    if _modules_via() == "python" or not libdir:
        return None
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(libdir, "_strata_torch_hooks" + suffix)
        if not os.path.exists(path):
            continue
        try:
            loader = importlib.machinery.ExtensionFileLoader("_strata_torch_hooks", path)
            spec = importlib.util.spec_from_file_location("_strata_torch_hooks", path, loader=loader)
            mod = importlib.util.module_from_spec(spec)
            loader.exec_module(mod)
            addr = lambda f: ctypes.cast(f, ctypes.c_void_p).value  # noqa: E731
            mod.init(addr(_lib.strata_torch_module_begin), addr(_lib.strata_torch_module_end), _entry_info,
                     _root_info, _script_graph)
            if hasattr(mod, "set_root_end"):
                mod.set_root_end(_root_end)
            if hasattr(mod, "set_root_raised") and hasattr(_lib, "strata_torch_root_raised"):
                mod.set_root_raised(addr(_lib.strata_torch_root_raised))
            if hasattr(mod, "set_root_batch") and hasattr(_lib, "strata_torch_root_batch"):
                mod.set_root_batch(addr(_lib.strata_torch_root_batch), _output_batch)
            return mod
        except Exception:
            return None
    return None


_sites = []  # (owner, name) of the host-reading calls wrapped by _install_sites


def _install_sites(torch):
    """Wraps the calls that read a device's result on the host (each waits for
    the device) and those that copy between host and device: the C wrapper
    says where the program called them, so a sync or copy finding names the
    program's lines. Needs the C hooks; nothing otherwise."""
    hooks = _hooks if _hooks is not None else _load_c_hooks()
    if hooks is None or not hasattr(hooks, "wrap_site") or not hasattr(_lib, "strata_torch_site_begin"):
        return
    addr = lambda f: ctypes.cast(f, ctypes.c_void_p).value  # noqa: E731
    try:
        hooks.init_sites(addr(_lib.strata_torch_site_begin), addr(_lib.strata_torch_site_end),
                         addr(_lib.strata_torch_intern))
        # (.to() and .cpu() too: a copy between host and device, and a .cpu()
        # the host waits for, are named by the program's line as syncs are.)
        targets = [(torch.Tensor, "item"), (torch.Tensor, "tolist"), (torch.Tensor, "to"), (torch.Tensor, "cpu")]
        if hasattr(torch.Tensor, "cuda"):
            targets.append((torch.Tensor, "cuda"))
        if hasattr(torch, "cuda") and hasattr(torch.cuda, "synchronize"):
            targets.append((torch.cuda, "synchronize"))
        for owner, name in targets:
            setattr(owner, name, hooks.wrap_site(getattr(owner, name)))
            _sites.append((owner, name))
    except Exception:
        return


_modules = None  # how module scopes are taken: "call", "hooks" (C) or "python hooks"
_modules_off = None  # takes strata's module scopes out, while they are in


def _modules_via():
    """STRATA_TORCH_MODULES_VIA, set by tests and benchmarks in the program:
    "hooks" (the C hooks even where the C __call__ would do), "python" (the
    Python hooks); else the best available."""
    return os.environ.get("STRATA_TORCH_MODULES_VIA", "")


def _install_module_hooks(torch):
    """Module scopes: a C nn.Module.__call__ where nothing traces __call__ itself
    (no torch.compile: PyTorch 1.x), else global forward hooks (torch.compile
    knows those); the C ones, or the Python ones below."""
    global _hooks, _modules
    mm = torch.nn.modules.module
    _hooks = _load_c_hooks()
    if _hooks is not None and not hasattr(torch, "compile") and _modules_via() != "hooks":
        _modules = "call"
    elif hasattr(mm, "register_module_forward_pre_hook") and hasattr(mm, "register_module_forward_hook"):
        _modules = "hooks" if _hooks is not None else "python hooks"
    else:
        return
    _modules_on(torch, True)


def _put_module_scopes(torch, way):
    """Takes module scopes `way` ("call", "hooks" or "python hooks"); returns the
    function that takes them out again."""
    if way == "call":
        plain = torch.nn.Module.__call__
        torch.nn.Module.__call__ = _hooks.wrap_call(plain)

        def undo():
            torch.nn.Module.__call__ = plain
        return undo
    mm = torch.nn.modules.module
    pre, post = (_hooks.pre_hook, _hooks.post_hook) if way == "hooks" else (_pre_hook, _post_hook)
    # The post hook also when the forward raises (always_call, PyTorch 2.x):
    # torch.utils.checkpoint's non-reentrant recompute stops a block's forward
    # by raising once it has what the backward needs; without the hook that
    # scope stayed open, so the next iteration's model forward was no root
    # (no batch size, no step activity) for the rest of the run.
    try:
        post_handle = mm.register_module_forward_hook(post, always_call=True)
    except TypeError:  # a PyTorch without always_call
        post_handle = mm.register_module_forward_hook(post)
    handles = (mm.register_module_forward_pre_hook(pre), post_handle)

    def undo():
        for h in handles:
            h.remove()
    return undo


def _modules_on(torch, on):
    """Puts strata's module scopes in (on) or takes them out; benchmarks take
    them out to measure an untraced program in the same process."""
    global _modules_off
    if on and _modules_off is None and _modules is not None:
        _modules_off = _put_module_scopes(torch, _modules)
    elif not on and _modules_off is not None:
        _modules_off()
        _modules_off = None


# --- coexisting with PyTorch's profilers ----------------------------------------------
#
# The observer's allocator reporting occupies the thread's PROFILER_STATE slot,
# and PyTorch's profilers refuse to start on a thread where it is taken. Around
# each profiler start and stop, the slot is handed over and taken back.


def _wrap_start(cls, name):
    real = getattr(cls, name, None)
    if real is None or getattr(real, "_strata_wrapped", False):
        return

    def start(self, *a, **kw):
        released = _lib.strata_torch_release_profiler_slot()
        try:
            return real(self, *a, **kw)
        except BaseException:
            if released:
                _lib.strata_torch_reclaim_profiler_slot()
            raise

    start._strata_wrapped = True
    setattr(cls, name, start)


def _wrap_stop(cls, name):
    real = getattr(cls, name, None)
    if real is None or getattr(real, "_strata_wrapped", False):
        return

    def stop(self, *a, **kw):
        try:
            return real(self, *a, **kw)
        finally:
            _lib.strata_torch_reclaim_profiler_slot()

    stop._strata_wrapped = True
    setattr(cls, name, stop)


def _make_way_for_profilers(torch):
    import importlib
    # torch.profiler.profile drives torch.autograd.profiler.profile through
    # _start_trace() and __exit__(); the legacy profiler and emit_nvtx/emit_itt
    # through __enter__/__exit__.
    autograd_profiler = importlib.import_module("torch.autograd.profiler")
    prof = getattr(autograd_profiler, "profile", None)
    if prof is not None:
        _wrap_start(prof, "_start_trace" if hasattr(prof, "_start_trace") else "__enter__")
        _wrap_stop(prof, "__exit__")
    for modname, clsname in (("torch.autograd.profiler_legacy", "profile"), ("torch.autograd.profiler", "emit_nvtx"),
                             ("torch.autograd.profiler", "emit_itt")):
        try:
            cls = getattr(importlib.import_module(modname), clsname)
        except (ImportError, AttributeError):
            continue
        _wrap_start(cls, "__enter__")
        _wrap_stop(cls, "__exit__")


# --- TorchScript graphs --------------------------------------------------------------


def _record_graph(module, name):
    key = (name, type(module).__name__)
    if key in _graphs:
        return
    _graphs.add(key)
    try:
        graph = module.inlined_graph if hasattr(module, "inlined_graph") else module.graph
        nodes, edges = graph_encoding(graph)
    except Exception:
        return
    _lib.strata_torch_graph(_intern(name + " [TorchScript]"), nodes.encode("utf-8", "replace"),
                            edges.encode("utf-8", "replace"))


def graph_encoding(graph):
    """A TorchScript graph as (node kinds joined by newlines, "from>to" edges
    joined by spaces), constants left out."""
    producer = {}  # value id -> index of the node that outputs it
    kinds = []
    edges = []
    for node in graph.nodes():
        kind = node.kind()
        if kind == "prim::Constant":
            continue
        me = len(kinds)
        kinds.append(kind)
        for v in node.inputs():
            src = producer.get(v.unique())
            if src is not None:
                edges.append("%d>%d" % (src, me))
        for v in node.outputs():
            producer[v.unique()] = me
    return "\n".join(kinds), " ".join(edges)
