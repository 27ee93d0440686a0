#include "startup_script.hpp"

namespace sandgate::python_kernel {

const char* const startup_script = R"python(
import atexit
import base64
import builtins
import getpass
import importlib
import importlib.util
import io
import os
import shutil
import sys
import tempfile
import threading
import time


def _fix_error_names(shell):
    # xeus_python_shell stores str(etype) ("<class 'ZeroDivisionError'>").
    def _showtraceback(etype, evalue, stb):
        name = getattr(etype, "__name__", None) or str(etype)
        shell.last_error = [name, str(evalue), stb]

    shell._showtraceback = _showtraceback


class _OutputGroup:
    """What stdout and stderr share: their order, and the flusher thread.

    Lines are held for up to `interval` seconds and sent together, as
    ipykernel does: a loop of print() made one message per line, each with
    its header, signature and trip through the gateway, where a few
    messages carry the same text. Text still waits at most `interval`, and
    goes at once before anything else the cell shows (a display, its result,
    an input prompt, a write to the other stream) and at its end.
    """

    interval = 0.05

    def __init__(self):
        self.streams = []
        self.lock = threading.RLock()  # one for both streams: their order is kept
        self._wake = threading.Condition(self.lock)
        self._due = None
        self._thread = None

    def flush_all(self, *_args):
        with self.lock:
            for stream in self.streams:
                stream._send()

    def before_write(self, stream):
        # The other stream's text was written first: it goes first.
        for other in self.streams:
            if other is not stream and other._pending:
                other._send()

    def schedule(self):
        if self._due is not None:
            return
        self._due = time.monotonic() + self.interval
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="sandgate-output", daemon=True)
            self._thread.start()
        self._wake.notify()

    def _run(self):
        with self.lock:
            while True:
                while self._due is None:
                    self._wake.wait()
                left = self._due - time.monotonic()
                if left > 0:
                    self._wake.wait(left)
                    continue
                self._due = None
                self.flush_all()


class _LineStream:
    """stdout or stderr of the kernel, on top of xeus-python's stream.

    xeus-python sends a message per write (print("a", "b") made four). Here
    text is sent in whole lines, several together (see _OutputGroup): when
    64 KiB are pending, on flush(), when the group's interval has passed, and
    before anything else the cell shows.
    """

    max_pending = 64 * 1024
    encoding = "utf-8"
    errors = "replace"

    def __init__(self, raw, name, group):
        self._raw = raw
        self._pending = []
        self._size = 0
        self._group = group
        self.name = name

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        with self._group.lock:
            self._group.before_write(self)
            self._pending.append(text)
            self._size += len(text)
            if self._size >= self.max_pending:
                self._send()
            else:
                self._group.schedule()
        return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        self._group.flush_all()
        self._raw.flush()

    def _send(self):
        if self._pending:
            text = "".join(self._pending)
            self._pending.clear()
            self._size = 0
            self._raw.write(text)

    def isatty(self):
        return False

    def fileno(self):
        # Like ipykernel's streams: there is no file descriptor behind it.
        raise io.UnsupportedOperation("fileno")

    @property
    def closed(self):
        return False

    def writable(self):
        return True

    def readable(self):
        return False


def _group_output_lines(shell):
    group = _OutputGroup()
    for name in ("stdout", "stderr"):
        raw = getattr(sys, name)
        if raw is None or isinstance(raw, _LineStream):
            continue
        stream = _LineStream(raw, f"<{name}>", group)
        setattr(sys, name, stream)
        group.streams.append(stream)

    publisher = shell.display_pub
    publish = publisher.publish

    def publish_after_pending_output(*args, **kwargs):
        group.flush_all()
        return publish(*args, **kwargs)

    publisher.publish = publish_after_pending_output

    def prompt_after_pending_output(*_args):
        # xeus-python puts its own input() and getpass() in place for each
        # request; what the cell printed before asking must show first.
        for owner, name in ((builtins, "input"), (getpass, "getpass")):
            ask = getattr(owner, name)
            if getattr(ask, "_sandgate_flushes", False):
                continue

            def asking(*args, _ask=ask, **kwargs):
                group.flush_all()
                return _ask(*args, **kwargs)

            asking._sandgate_flushes = True
            setattr(owner, name, asking)

    shell.events.register("pre_run_cell", prompt_after_pending_output)
    return group.flush_all


def _writable_dir(path):
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return False
    return os.access(path, os.W_OK | os.X_OK)


def _configure_matplotlib_env():
    if not os.environ.get("MPLCONFIGDIR"):
        base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
        if not _writable_dir(os.path.join(base, "matplotlib")):
            path = tempfile.mkdtemp(prefix="sandgate-matplotlib-")
            atexit.register(shutil.rmtree, path, ignore_errors=True)
            os.environ["MPLCONFIGDIR"] = path
    # Agg means "no GUI"; in a kernel the inline backend is that too (it draws
    # with Agg) and also makes plt.show() display instead of warning.
    backend = os.environ.get("MPLBACKEND", "")
    if not backend or backend.lower() == "agg":
        if importlib.util.find_spec("matplotlib_inline") is not None:
            os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
        else:
            os.environ["MPLBACKEND"] = "Agg"


def _figure_png(fig):
    from IPython.core.pylabtools import print_figure

    return print_figure(fig, "png", bbox_inches="tight")


def _register_figure_formatter(shell):
    # By name, so matplotlib is not imported until the user imports it.
    png = shell.display_formatter.formatters["image/png"]
    png.for_type_by_name("matplotlib.figure", "Figure", _figure_png)


def _flush_open_figures(*_args):
    # Safety net after the inline backend's own flush: any figure still open at
    # the end of a cell (Agg backend, figures made without pyplot's hooks) is
    # shown once as PNG and closed, like ipykernel's inline backend.
    if "matplotlib.pyplot" not in sys.modules:
        return
    from matplotlib._pylab_helpers import Gcf
    from IPython.display import display

    managers = Gcf.get_all_fig_managers()
    if not managers:
        return
    plt = sys.modules["matplotlib.pyplot"]
    try:
        for manager in managers:
            fig = manager.canvas.figure
            data = _figure_png(fig)
            if data:
                display({"image/png": base64.b64encode(data).decode("ascii"),
                         "text/plain": repr(fig)}, raw=True)
    finally:
        plt.close("all")


def _history_in_memory(shell):
    # The history database is in memory (see python_interpreter.cpp): write
    # each cell to it as it ends, as IPython's saving thread does for a file,
    # so %history and its searches see the whole session and nothing queues.
    history = shell.history_manager
    if str(history.hist_file) != ":memory:":
        return

    def write_out(result=None):
        history.writeout_cache()

    shell.events.register("post_run_cell", write_out)


def setup(shell, preload_modules):
    _fix_error_names(shell)
    _history_in_memory(shell)
    flush_output = _group_output_lines(shell)
    install_comms(shell, flush_output)  # comms_script.cpp, run in this module
    _configure_matplotlib_env()
    _register_figure_formatter(shell)
    shell.events.register("post_run_cell", _flush_open_figures)
    shell.events.register("post_run_cell", flush_output)
    for name in preload_modules:
        try:
            importlib.import_module(name)
        except Exception as error:  # a missing module must not kill the kernel
            print(f"sandgate-python: --preload {name}: {error!r}", file=sys.__stderr__)
)python";

}  // namespace sandgate::python_kernel
