// Python run once at kernel start: kernel-side comms that work.
#pragma once

namespace sandgate::python_kernel {

// Source of a module defining install_comms(shell, flush_output), which puts
// a Comm and a CommManager in place of xeus-python's as `ipykernel.comm` (and
// `comm`, when no such package is installed), on top of xeus-python's own
// comm objects:
//  - a comm opened to a target the kernel never registered no longer crashes
//    the kernel (xeus-python 0.14.3 dereferences a null target): every target
//    opened is known to xeus, with a handler that does nothing unless the
//    cell registered one;
//  - an open comm stays open until either side closes it, as in ipykernel
//    (xeus-python's went away with its last Python reference, so a comm the
//    frontend opened died as its handler returned);
//  - a callback that raises prints its traceback and leaves the kernel up;
//  - stream text a cell printed before a comm message goes out first.
extern const char* const comms_script;

}  // namespace sandgate::python_kernel
