#pragma once
// Gives the heap's free pages back to the system once the gateway has been
// quiet for a while: after a burst of output has drained, after a kernel has
// ended. glibc keeps freed memory resident unless it sits at the top of the
// heap, so without this RSS would stay at its peak. Each request pushes the
// release back, so a long stream of output trims once, at its end, and never
// makes the stream fault its pages in again halfway through.

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>

namespace sandgate::gateway {

class memory_release {
 public:
  memory_release(boost::asio::io_context& io, std::chrono::milliseconds quiet);

  // Releases free pages `quiet` after the last call.
  void soon();

 private:
  void wait();

  boost::asio::steady_timer timer_;
  std::chrono::milliseconds quiet_;
  std::chrono::steady_clock::time_point due_;
  bool armed_ = false;
};

}  // namespace sandgate::gateway
