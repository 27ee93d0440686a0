#include <gateway/config.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace sandgate::gateway {
namespace {

namespace fs = std::filesystem;
using env_map = std::map<std::string, std::string>;

// parse_config over a vector of arguments (argv[0] is added).
std::optional<config> parse(std::vector<std::string> args, const env_map& env = {}) {
  args.insert(args.begin(), "sandgate");
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  return parse_config(static_cast<int>(args.size()), argv.data(), env);
}

config parse_ok(std::vector<std::string> args, const env_map& env = {}) {
  auto c = parse(std::move(args), env);
  EXPECT_TRUE(c.has_value());
  return c.value_or(config{});
}

// A temporary file removed at the end of the test.
class temp_file {
 public:
  explicit temp_file(const std::string& text) {
    std::string tmpl = (fs::temp_directory_path() / "sandgate-config-XXXXXX").string();
    const int fd = ::mkstemp(tmpl.data());
    if (fd < 0) throw std::runtime_error("mkstemp failed");
    ::close(fd);
    path_ = tmpl;
    std::ofstream(path_) << text;
  }
  ~temp_file() {
    std::error_code ec;
    fs::remove(path_, ec);
  }
  temp_file(const temp_file&) = delete;
  temp_file& operator=(const temp_file&) = delete;
  [[nodiscard]] std::string path() const { return path_.string(); }

 private:
  fs::path path_;
};

// Every option the config struct can take, as named on the command line.
const std::vector<std::string> all_options = {
    "ip",
    "port",
    "auth-token",
    "state-dir",
    "default-kernel",
    "max-kernels",
    "allow-origin",
    "base-url",
    "ports-domain",
    "certfile",
    "keyfile",
    "tokens-file",
    "kernel-env-allow",
    "kernel-path",
    "shutdown-kernels-on-exit",
    "policy",
    "unsandboxed-kernels",
    "node-id",
    "host-id-lock-dir",
    "peers",
    "peers-file",
    "peer-timeout-ms",
    "agent-check-port",
    "egress-hosts-file",
    "egress-resolver",
    "log-level",
    "audit-log",
    "http-header-limit-bytes",
    "http-body-limit-bytes",
    "ws-message-limit-bytes",
    "client-queue-limit-bytes",
    "client-stall-timeout-s",
    "replay-buffer-limit-bytes",
    "iopub-journal-bytes",
    "output-memory-limit-bytes",
    "max-message-bytes",
    "http-idle-timeout-s",
    "http-header-timeout-s",
    "handshake-timeout-s",
    "max-connections",
    "max-connections-per-address",
    "kernel-start-timeout-s",
    "kernel-shutdown-grace-s",
    "replay-retention-s",
    "max-kernel-restarts",
    "sandbox-idle-timeout-s",
    "pool",
    "pool-max-depth",
    "pool-memory-bytes",
    "pool-preload",
};

std::string env_name_of(const std::string& option) {
  std::string out = "SANDGATE_";
  for (char ch : option)
    out.push_back(ch == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(ch))));
  return out;
}

TEST(config, defaults_are_loopback_with_a_generated_token) {
  const config c = parse_ok({});
  EXPECT_EQ(c.ip, "127.0.0.1");
  EXPECT_EQ(c.port, 8888);
  EXPECT_FALSE(c.auth_token.has_value());
  EXPECT_EQ(c.base_url, "/");
  EXPECT_EQ(c.max_kernels, 64u);
  EXPECT_TRUE(c.unsandboxed_kernels.empty());
  EXPECT_EQ(c.node_id, 0);
  EXPECT_EQ(c.log_level, "info");
}

TEST(config, command_line_beats_environment_beats_file) {
  temp_file file(R"({"port": 1000, "max_kernels": 3, "ip": "0.0.0.0", "node-id": 7})");
  const config c = parse_ok({"--config", file.path(), "--port", "3000"},
                            {{"SANDGATE_PORT", "2000"}, {"SANDGATE_MAX_KERNELS", "4"}});
  EXPECT_EQ(c.port, 3000);       // command line over environment and file
  EXPECT_EQ(c.max_kernels, 4u);  // environment over file
  EXPECT_EQ(c.ip, "0.0.0.0");    // file only
  EXPECT_EQ(c.node_id, 7);       // file key with a dash
}

TEST(config, config_file_named_by_environment_and_overridden_by_command_line) {
  temp_file from_env(R"({"port": 1111})");
  temp_file from_cli(R"({"port": 2222})");
  EXPECT_EQ(parse_ok({}, {{"SANDGATE_CONFIG", from_env.path()}}).port, 1111);
  EXPECT_EQ(parse_ok({"--config", from_cli.path()}, {{"SANDGATE_CONFIG", from_env.path()}}).port, 2222);
}

TEST(config, equals_form_and_lists) {
  const config c = parse_ok(
      {"--port=0", "--kernel-path=/a,/b", "--unsandboxed-kernels", "python3,python", "--auth-token=s3cret"});
  EXPECT_EQ(c.port, 0);
  ASSERT_EQ(c.kernel_paths.size(), 2u);
  EXPECT_EQ(c.kernel_paths[0], fs::path("/a"));
  EXPECT_EQ(c.kernel_paths[1], fs::path("/b"));
  EXPECT_EQ(c.unsandboxed_kernels, (std::vector<std::string>{"python3", "python"}));
  EXPECT_EQ(c.auth_token, std::optional<std::string>("s3cret"));
}

TEST(config, file_arrays_become_lists) {
  temp_file file(R"({"kernel_path": ["/x", "/y"], "unsandboxed_kernels": ["*"]})");
  const config c = parse_ok({"--config", file.path()});
  ASSERT_EQ(c.kernel_paths.size(), 2u);
  EXPECT_EQ(c.kernel_paths[1], fs::path("/y"));
  EXPECT_EQ(c.unsandboxed_kernels, (std::vector<std::string>{"*"}));
}

TEST(config, explicit_empty_token_differs_from_unset) {
  const config c = parse_ok({"--auth-token", ""});
  ASSERT_TRUE(c.auth_token.has_value());
  EXPECT_EQ(*c.auth_token, "");
  temp_file file(R"({"auth_token": ""})");
  const config f = parse_ok({"--config", file.path()});
  ASSERT_TRUE(f.auth_token.has_value());
  EXPECT_EQ(*f.auth_token, "");
}

TEST(config, base_url_gets_leading_and_trailing_slash) {
  EXPECT_EQ(parse_ok({"--base-url", "gw"}).base_url, "/gw/");
  EXPECT_EQ(parse_ok({"--base-url", "/gw"}).base_url, "/gw/");
  EXPECT_EQ(parse_ok({"--base-url", "/gw/"}).base_url, "/gw/");
  EXPECT_EQ(parse_ok({"--base-url", ""}).base_url, "/");
}

TEST(config, help_lists_every_option_with_its_environment_variable) {
  ::testing::internal::CaptureStdout();
  const auto c = parse({"--help"});
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_FALSE(c.has_value());
  EXPECT_EQ(out, config_help());
  for (const auto& name : all_options) {
    SCOPED_TRACE(name);
    EXPECT_NE(out.find("  --" + name + " "), std::string::npos);
    EXPECT_NE(out.find("(" + env_name_of(name) + ")"), std::string::npos);
  }
  for (const char* extra : {"--config FILE", "--help", "--version"})
    EXPECT_NE(out.find(extra), std::string::npos) << extra;
}

TEST(config, every_option_in_help_is_accepted) {
  const std::regex line_re(R"(^  --([a-z0-9-]+) ?([A-Z,\[\]]*))");
  std::istringstream in(config_help());
  std::set<std::string> seen;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, line_re)) continue;
    const std::string name = m[1], arg = m[2];
    if (name == "help" || name == "version" || name == "config") continue;
    seen.insert(name);
    SCOPED_TRACE(line);
    std::string value = "x";
    if (arg == "N" || arg == "S") value = "1";
    if (arg == "LEVEL") value = "debug";
    if (arg == "ADDR") value = "127.0.0.1";
    if (arg.empty()) value = "true";
    if (name == "pool") value = "python=1";
    if (name == "egress-resolver") value = "127.0.0.53:53";
    std::vector<std::string> args{"--" + name, value};
    if (arg.empty()) args = {"--" + name};  // a flag
    if (name == "certfile") args = {"--certfile", "c.pem", "--keyfile", "k.pem"};
    if (name == "keyfile") args = {"--keyfile", "k.pem", "--certfile", "c.pem"};
    EXPECT_NO_THROW((void)parse(args));
    EXPECT_NO_THROW((void)parse(
        {}, {{env_name_of(name), value}, {"SANDGATE_CERTFILE", "c.pem"}, {"SANDGATE_KEYFILE", "k.pem"}}));
  }
  EXPECT_EQ(seen, std::set<std::string>(all_options.begin(), all_options.end()));
}

TEST(config, egress_resolver_is_a_numeric_address_and_a_port) {
  EXPECT_EQ(parse_ok({"--egress-resolver", "127.0.0.53:5353"}).egress_resolver, "127.0.0.53:5353");
  EXPECT_EQ(parse_ok({"--egress-resolver", "[::1]:53"}).egress_resolver, "[::1]:53");
  for (const char* bad :
       {"127.0.0.53", "dns.example:53", "127.0.0.53:0", "127.0.0.53:70000", "::1:53", "[::1]"}) {
    SCOPED_TRACE(bad);
    try {
      (void)parse({"--egress-resolver", bad});
      ADD_FAILURE() << "accepted";
    } catch (const config_error& e) {
      EXPECT_NE(std::string(e.what()).find("--egress-resolver"), std::string::npos) << e.what();
    }
  }
}

TEST(config, version_prints_and_stops) {
  ::testing::internal::CaptureStdout();
  const auto c = parse({"--version"});
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_FALSE(c.has_value());
  EXPECT_EQ(out.rfind("sandgate ", 0), 0u) << out;
}

TEST(config, numbers_within_their_type) {
  EXPECT_EQ(parse_ok({"--port", "65535"}).port, 65535);
  EXPECT_EQ(parse_ok({"--node-id", "65535"}).node_id, 65535);
  EXPECT_EQ(parse_ok({"--http-body-limit-bytes", "1048576"}).http_body_limit_bytes, 1048576u);
}

TEST(config, connection_limits_and_deadlines) {
  const config d = parse_ok({});
  EXPECT_EQ(d.max_connections, 4096u);
  EXPECT_EQ(d.max_connections_per_address, 256u);
  EXPECT_EQ(d.http_header_timeout_s, 20u);
  EXPECT_EQ(d.handshake_timeout_s, 10u);
  const config c = parse_ok(
      {"--max-connections", "100", "--max-connections-per-address", "0", "--http-header-timeout-s", "2"},
      {{"SANDGATE_HANDSHAKE_TIMEOUT_S", "3"}});
  EXPECT_EQ(c.max_connections, 100u);
  EXPECT_EQ(c.max_connections_per_address, 0u);  // none
  EXPECT_EQ(c.http_header_timeout_s, 2u);
  EXPECT_EQ(c.handshake_timeout_s, 3u);
}

TEST(config, pools_by_kernelspec_with_their_depth) {
  const config c = parse_ok({"--pool", "python=4,bash=1,ir=0", "--pool-preload", "numpy,pandas"});
  EXPECT_EQ(c.pools, (std::map<std::string, unsigned>{{"python", 4}, {"bash", 1}}));  // depth 0: no pool
  EXPECT_EQ(c.pool_preload, (std::vector<std::string>{"numpy", "pandas"}));
  temp_file file(R"({"pool": "python=2", "pool-max-depth": 8})");
  const config f = parse_ok({"--config", file.path()});
  EXPECT_EQ(f.pools, (std::map<std::string, unsigned>{{"python", 2}}));
  EXPECT_EQ(f.pool_max_depth, 8u);
  EXPECT_TRUE(parse_ok({}).pools.empty());
  for (const auto* bad : {"python", "=4", "python=four", "python=-1"})
    EXPECT_THROW((void)parse({"--pool", bad}), config_error) << bad;
}

struct bad_case {
  const char* what;
  std::vector<std::string> args;
  env_map env;
};

TEST(config, bad_command_line_values_give_config_error) {
  const std::vector<bad_case> cases = {
      {"port not a number", {"--port", "http"}, {}},
      {"port with trailing junk", {"--port", "80x"}, {}},
      {"port too big", {"--port", "65536"}, {}},
      {"port negative", {"--port", "-1"}, {}},
      {"node id too big", {"--node-id", "70000"}, {}},
      {"max kernels zero", {"--max-kernels", "0"}, {}},
      {"max connections zero", {"--max-connections", "0"}, {}},
      {"header timeout zero", {"--http-header-timeout-s", "0"}, {}},
      {"handshake timeout zero", {"--handshake-timeout-s", "0"}, {}},
      {"limit overflows", {"--http-body-limit-bytes", "999999999999999999999999"}, {}},
      {"timeout negative", {"--kernel-start-timeout-s", "-5"}, {}},
      {"empty number", {"--port", ""}, {}},
      {"unknown option", {"--no-such-option", "1"}, {}},
      {"missing value", {"--port"}, {}},
      {"positional argument", {"serve"}, {}},
      {"single dash", {"-p", "1"}, {}},
      {"certfile without keyfile", {"--certfile", "c.pem"}, {}},
      {"keyfile without certfile", {"--keyfile", "k.pem"}, {}},
      {"environment not a number", {}, {{"SANDGATE_PORT", "eighty"}}},
      {"environment max kernels zero", {}, {{"SANDGATE_MAX_KERNELS", "0"}}},
      {"missing config file", {"--config", "/nonexistent/sandgate.json"}, {}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    EXPECT_THROW((void)parse(c.args, c.env), config_error);
  }
}

TEST(config, bad_config_files_give_config_error) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"not JSON", "{port: 1"},
      {"not an object", "[1, 2]"},
      {"unknown key", R"({"prot": 1})"},
      {"number as bool", R"({"port": true})"},
      {"number out of range", R"({"port": 123456})"},
      {"number as float", R"({"max_kernels": 2.5})"},
  };
  for (const auto& [what, text] : cases) {
    SCOPED_TRACE(what);
    temp_file file(text);
    EXPECT_THROW((void)parse({"--config", file.path()}), config_error);
  }
}

TEST(config, config_error_names_the_option) {
  try {
    (void)parse({"--max-kernels", "many"});
    FAIL() << "no config_error";
  } catch (const config_error& e) {
    EXPECT_NE(std::string(e.what()).find("max"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("many"), std::string::npos) << e.what();
  }
}

TEST(config, flags_stand_alone_or_take_a_boolean) {
  EXPECT_FALSE(parse({})->shutdown_kernels_on_exit);
  EXPECT_TRUE(parse({"--shutdown-kernels-on-exit"})->shutdown_kernels_on_exit);
  EXPECT_TRUE(parse({"--shutdown-kernels-on-exit", "--port", "1"})->shutdown_kernels_on_exit);
  EXPECT_FALSE(parse({"--shutdown-kernels-on-exit=false"})->shutdown_kernels_on_exit);
  EXPECT_TRUE(parse({}, {{"SANDGATE_SHUTDOWN_KERNELS_ON_EXIT", "1"}})->shutdown_kernels_on_exit);
  EXPECT_THROW((void)parse({"--shutdown-kernels-on-exit=maybe"}), config_error);
}

TEST(config, unknown_log_level_gives_config_error) {
  EXPECT_THROW((void)parse({"--log-level", "verbose"}), config_error);
}

}  // namespace
}  // namespace sandgate::gateway
