// What the sandbox's /etc holds: a few generated files and read-only binds of
// the host's configuration that libraries and tools read.
#include <string>
#include <utility>
#include <vector>

#include "sandboxing/rootfs.hpp"

namespace sandgate::sandboxing {

std::vector<std::pair<std::string, std::string>> generated_etc_files(std::uint32_t uid, std::uint32_t gid,
                                                                     const std::string& hostname) {
  const std::string u = std::to_string(uid);
  const std::string g = std::to_string(gid);
  return {
      {"passwd",
       "root:x:0:0:root:/root:/usr/sbin/nologin\n"
       "sandbox:x:" +
           u + ":" + g +
           ":sandbox:/workspace:/bin/bash\n"
           "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"},
      {"group", "root:x:0:\nsandbox:x:" + g + ":\nnogroup:x:65534:\n"},
      {"hosts", "127.0.0.1\tlocalhost " + hostname + "\n::1\tlocalhost ip6-localhost ip6-loopback\n"},
      {"hostname", hostname + "\n"},
      {"nsswitch.conf",
       "passwd: files\ngroup: files\nshadow: files\nhosts: files\nnetworks: files\n"
       "protocols: files\nservices: files\n"},
      {"resolv.conf", ""},
  };
}

const std::vector<std::string>& bound_etc_entries() {
  static const std::vector<std::string> entries = {
      "ld.so.cache",  "ld.so.conf", "ld.so.conf.d",    "alternatives",
      "fonts",        "ssl",        "ca-certificates", "ca-certificates.conf",
      "matplotlibrc", "localtime",  "timezone",        "mime.types",
      "mailcap",      "protocols",  "services",        "bash.bashrc",
      "profile",      "inputrc",    "python3",         "python3.11",
      "locale.alias", "magic",      "os-release",      "debian_version",
      "terminfo",     "gai.conf",   "host.conf",       "xdg",
      "papersize",    "R",
  };
  return entries;
}

}  // namespace sandgate::sandboxing
