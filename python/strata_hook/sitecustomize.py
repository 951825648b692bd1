"""strata's Python start-up hook, put first on PYTHONPATH by `strata record`.

It changes nothing in the program. It only arranges that when the program imports
torch, strata's PyTorch observer attaches right after torch finished importing
(strata._torch.attach), and likewise strata's TensorFlow and Keras hooks after
tensorflow, keras or tf_keras (strata._tf, strata._keras), its JAX hooks after jax
(strata._jax) and its ONNX Runtime hooks after onnxruntime (strata._ort), and then runs the sitecustomize
module that this one shadows, if there is one, exactly as Python would have.
"""
import os
import sys


def _strata_install():
    import importlib.abc
    import importlib.util

    class _ImportHook(importlib.abc.MetaPathFinder):
        """Finds nothing itself: wraps the loader of each framework strata
        supports so that its attach function runs once the framework's module
        has executed (each once; the hook leaves when all have loaded)."""

        def __init__(self, on_load):
            self._on_load = dict(on_load)  # module name -> (loaded, failed)
            self._busy = False

        def find_spec(self, fullname, path=None, target=None):
            if fullname not in self._on_load or self._busy:
                return None
            self._busy = True
            try:
                spec = importlib.util.find_spec(fullname)
            except Exception:
                spec = None
            finally:
                self._busy = False
            if spec is None:
                _strata_not_installed(fullname)
                return None
            if spec.loader is None or not hasattr(spec.loader, "exec_module"):
                return None
            loaded, failed = self._on_load[fullname]
            real_exec = spec.loader.exec_module

            def exec_module(module, _real=real_exec):
                # (Done only once the module runs: a find_spec alone, such as
                # TensorFlow's check for keras, is no import.)
                self._on_load.pop(fullname, None)
                if not self._on_load:
                    try:
                        sys.meta_path.remove(self)
                    except ValueError:
                        pass
                try:
                    _real(module)
                except BaseException as e:
                    failed(fullname, e)
                    raise
                loaded(module)

            # An instance attribute: the loader object belongs to this spec only.
            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, _ImportHook({
        "torch": (_strata_torch_loaded, _strata_import_failed),
        "tensorflow": (_strata_tf_loaded, _strata_import_failed),
        "keras": (_strata_keras_loaded, _strata_import_failed),
        "tf_keras": (_strata_keras_loaded, _strata_import_failed),
        "jax": (_strata_jax_loaded, _strata_import_failed),
        "onnxruntime": (_strata_ort_loaded, _strata_import_failed),
    }))


_strata_missing = set()


def _strata_not_installed(name):
    # The program looked for a framework this Python does not have (an import
    # that will fail, or a check such as importlib.util.find_spec): the trace
    # says that level is missing, once.
    if name in _strata_missing:
        return
    _strata_missing.add(name)
    try:
        from strata import _report_collector
        _report_collector(_strata_collector_name(name), "unavailable",
                          "the program looked for %s, which is not installed for %s" % (name, sys.executable))
    except Exception:
        pass


def _strata_collector_error(collector, what, e):
    try:
        from strata import _report_collector
        _report_collector(collector, "error", "%s: %s: %s" % (what, type(e).__name__, e))
    except Exception:
        pass


def _strata_attacher(module_name, attach, collector, what="strata's hooks failed to attach"):
    """The callback that runs strata.<module_name>.<attach>(module) once the
    framework's module has executed; a failure is said, never raised."""
    def loaded(module):
        try:
            import importlib
            getattr(importlib.import_module("strata." + module_name), attach)(module)
        except Exception as e:  # never break the program
            _strata_collector_error(collector, what, e)
    return loaded


_strata_torch_loaded = _strata_attacher("_torch", "attach", "pytorch", "the observer failed to attach")
_strata_tf_loaded = _strata_attacher("_tf", "attach_tensorflow", "tensorflow")
_strata_keras_loaded = _strata_attacher("_keras", "attach_keras", "keras")
_strata_jax_loaded = _strata_attacher("_jax", "attach", "jax")
_strata_ort_loaded = _strata_attacher("_ort", "attach", "onnxruntime")


def _strata_collector_name(module_name):
    # The collector a framework's module reports as.
    return {"torch": "pytorch", "tf_keras": "keras"}.get(module_name, module_name)


def _strata_import_failed(name, exc):
    try:
        from strata import _report_collector
        _report_collector(_strata_collector_name(name), "unavailable", "the program's 'import %s' failed: %s: %s" % (name, type(exc).__name__, exc))
    except Exception:
        pass


def _strata_chain():
    # The sitecustomize we shadow (Debian ships one in /usr/lib/python3.X) runs too.
    import importlib.machinery
    import importlib.util
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        sys.stderr.write("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n%s: %s\n" % (type(e).__name__, e))


def _strata_privileged():
    # A setuid/setgid interpreter: the environment is a less privileged user's, so
    # nothing it names (the observer library to load) is used; libstrata itself
    # does not record such a process either.
    try:
        return os.getuid() != os.geteuid() or os.getgid() != os.getegid()
    except Exception:
        return True


if os.environ.get("STRATA_TRACE_DIR") and not _strata_privileged():
    try:
        _strata_install()
    except Exception:
        pass
_strata_chain()
