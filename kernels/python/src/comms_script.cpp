#include "comms_script.hpp"

namespace sandgate::python_kernel {

const char* const comms_script = R"python(
import importlib.util
import sys
import traceback
import types
import weakref

import _sandgate_comms  # comm_table.cpp


def _report(what):
    # A comm callback runs from the shell loop: what it raises is shown, the
    # kernel goes on (xeus-python would let it end the process).
    print(f"sandgate-python: exception in {what}:", file=sys.stderr)
    traceback.print_exc()


def _weak_call(method):
    # The xeus comm holds its handlers; a strong reference back to the Comm
    # would make a cycle through C++ that Python's collector cannot see.
    ref = weakref.WeakMethod(method)

    def call(*args):
        bound = ref()
        if bound is not None:
            bound(*args)

    return call


class _Registry:
    """The kernel's open comms and the targets known to xeus."""

    def __init__(self, core_class, core_manager, kernel, flush_output):
        self.core_class = core_class      # xeus-python's Comm
        self.core_manager = core_manager  # xeus-python's CommManager
        self.kernel = kernel
        self.flush_output = flush_output
        self.comms = {}     # comm_id -> Comm, open ones only
        self.handlers = {}  # target name -> callback, or None (known, no handler)
        self.retired = []   # xeus comms of closed Comms, dropped at a safe point

    def know_target(self, name):
        if name in self.handlers:
            return
        self.handlers[name] = None
        # Registered with xeus once per name; the handler is looked up when a
        # frontend opens a comm, so registering again only changes the table.
        self.core_manager.register_target(name, lambda core, msg, _name=name: self.opened(_name, core, msg))

    def opened(self, target_name, core, msg):
        self.drop_retired()
        comm = Comm(target_name=target_name, primary=False, _core=core)
        handler = self.handlers.get(target_name)
        if handler is not None and self.call(handler, f"the comm target {target_name!r}", comm, msg):
            return
        # As ipykernel: no handler, or one that failed, closes the comm.
        comm.close()

    def call(self, callback, what, *args):
        """Runs a comm callback; True unless it raised. What it printed goes
        out before the kernel reports idle for the frontend's message."""
        try:
            callback(*args)
            return True
        except Exception:
            _report(what)
            return False
        finally:
            self.flush_output()

    def retire(self, comm):
        self.comms.pop(comm.comm_id, None)
        # Out of xeus's table now (no message reaches it again); the xeus
        # object itself goes at the next safe point.
        _sandgate_comms.forget(comm.comm_id)
        if comm._core is not None:
            self.retired.append(comm._core)
            comm._core = None

    def drop_retired(self):
        # Not from the closed comm's own handler: xeus is still inside it.
        self.retired.clear()


_registry = None


class Comm:
    """A comm between the kernel and a frontend (ipykernel.comm.Comm's API)."""

    def __init__(self, target_name="comm", data=None, metadata=None, buffers=None, primary=True,
                 target_module=None, _core=None, **kwargs):
        self.target_name = target_name or "comm"
        self.target_module = target_module
        self.primary = primary
        self._msg_callback = None
        self._close_callback = None
        self._core = _core
        self._comm_id = None
        self._closed = True
        if _core is not None:
            self._attach()
        elif primary:
            self.open(data=data, metadata=metadata, buffers=buffers)

    @property
    def comm_id(self):
        return self._comm_id

    @property
    def kernel(self):
        return _registry.kernel

    def _attach(self):
        self._comm_id = self._core.comm_id
        self._closed = False
        self._core.on_msg(_weak_call(self._handle_msg))
        self._core.on_close(_weak_call(self._handle_close))
        _registry.comms[self._comm_id] = self

    def open(self, data=None, metadata=None, buffers=None):
        """Opens the comm: comm_open to the frontend's target."""
        if not self._closed:
            return
        _registry.drop_retired()
        _registry.know_target(self.target_name)
        _registry.flush_output()
        self._core = _registry.core_class(self.target_name, {} if data is None else data,
                                          {} if metadata is None else metadata, list(buffers or []))
        self._attach()

    def send(self, data=None, metadata=None, buffers=None):
        """comm_msg to the frontend; nothing once closed."""
        if self._closed:
            return
        _registry.flush_output()
        self._core.send({} if data is None else data, {} if metadata is None else metadata, list(buffers or []))

    def close(self, data=None, metadata=None, buffers=None, deleting=False):
        """comm_close to the frontend; the comm is gone on both sides."""
        if self._closed:
            return
        self._closed = True
        _registry.flush_output()
        self._core.close({} if data is None else data, {} if metadata is None else metadata, list(buffers or []))
        _registry.retire(self)

    def on_msg(self, callback):
        """callback(msg) for each comm_msg from the frontend (None: none)."""
        self._msg_callback = callback

    def on_close(self, callback):
        """callback(msg) when the frontend closes the comm (None: none)."""
        self._close_callback = callback

    def handle_msg(self, msg):
        self._handle_msg(msg)

    def handle_close(self, msg):
        self._handle_close(msg)

    def _handle_msg(self, msg):
        if self._msg_callback is not None:
            _registry.call(self._msg_callback, f"the message handler of comm {self._comm_id}", msg)

    def _handle_close(self, msg):
        # The frontend closed it: xeus forgets it as this returns.
        if self._closed:
            return
        self._closed = True
        _registry.retire(self)
        if self._close_callback is not None:
            _registry.call(self._close_callback, f"the close handler of comm {self._comm_id}", msg)


class CommManager:
    """Targets and open comms (ipykernel.comm.CommManager's API)."""

    def __init__(self, *args, **kwargs):
        pass

    @property
    def comms(self):
        return dict(_registry.comms)

    @property
    def targets(self):
        return {name: handler for name, handler in _registry.handlers.items() if handler is not None}

    def register_target(self, target_name, f):
        """f(comm, msg) is called when a frontend opens a comm to target_name."""
        if isinstance(f, str):
            module, _, name = f.rpartition(".")
            f = getattr(importlib.import_module(module), name)
        _registry.know_target(target_name)
        _registry.handlers[target_name] = f

    def unregister_target(self, target_name, f=None):
        """Frontends' comms to target_name are closed from now on."""
        handler = _registry.handlers.get(target_name)
        if target_name in _registry.handlers:
            _registry.handlers[target_name] = None  # xeus keeps knowing it
        return handler

    def register_comm(self, comm):
        if not comm._closed:
            _registry.comms[comm.comm_id] = comm
        return comm.comm_id

    def unregister_comm(self, comm):
        """Forgets the comm without a comm_close: no message reaches it again."""
        if not comm._closed:
            comm._closed = True
            _registry.retire(comm)

    def get_comm(self, comm_id):
        return _registry.comms.get(comm_id)


def install_comms(shell, flush_output):
    global _registry
    core_module = sys.modules.get("ipykernel.comm")
    kernel = getattr(shell, "kernel", None)
    if core_module is None or kernel is None:
        return
    _registry = _Registry(core_module.Comm, kernel.comm_manager, kernel, flush_output)
    manager = CommManager()

    module = types.ModuleType("ipykernel.comm")
    module.Comm = Comm
    module.CommManager = CommManager
    sys.modules["ipykernel.comm"] = module
    # What get_ipython().kernel.comm_manager gives: cells register targets there.
    kernel.comm_manager = manager

    # The `comm` package's API (ipywidgets 8 and others use it), when no such
    # package is installed.
    if "comm" not in sys.modules and importlib.util.find_spec("comm") is None:
        shim = types.ModuleType("comm")
        shim.create_comm = lambda *args, **kwargs: Comm(*args, **kwargs)
        shim.get_comm_manager = lambda: manager
        shim.BaseComm = Comm
        shim.CommManager = CommManager
        sys.modules["comm"] = shim
)python";

}  // namespace sandgate::python_kernel
