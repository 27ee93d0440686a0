#include "python_interpreter.hpp"

#include <chrono>
#include <csignal>
#include <system_error>
#include <thread>
#include <utility>

#include <pybind11/eval.h>
#include <pybind11/stl.h>

#include "sandgate_kernels/sigint_mask.hpp"
#include "startup_script.hpp"

namespace py = pybind11;

namespace sandgate::python_kernel {
namespace {

// Clears a KeyboardInterrupt that Python recorded but has not raised yet.
void clear_tripped_signal() {
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) {
    PyErr_Clear();
  }
}

class busy_flag {
 public:
  explicit busy_flag(std::atomic<bool>& flag) : flag_(flag) { flag_.store(true); }
  ~busy_flag() { flag_.store(false); }
  busy_flag(const busy_flag&) = delete;
  busy_flag& operator=(const busy_flag&) = delete;

 private:
  std::atomic<bool>& flag_;
};

}  // namespace

python_interpreter::python_interpreter(std::vector<std::string> preload_modules)
    : preload_modules_(std::move(preload_modules)), cell_thread_(pthread_self()) {}

void python_interpreter::interrupt() noexcept {
  if (!busy_.load()) return;
  // Thread-directed: only the cell thread has SIGINT unblocked for the cell.
  // If the cell ends first, the signal stays pending and is dropped.
  const auto acted = interrupts_acted_.load();
  const auto cell = cell_serial_.load();
  pthread_kill(cell_thread_, SIGINT);
  // A SIGINT that lands after a C call returned and before the next blocking
  // call entered its syscall (between print() and time.sleep()) is acted on
  // only when that call returns. Until the cell's handler has run, the
  // signal is sent again: one interrupt, one KeyboardInterrupt, promptly.
  try {
    std::thread([this, acted, cell] {
      for (int attempt = 0; attempt < 100; ++attempt) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (!busy_.load() || cell_serial_.load() != cell || interrupts_acted_.load() != acted) return;
        pthread_kill(cell_thread_, SIGINT);
      }
    }).detach();
  } catch (const std::system_error&) {  // no thread: the first signal stands alone
  }
}

void python_interpreter::configure_impl() {
  xpyt::interpreter::configure_impl();
  py::gil_scoped_acquire gil;
  py::dict scope;
  scope["__name__"] = "sandgate_startup";
  scope["__builtins__"] = py::module_::import("builtins");
  py::exec(startup_script, scope);
  python_version_ = py::module_::import("platform").attr("python_version")().cast<std::string>();
  scope["setup"](m_ipython_shell, py::cast(preload_modules_));
  // Python's own SIGINT handler, counted: interrupt() knows when a signal
  // has been acted on.
  auto* self = this;
  py::module_::import("signal").attr("signal")(SIGINT, py::cpp_function([self](py::object, py::object) {
                                                 self->interrupts_acted_.fetch_add(1);
                                                 PyErr_SetNone(PyExc_KeyboardInterrupt);
                                                 throw py::error_already_set();
                                               }));
}

nl::json python_interpreter::execute_request_impl(int execution_counter, const std::string& code, bool silent,
                                                  bool store_history, nl::json user_expressions,
                                                  bool allow_stdin) {
  clear_tripped_signal();
  cell_serial_.fetch_add(1);
  nl::json reply;
  {
    const kernels::sigint_window window;
    const busy_flag busy(busy_);
    reply = xpyt::interpreter::execute_request_impl(execution_counter, code, silent, store_history,
                                                    std::move(user_expressions), allow_stdin);
  }
  clear_tripped_signal();
  return reply;
}

nl::json python_interpreter::kernel_info_request_impl() {
  // Built here rather than by xeus-python, whose version imports debugpy to
  // advertise a debugger this kernel does not run.
  return nl::json{{"protocol_version", "5.3"},
                  {"implementation", "sandgate-python"},
                  {"implementation_version", SANDGATE_VERSION},
                  {"language_info",
                   {{"name", "python"},
                    {"version", python_version_},
                    {"mimetype", "text/x-python"},
                    {"file_extension", ".py"},
                    {"codemirror_mode", {{"name", "ipython"}, {"version", 3}}},
                    {"pygments_lexer", "ipython3"},
                    {"nbconvert_exporter", "python"}}},
                  {"banner", "Sandgate Python kernel (xeus-python, Python " + python_version_ + ")"},
                  {"debugger", false},
                  {"help_links", nl::json::array()},
                  {"status", "ok"}};
}

void python_interpreter::shutdown_request_impl() {
  // On the control thread: a running cell must end for the shell loop to stop.
  interrupt();
  xpyt::interpreter::shutdown_request_impl();
}

}  // namespace sandgate::python_kernel
