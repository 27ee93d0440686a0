// Starting the embedded CPython that libxeus-python expects.
#pragma once

#include <string>

#include <pybind11/embed.h>

namespace sandgate::python_kernel {

// Initialises CPython as if it were `python_executable` (so sys.prefix, the
// standard library and dist-packages are that Python's, wherever this binary
// lives), with Python's own SIGINT handler installed and sys.argv = argv.
// Throws if initialisation fails.
class embedded_python {
 public:
  embedded_python(const std::string& python_executable, int argc, const char* const* argv);
  embedded_python(const embedded_python&) = delete;
  embedded_python& operator=(const embedded_python&) = delete;

 private:
  static PyConfig make_config(const std::string& python_executable);
  PyConfig config_;
  pybind11::scoped_interpreter interpreter_;
};

}  // namespace sandgate::python_kernel
