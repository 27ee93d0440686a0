#pragma once
// The open client connections, counted overall and per client address (an
// IPv6 address by its /64, what one host is usually given), and the order in
// which those waiting for a request head began to wait. A connection over
// its address's limit is refused; one over the total takes the place of the
// connection that has waited longest for a head (a server may close an idle
// connection at any time, and one that sends no head costs the gateway a
// descriptor and nothing else), or is refused when none waits. No I/O here:
// the server and the sessions act on the answers.

#include <boost/asio/ip/address.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>

namespace sandgate::gateway {

class connection_table {
 public:
  struct limits {
    std::size_t total = 4096;
    std::size_t per_address = 256;  // 0: none
  };

  // What a waiting connection is told when a new one takes its place: close
  // at once. Its slot is already released when this is called.
  class closer {
   public:
    virtual ~closer() = default;
    virtual void close_now() = 0;
  };

  class slot;

 private:
  class state;
  struct entry {
    boost::asio::ip::address key;
    slot* owner = nullptr;
    closer* on_displace = nullptr;  // set while the connection waits for a head
  };

 public:
  // One admitted connection's place in the table, released when destroyed.
  // Move-only; an empty slot holds no place.
  class slot {
   public:
    slot() = default;
    ~slot();
    slot(slot&& other) noexcept;
    slot& operator=(slot&& other) noexcept;
    slot(const slot&) = delete;
    slot& operator=(const slot&) = delete;

    // The connection waits for a request head: a new connection over the
    // total may take its place (`c` is then told to close). Waiting again
    // puts it at the back of the line.
    void waiting(closer& c);
    // The connection is busy (a request, a WebSocket): never displaced.
    void busy();
    void release();
    [[nodiscard]] bool held() const noexcept { return static_cast<bool>(state_); }

   private:
    friend class connection_table;
    std::shared_ptr<state> state_;
    std::list<entry>::iterator entry_;
  };

  enum class refusal : std::uint8_t { none, per_address, total };

  struct admission {
    slot place;  // held unless refused
    refusal refused = refusal::none;
    bool displaced_waiting = false;  // a waiting connection was closed to make room
  };

  // `on_count`: called with the number open after each change, and whether
  // it grew (a gauge; a trim of freed memory once many have closed).
  explicit connection_table(limits l, std::function<void(std::size_t open, bool opened)> on_count = {});
  // Slots that outlive the table release their places into nothing.
  ~connection_table();
  connection_table(const connection_table&) = delete;
  connection_table& operator=(const connection_table&) = delete;

  [[nodiscard]] admission admit(const boost::asio::ip::address& peer);

  [[nodiscard]] std::size_t open() const noexcept;
  [[nodiscard]] std::size_t waiting() const noexcept;
  [[nodiscard]] std::size_t open_from(const boost::asio::ip::address& peer) const;
  [[nodiscard]] const limits& limits_in_force() const noexcept;

  // The key connections are counted by: the address itself, an IPv4 address
  // mapped into IPv6 as IPv4, an IPv6 address with its last 64 bits cleared.
  [[nodiscard]] static boost::asio::ip::address address_key(const boost::asio::ip::address& peer);

 private:
  std::shared_ptr<state> state_;
};

}  // namespace sandgate::gateway
