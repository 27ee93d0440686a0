// The embedded module `_sandgate_comms`: what comms_script.cpp needs of
// xeus's table of open comms, which xeus-python 0.14.3 does not give Python.
//
// xeus 2.4.1's xcomm constructors that take a target leave `m_moved_from`
// uninitialised, so a comm the kernel opened may skip its unregistration
// when destroyed and leave a dangling pointer in the table (comm_info and
// the next comm_msg to that id then crash the kernel). A comm is therefore
// taken out of the table explicitly before its xeus object goes.

#include <string>

#include <pybind11/embed.h>
#include <xeus/xcomm.hpp>
#include <xeus/xguid.hpp>
#include <xeus/xinterpreter.hpp>

PYBIND11_EMBEDDED_MODULE(_sandgate_comms, module) {
  module.def(
      "forget",
      [](const std::string& comm_id) {
        xeus::get_interpreter().comm_manager().comms().erase(xeus::xguid(comm_id));
      },
      "Removes comm_id from xeus's open comms (no-op when absent). On the shell thread, with the GIL.");
}
