// Modules a kernel does not need before its first cell, imported on first use.
#pragma once

#include <pybind11/pybind11.h>

namespace sandgate::python_kernel {

// xeus-python's shell imports IPython, and IPython imports at start what
// only a terminal or a completion uses: IPython.embed (the terminal shell,
// prompt_toolkit) and jedi (IPython's completer). Together about 40% of the
// kernel's start-up CPU and a third of its modules.
//
// defer() runs before anything imports IPython (GIL held): it keeps those two
// imports from happening. restore() runs once the IPython shell exists,
// before any user code: it puts everything back the way an eager import
// leaves it, each module imported when first touched:
//  - IPython.embed is IPython.terminal.embed.embed, resolved on first access;
//  - `import jedi` (anyone's) and IPython's completer get jedi, loaded on
//    first attribute access with IPython's settings applied; the completer
//    uses jedi as it would have (use_jedi, JEDI_INSTALLED).
// A module already imported, or not installed, is left alone.
class deferred_imports {
 public:
  deferred_imports();                    // defers; GIL held
  void restore(pybind11::handle shell);  // GIL held; once; a failure is logged to stderr

 private:
  pybind11::object state_;  // what defer() changed, for restore()
};

}  // namespace sandgate::python_kernel
