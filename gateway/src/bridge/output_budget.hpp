#pragma once
// Kernel output held in the gateway's memory, for every kernel together,
// within one budget (--output-memory-limit-bytes). A message's bytes are
// charged to its kernel's account from when it is read off the kernel's
// socket until its last copy (client queues, replay buffers) is gone, its
// encodings included. A kernel that holds more than its share (the budget
// divided among the kernels that hold output) is paused: its output is not
// read until it is back under half its share, so the kernel waits at its
// socket instead of the gateway growing.

#include <cstddef>
#include <functional>
#include <memory>

namespace sandgate::gateway {

class output_budget {
 public:
  explicit output_budget(std::size_t limit_bytes) : limit_(limit_bytes) {}
  // An eighth of the host's memory, at least 256 MiB.
  [[nodiscard]] static std::size_t host_default_bytes();

  [[nodiscard]] std::size_t limit_bytes() const noexcept { return limit_; }
  [[nodiscard]] std::size_t held_bytes() const noexcept { return held_; }
  // What each kernel that holds output may hold.
  [[nodiscard]] std::size_t share_bytes() const noexcept { return limit_ / (holders_ > 0 ? holders_ : 1); }

 private:
  friend class output_account;
  std::size_t limit_;
  std::size_t held_ = 0;
  std::size_t holders_ = 0;  // accounts holding any output
};

// One kernel's part of the budget.
class output_account {
 public:
  // Told when the kernel is paused (true) or may go on (false).
  using pause_handler = std::function<void(bool paused)>;

  output_account(std::shared_ptr<output_budget> budget, pause_handler on_pause)
      : budget_(std::move(budget)), on_pause_(std::move(on_pause)) {}
  ~output_account();
  output_account(const output_account&) = delete;
  output_account& operator=(const output_account&) = delete;

  [[nodiscard]] std::size_t held_bytes() const noexcept { return held_; }
  [[nodiscard]] bool paused() const noexcept { return paused_; }
  // The kernel ended: no more pause or resume reaches it.
  void close() { on_pause_ = nullptr; }

 private:
  friend class output_charge;
  void add(std::size_t bytes);
  void remove(std::size_t bytes);
  void review();

  std::shared_ptr<output_budget> budget_;
  pause_handler on_pause_;
  std::size_t held_ = 0;
  bool paused_ = false;
};

// Bytes charged to an account for as long as this lives.
class output_charge {
 public:
  output_charge() = default;
  output_charge(std::shared_ptr<output_account> account, std::size_t bytes);
  output_charge(output_charge&& other) noexcept;
  output_charge& operator=(output_charge&& other) noexcept;
  output_charge(const output_charge&) = delete;
  output_charge& operator=(const output_charge&) = delete;
  ~output_charge() { release(); }

  // More bytes of the same message (an encoding of it).
  void add(std::size_t bytes);
  void release();

 private:
  std::shared_ptr<output_account> account_;
  std::size_t bytes_ = 0;
};

}  // namespace sandgate::gateway
