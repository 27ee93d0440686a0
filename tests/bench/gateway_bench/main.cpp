// gateway_bench: measures one target (a gateway, or kernels over ZeroMQ)
// and prints the results as one JSON object on stdout. run_gateway_bench
// starts the targets and puts the results side by side.
#include "measurements.hpp"
#include "process_stats.hpp"
#include "targets.hpp"

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

namespace sb = sandgate::bench;

namespace {

constexpr const char* usage =
    "usage: gateway_bench --target zmq --kernelspec DIR [options]\n"
    "       gateway_bench --target rest --port P [--host H] [--base-url /] [--kernel-name N]\n"
    "                     [--protocol v1|legacy] [--pid SERVER_PID] [options]\n"
    "options: --measurements NAME[,NAME...] of one-kernel (starts, executes, PNG), create,\n"
    "         concurrent, stream, pool (default: all but pool)\n"
    "         --starts N --warmup N --executes N --stream-mib N --png-repeats N\n"
    "         --concurrency N[,N...] (0: none) --concurrent-executes N (per kernel)\n"
    "         --concurrent-executes-total N (at most, all kernels together) --settle-s S\n"
    "         --creates N (create -> first execute_result; pool: hits) --pool-depth N\n"
    "         --pool-fill-timeout-s S --start-timeout-s S\n"
    "         --execute-timeout-s S (a lost reply or idle status fails the measurement after S)\n"
    "pool: on a gateway, creates from its warm pool (waiting before each until sandgate_pool_ready\n"
    "      on /metrics is back at --pool-depth); on the floor, the first execute of a started kernel\n"
    "The gateway's token comes from the environment (GATEWAY_BENCH_TOKEN), not the command line.\n";

std::set<std::string> parse_names(const std::string& s) {
  static const std::set<std::string> known = {"one-kernel", "create", "concurrent", "stream", "pool"};
  std::set<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!known.count(item)) throw std::invalid_argument("unknown measurement " + item);
    out.insert(item);
  }
  return out;
}

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (const int n = std::stoi(item); n > 0) out.push_back(n);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  std::string target_kind;
  sb::rest_options rest;
  sb::zmq_options zmq;
  sb::plan plan;
  std::set<std::string> measurements = {"one-kernel", "create", "concurrent", "stream"};
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--help") {
        std::cout << usage;
        return 0;
      }
      if (i + 1 >= argc) throw std::invalid_argument("missing value for " + arg);
      const std::string value = argv[++i];
      if (arg == "--target")
        target_kind = value;
      else if (arg == "--kernelspec")
        zmq.kernelspec_dir = value;
      else if (arg == "--host")
        rest.host = value;
      else if (arg == "--port")
        rest.port = value;
      else if (arg == "--base-url")
        rest.base_url = value;
      else if (arg == "--kernel-name")
        rest.kernel_name = value;
      else if (arg == "--protocol")
        rest.v1 = value == "v1";
      else if (arg == "--pid")
        rest.server_pid = std::stoi(value);
      else if (arg == "--starts")
        plan.starts = std::stoi(value);
      else if (arg == "--warmup")
        plan.warmup = std::stoi(value);
      else if (arg == "--executes")
        plan.executes = std::stoi(value);
      else if (arg == "--stream-mib")
        plan.stream_mib = std::stoi(value);
      else if (arg == "--png-repeats")
        plan.png_repeats = std::stoi(value);
      else if (arg == "--concurrency")
        plan.concurrency = parse_list(value);
      else if (arg == "--concurrent-executes")
        plan.concurrent_executes = std::stoi(value);
      else if (arg == "--execute-timeout-s")
        plan.execute_timeout_s = std::stoi(value);
      else if (arg == "--settle-s")
        plan.settle_s = std::stoi(value);
      else if (arg == "--measurements")
        measurements = parse_names(value);
      else if (arg == "--concurrent-executes-total")
        plan.concurrent_executes_total = std::stoi(value);
      else if (arg == "--creates")
        plan.creates = std::stoi(value);
      else if (arg == "--pool-depth")
        plan.pool_depth = std::stoi(value);
      else if (arg == "--pool-fill-timeout-s")
        plan.pool_fill_timeout_s = std::stoi(value);
      else if (arg == "--start-timeout-s")
        rest.start_timeout = zmq.start_timeout = std::chrono::seconds(std::stoi(value));
      else
        throw std::invalid_argument("unknown option " + arg);
    }
    if (const char* token = std::getenv("GATEWAY_BENCH_TOKEN")) rest.token = token;
    if (target_kind != "zmq" && target_kind != "rest") throw std::invalid_argument("--target zmq|rest");
    if (plan.starts < 1) throw std::invalid_argument("--starts must be at least 1");
    if (plan.creates < 1) throw std::invalid_argument("--creates must be at least 1");
  } catch (const std::exception& e) {
    std::cerr << "gateway_bench: " << e.what() << "\n" << usage;
    return 2;
  }

  try {
    auto target = target_kind == "zmq" ? sb::make_zmq_target(zmq) : sb::make_rest_target(rest);
    const pid_t pid = target->server_pid();
    nlohmann::json results;
    nlohmann::json rss;
    std::vector<std::string> errors;
    // A failed measurement is reported and the next one still runs.
    const auto attempt = [&](const std::string& what, const auto& measure) {
      try {
        return measure();
      } catch (const std::exception& e) {
        std::cerr << "gateway_bench: " << what << " failed: " << e.what() << "\n";
        errors.push_back(what + ": " + e.what());
        return nlohmann::json();
      }
    };
    if (pid > 0) rss["idle_kib"] = sb::read_memory(pid).rss;
    // Order: one kernel's starts, executes and PNG; creates to a first
    // result; then the concurrent kernels (so their RSS is not mixed with
    // what the stream leaves); the large stream on a fresh kernel; the pool.
    const auto wanted = [&](const char* name) { return measurements.count(name) != 0; };
    if (wanted("one-kernel")) {
      std::unique_ptr<sb::kernel_session> kernel;
      results["start"] = attempt("start", [&] { return sb::measure_starts(*target, plan, kernel); });
      if (kernel) {
        if (pid > 0) rss["one_kernel_kib"] = sb::read_memory(pid).rss;
        results["execute"] = attempt("execute", [&] { return sb::measure_executes(*target, *kernel, plan); });
        results["png"] = attempt("png", [&] { return sb::measure_png(*kernel, plan); });
      }
    }
    if (wanted("create"))
      results["create"] = attempt("create", [&] { return sb::measure_create_to_result(*target, plan); });
    results["concurrent"] = nlohmann::json::array();
    for (const int n : wanted("concurrent") ? plan.concurrency : std::vector<int>{}) {
      auto r =
          attempt(std::to_string(n) + " kernels", [&] { return sb::measure_concurrent(*target, n, plan); });
      if (r.is_object()) results["concurrent"].push_back(std::move(r));
    }
    if (wanted("stream")) {
      results["stream"] = attempt("stream", [&] {
        auto kernel = target->start_kernel();
        return sb::measure_stream(*target, *kernel, plan);
      });
      if (results["stream"].is_object() && !results["stream"].value("complete", true))
        errors.push_back("stream: output lost on iopub");
    }
    if (wanted("pool"))
      results["pool"] = attempt("pool", [&] {
        return target_kind == "zmq" ? sb::measure_prestarted(*target, plan)
                                    : sb::measure_pool_hits(*target, plan);
      });
    if (pid > 0) {
      std::this_thread::sleep_for(std::chrono::seconds(plan.settle_s));
      const auto m = sb::read_memory(pid);
      rss["end_kib"] = m.rss;
      rss["peak_kib"] = m.peak;
      results["rss"] = rss;
    }
    results["errors"] = errors;
    std::cout << results.dump(2) << std::endl;
    return errors.empty() ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "gateway_bench: failed: " << e.what() << "\n";
    return 1;
  }
}
