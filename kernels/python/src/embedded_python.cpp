#include "embedded_python.hpp"

#include <stdexcept>

namespace sandgate::python_kernel {
namespace {

void check(PyStatus status, const char* what) {
  if (PyStatus_Exception(status)) {
    throw std::runtime_error(std::string(what) + ": " +
                             (status.err_msg != nullptr ? status.err_msg : "failed"));
  }
}

}  // namespace

PyConfig embedded_python::make_config(const std::string& python_executable) {
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  // The program name decides sys.prefix: point it at the system interpreter,
  // not at this binary (xpyt::set_pythonhome() would derive it from our path).
  check(PyConfig_SetBytesString(&config, &config.program_name, python_executable.c_str()),
        "PyConfig program_name");
  check(PyConfig_SetBytesString(&config, &config.executable, python_executable.c_str()),
        "PyConfig executable");
  config.install_signal_handlers = 1;
  config.parse_argv = 0;
  return config;
}

embedded_python::embedded_python(const std::string& python_executable, int argc, const char* const* argv)
    : config_(make_config(python_executable)),
      // The script directory of a kernel binary has no business on sys.path.
      // pybind11 clears config_ once CPython has read it.
      interpreter_(&config_, argc, argv, false) {}

}  // namespace sandgate::python_kernel
