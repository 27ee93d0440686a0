#include "startup_script.hpp"

namespace sandgate::python_kernel {

const char* const startup_script = R"python(
import atexit
import base64
import importlib
import importlib.util
import io
import os
import shutil
import sys
import tempfile
import threading


def _fix_error_names(shell):
    # xeus_python_shell stores str(etype) ("<class 'ZeroDivisionError'>").
    def _showtraceback(etype, evalue, stb):
        name = getattr(etype, "__name__", None) or str(etype)
        shell.last_error = [name, str(evalue), stb]

    shell._showtraceback = _showtraceback


class _LineStream:
    """Groups xeus-python's per-write stream messages into whole lines.

    print("a", "b") made four messages (one per write); here text is sent when
    a write ends a line ("\n" or "\r"), when 64 KiB are pending, on flush(),
    before any display and at the end of the cell. Partial lines wait for one
    of those.
    """

    max_pending = 64 * 1024
    encoding = "utf-8"
    errors = "replace"

    def __init__(self, raw, name):
        self._raw = raw
        self._pending = []
        self._size = 0
        self._lock = threading.RLock()
        self.name = name

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        with self._lock:
            self._pending.append(text)
            self._size += len(text)
            if self._size >= self.max_pending or "\n" in text or "\r" in text:
                self._send()
        return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        with self._lock:
            self._send()
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
    streams = []
    for name in ("stdout", "stderr"):
        raw = getattr(sys, name)
        if raw is None or isinstance(raw, _LineStream):
            continue
        stream = _LineStream(raw, f"<{name}>")
        setattr(sys, name, stream)
        streams.append(stream)

    def flush_all(*_args):
        for stream in streams:
            stream.flush()

    publisher = shell.display_pub
    publish = publisher.publish

    def publish_after_pending_output(*args, **kwargs):
        flush_all()
        return publish(*args, **kwargs)

    publisher.publish = publish_after_pending_output
    return flush_all


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
