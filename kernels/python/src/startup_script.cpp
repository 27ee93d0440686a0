#include "startup_script.hpp"

namespace sandgate::python_kernel {

const char* const startup_script = R"python(
import atexit
import base64
import importlib
import importlib.util
import os
import shutil
import sys
import tempfile


def _fix_error_names(shell):
    # xeus_python_shell stores str(etype) ("<class 'ZeroDivisionError'>").
    def _showtraceback(etype, evalue, stb):
        name = getattr(etype, "__name__", None) or str(etype)
        shell.last_error = [name, str(evalue), stb]

    shell._showtraceback = _showtraceback


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


def setup(shell, preload_modules):
    _fix_error_names(shell)
    _configure_matplotlib_env()
    _register_figure_formatter(shell)
    shell.events.register("post_run_cell", _flush_open_figures)
    for name in preload_modules:
        try:
            importlib.import_module(name)
        except Exception as error:  # a missing module must not kill the kernel
            print(f"sandgate-python: --preload {name}: {error!r}", file=sys.__stderr__)
)python";

}  // namespace sandgate::python_kernel
