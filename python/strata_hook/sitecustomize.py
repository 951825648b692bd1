"""strata's Python start-up hook, put first on PYTHONPATH by `strata record`.

It changes nothing in the program. It only arranges that when the program imports
torch, strata's PyTorch observer attaches right after torch finished importing
(strata._torch.attach), and then runs the sitecustomize module that this one
shadows, if there is one, exactly as Python would have.
"""
import os
import sys


def _strata_install():
    import importlib.abc
    import importlib.util

    class _TorchImportHook(importlib.abc.MetaPathFinder):
        """Finds nothing itself: wraps torch's own loader so that attach() runs
        once torch's module has executed."""

        def __init__(self):
            self._busy = False

        def find_spec(self, fullname, path=None, target=None):
            if fullname != "torch" or self._busy:
                return None
            self._busy = True
            try:
                spec = importlib.util.find_spec("torch")
            except Exception:
                spec = None
            finally:
                self._busy = False
            if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
                return None
            real_exec = spec.loader.exec_module

            def exec_module(module, _real=real_exec):
                try:
                    _real(module)
                except BaseException as e:
                    _strata_torch_failed(e)
                    raise
                _strata_torch_loaded(module)

            # An instance attribute: the loader object belongs to this spec only.
            spec.loader.exec_module = exec_module
            try:
                sys.meta_path.remove(self)
            except ValueError:
                pass
            return spec

    sys.meta_path.insert(0, _TorchImportHook())


def _strata_torch_loaded(torch_module):
    try:
        from strata import _torch
        _torch.attach(torch_module)
    except Exception as e:  # never break the program
        try:
            from strata import _report_collector
            _report_collector("pytorch", "error", "the observer failed to attach: %s: %s" % (type(e).__name__, e))
        except Exception:
            pass


def _strata_torch_failed(exc):
    try:
        from strata import _report_collector
        _report_collector("pytorch", "unavailable", "the program's 'import torch' failed: %s: %s" % (type(exc).__name__, exc))
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
