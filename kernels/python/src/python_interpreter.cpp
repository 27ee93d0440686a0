#include "python_interpreter.hpp"

#include <pthread.h>

#include <semaphore.h>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <system_error>
#include <thread>
#include <utility>

#include <pybind11/eval.h>
#include <pybind11/stl.h>

#include "comms_script.hpp"
#include "sandgate_kernels/sigint_mask.hpp"
#include "sandgate_kernels/startup_timing.hpp"
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

// What the SIGINT handler and its watchdog thread read: process-wide, never
// destroyed, lock-free atomics only.
struct cell_state {
  pthread_t thread{};                         // the thread that runs cells
  std::atomic<bool> busy{false};              // a cell is running
  std::atomic<unsigned> serial{0};            // bumps when a cell starts
  std::atomic<unsigned> acted{0};             // KeyboardInterrupts raised by Python's SIGINT handler
  std::atomic<unsigned> acted_at_signal{0};   // `acted` when the last SIGINT landed
  std::atomic<unsigned> serial_at_signal{0};  // `serial` when the last SIGINT landed
  struct sigaction python_action {};          // CPython's C-level SIGINT handler
  sem_t wakeup{};                             // posted by the handler for the watchdog
};

cell_state cells;

void on_sigint(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  cells.acted_at_signal.store(cells.acted.load());
  cells.serial_at_signal.store(cells.serial.load());
  if (cells.python_action.sa_flags & SA_SIGINFO) {
    cells.python_action.sa_sigaction(sig, info, context);
  } else if (cells.python_action.sa_handler != SIG_DFL && cells.python_action.sa_handler != SIG_IGN) {
    cells.python_action.sa_handler(sig);
  }
  sem_post(&cells.wakeup);
  errno = saved_errno;
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

// IPython keeps each session's cells in ~/.ipython/profile_default/
// history.sqlite, opened at start and committed, with a sync, by a thread
// after every cell. A kernel here lives in a sandbox of one session, whose
// home ends with it: no later session reads that file. So the database is
// in memory; In, _i, %history and its searches work as before, and a cell
// costs no disk write.
void keep_history_in_memory() {
  py::gil_scoped_acquire gil;
  py::exec(R"python(
from IPython.core.history import HistoryManager
HistoryManager._get_hist_file_name = lambda self, profile=None: ":memory:"
)python");
}

}  // namespace

python_interpreter::python_interpreter(std::vector<std::string> preload_modules, deferred_imports deferred)
    : preload_modules_(std::move(preload_modules)), deferred_(std::move(deferred)) {
  cells.thread = pthread_self();
}

void python_interpreter::interrupt() noexcept {
  if (!cells.busy.load()) return;
  // Thread-directed: only the cell thread has SIGINT unblocked for the cell.
  // If the cell ends first, the signal stays pending and is dropped. Once it
  // lands, the handler below sees it through.
  pthread_kill(cells.thread, SIGINT);
}

// A SIGINT that lands after a C call returned and before the next blocking
// call entered its syscall (between print() and time.sleep()) is acted on by
// CPython only when that call returns. So every SIGINT that reaches the cell
// thread, from interrupt() or from outside the process, goes through a C
// handler that runs CPython's and wakes a watchdog thread, which sends it
// again every 100 ms until Python's handler has acted on it: one interrupt,
// one KeyboardInterrupt, promptly.
void python_interpreter::watch_sigint() {
  if (sem_init(&cells.wakeup, 0, 0) != 0) return;
  struct sigaction ours {};
  ours.sa_sigaction = on_sigint;
  ours.sa_flags = SA_SIGINFO;
  sigemptyset(&ours.sa_mask);
  if (sigaction(SIGINT, &ours, &cells.python_action) != 0) return;
  try {
    std::thread([] {
      for (;;) {
        while (sem_wait(&cells.wakeup) != 0) {
        }
        const auto acted = cells.acted_at_signal.load();
        const auto serial = cells.serial_at_signal.load();
        // Until Python has acted on the latest SIGINT (a resend's wake-up
        // finds that done and ends here).
        const auto pending = [&] {
          return cells.busy.load() && cells.serial.load() == serial && cells.acted.load() == acted;
        };
        for (int attempt = 0; attempt < 100 && pending(); ++attempt) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          if (pending()) pthread_kill(cells.thread, SIGINT);
        }
      }
    }).detach();
  } catch (const std::system_error&) {  // no thread: a SIGINT stands alone, as in CPython
  }
}

void python_interpreter::configure_impl() {
  kernels::startup_mark("sandgate-python", "configure");
  keep_history_in_memory();
  xpyt::interpreter::configure_impl();
  kernels::startup_mark("sandgate-python", "ipython shell made");
  py::gil_scoped_acquire gil;
  deferred_.restore(m_ipython_shell);
  py::dict scope;
  scope["__name__"] = "sandgate_startup";
  scope["__builtins__"] = py::module_::import("builtins");
  py::exec(startup_script, scope);
  py::exec(comms_script, scope);
  python_version_ = py::module_::import("platform").attr("python_version")().cast<std::string>();
  scope["setup"](m_ipython_shell, py::cast(preload_modules_));
  // Python's own SIGINT handler, counted: interrupt() knows when a signal
  // has been acted on.
  py::module_::import("signal").attr("signal")(SIGINT, py::cpp_function([](py::object, py::object) {
                                                 cells.acted.fetch_add(1);
                                                 PyErr_SetNone(PyExc_KeyboardInterrupt);
                                                 throw py::error_already_set();
                                               }));
  watch_sigint();
  kernels::startup_mark("sandgate-python", "configured");
}

nl::json python_interpreter::execute_request_impl(int execution_counter, const std::string& code, bool silent,
                                                  bool store_history, nl::json user_expressions,
                                                  bool allow_stdin) {
  clear_tripped_signal();
  cells.serial.fetch_add(1);
  nl::json reply;
  {
    const kernels::sigint_window window;
    const busy_flag busy(cells.busy);
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
