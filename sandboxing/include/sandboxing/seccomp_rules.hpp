// The seccomp filter's rules, compiled with libseccomp. This runs at build
// time (sandgate_seccomp_gen writes the program that seccomp.cpp embeds) and
// in the tests; sandgate-sandbox itself never compiles a filter. Target
// sandgate::seccomp_rules.
#pragma once

#include <string>

namespace sandgate::sandboxing {

// The filter as classic BPF: an array of struct sock_filter in host byte
// order, for this build's architecture. Throws std::runtime_error naming
// the libseccomp call.
std::string compile_seccomp_filter();

}  // namespace sandgate::sandboxing
