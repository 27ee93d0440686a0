#include "deferred_imports.hpp"

#include <iostream>

#include <pybind11/eval.h>

namespace py = pybind11;

namespace sandgate::python_kernel {
namespace {

const char* const script = R"python(
import importlib
import importlib.util
import sys
import types

_EMBED = "IPython.terminal.embed"


def _embed_until_restored(*args, **kwargs):
    return importlib.import_module(_EMBED).embed(*args, **kwargs)


def defer():
    state = {}
    if "IPython" not in sys.modules and _EMBED not in sys.modules:
        # IPython/__init__.py does `from .terminal.embed import embed`: give
        # it this stand-in, which imports the real module for anything else.
        stand_in = types.ModuleType(_EMBED)
        stand_in.embed = _embed_until_restored

        def __getattr__(name):
            if name.startswith("__"):
                raise AttributeError(name)
            if sys.modules.get(_EMBED) is stand_in:
                del sys.modules[_EMBED]
            return getattr(importlib.import_module(_EMBED), name)

        stand_in.__getattr__ = __getattr__
        sys.modules[_EMBED] = stand_in
        state["embed"] = stand_in
    if "jedi" not in sys.modules and importlib.util.find_spec("jedi") is not None:
        # IPython's completer does `try: import jedi`; None makes it fail.
        sys.modules["jedi"] = None
        state["jedi"] = True
    return state


class _ThenLoader:
    """The real loader, followed by then(module); hands the module back to
    the real loader once it ran. (Not an importlib.abc.Loader: importing
    importlib.abc costs more than the rest of this file.)"""

    def __init__(self, loader, then):
        self._loader = loader
        self._then = then

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        module.__spec__.loader = module.__loader__ = self._loader
        self._loader.exec_module(module)
        self._then(module)


def _lazy_module(name, then):
    # The importlib documentation's lazy import, plus then().
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        return None
    spec.loader = importlib.util.LazyLoader(_ThenLoader(spec.loader, then))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _as_ipython_configures_jedi(jedi):
    # IPython.core.completer's own lines after `import jedi`.
    jedi.settings.case_insensitive_completion = False
    importlib.import_module("jedi.api.helpers")
    importlib.import_module("jedi.api.classes")


def _restore_embed(stand_in):
    terminal = sys.modules.get("IPython.terminal")
    if terminal is not None and terminal.__dict__.get("embed") is stand_in:
        del terminal.embed
    ipython = sys.modules.get("IPython")
    if ipython is None or ipython.__dict__.get("embed") is not _embed_until_restored:
        return
    del ipython.embed

    def __getattr__(name):
        if name != "embed":
            raise AttributeError(f"module 'IPython' has no attribute {name!r}")
        embed = importlib.import_module(_EMBED).embed
        ipython.embed = embed
        ipython.__dict__.pop("__getattr__", None)
        return embed

    ipython.__getattr__ = __getattr__


def _restore_jedi(shell):
    completer = sys.modules.get("IPython.core.completer")
    if completer is None or completer.JEDI_INSTALLED:
        return
    jedi = sys.modules.get("jedi") or _lazy_module("jedi", _as_ipython_configures_jedi)
    if jedi is None:
        return
    completer.jedi = jedi
    completer.JEDI_INSTALLED = True
    # use_jedi's default is JEDI_INSTALLED, read when the class was made.
    completer.IPCompleter.class_traits()["use_jedi"].default_value = True
    instance = getattr(shell, "Completer", None)
    if instance is not None and "use_jedi" not in instance.config.get("IPCompleter", {}):
        instance.use_jedi = True


def restore(state, shell):
    # First what must not outlive the start even if the rest fails.
    if sys.modules.get(_EMBED, False) is state.get("embed"):
        del sys.modules[_EMBED]
    if "jedi" in state and sys.modules.get("jedi", False) is None:
        del sys.modules["jedi"]
    if "embed" in state:
        _restore_embed(state["embed"])
    if "jedi" in state:
        _restore_jedi(shell)
)python";

}  // namespace

deferred_imports::deferred_imports() {
  py::dict scope;
  scope["__name__"] = "sandgate_deferred_imports";
  scope["__builtins__"] = py::module_::import("builtins");
  py::exec(script, scope);
  state_ = py::make_tuple(scope["restore"], scope["defer"]());
}

void deferred_imports::restore(py::handle shell) {
  if (!state_) return;
  py::tuple state = state_;
  state_ = py::object();
  try {
    state[0](state[1], shell);
  } catch (const py::error_already_set& error) {
    // restore() takes the stand-in and the block out of sys.modules before
    // anything that could fail; what remains (IPython.embed, jedi in the
    // completer) is not worth a kernel that does not start.
    std::cerr << "sandgate-python: restoring deferred imports: " << error.what() << '\n';
  }
}

}  // namespace sandgate::python_kernel
