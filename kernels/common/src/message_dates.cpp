// Message dates with zero-padded microseconds.
//
// xeus 2.4.1 writes a header's date with its microseconds unpadded: 0.013694 s
// past a second comes out as ".13694", which every reader takes for 0.13694 s,
// so the dates of one kernel's messages jump back and forth within a second
// (a cell's timing in a notebook, a gateway's reading of the kernel's
// journal). libxeus calls xeus::iso8601_now through the dynamic linker: the
// executable's definition below comes first in symbol lookup, so every header
// the kernel makes gets the protocol library's date instead.

#include <jupyter_protocol/message.hpp>

#include <xeus/xmessage.hpp>

namespace xeus {

std::string iso8601_now() {
  return sandgate::protocol::iso8601_now();
}

}  // namespace xeus
