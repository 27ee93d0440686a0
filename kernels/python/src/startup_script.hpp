// Python run once at kernel start, before kernel_info is answered.
#pragma once

namespace sandgate::python_kernel {

// Source of a module defining setup(shell, preload_modules):
//  - error replies carry the exception's class name as ename;
//  - matplotlib renders inline (PNG display_data at the end of each cell,
//    no plt.show() needed), with a writable MPLCONFIGDIR;
//  - kernel-side comms work (install_comms, comms_script.hpp, which must be
//    run in the same module first);
//  - the listed modules are imported.
extern const char* const startup_script;

}  // namespace sandgate::python_kernel
