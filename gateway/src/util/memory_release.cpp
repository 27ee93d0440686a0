#include "memory_release.hpp"

#include <malloc.h>

namespace sandgate::gateway {

memory_release::memory_release(boost::asio::io_context& io, std::chrono::milliseconds quiet)
    : timer_(io), quiet_(quiet) {}

void memory_release::soon() {
  due_ = std::chrono::steady_clock::now() + quiet_;
  if (!armed_) wait();  // an armed timer looks at due_ when it fires
}

void memory_release::wait() {
  armed_ = true;
  timer_.expires_at(due_);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    if (std::chrono::steady_clock::now() < due_) return wait();
    armed_ = false;
    ::malloc_trim(0);
  });
}

}  // namespace sandgate::gateway
