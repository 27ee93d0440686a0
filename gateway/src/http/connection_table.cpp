#include "connection_table.hpp"

#include <unordered_map>
#include <utility>

namespace sandgate::gateway {
namespace ip = boost::asio::ip;

class connection_table::state {
 public:
  state(limits l, std::function<void(std::size_t, bool)> on_count)
      : limits_(l), on_count_(std::move(on_count)) {}

  // Takes a place for `key` at the back of the busy list.
  std::list<entry>::iterator add(const ip::address& key, slot& owner) {
    ++per_address_[key];
    busy_.push_back(entry{key, &owner, nullptr});
    ++open_;
    if (on_count_) on_count_(open_, true);
    return std::prev(busy_.end());
  }

  void remove(std::list<entry>::iterator it) {
    if (auto found = per_address_.find(it->key); found != per_address_.end() && --found->second == 0)
      per_address_.erase(found);
    (it->on_displace ? waiting_ : busy_).erase(it);
    --open_;
    if (on_count_) on_count_(open_, false);
  }

  void wait(std::list<entry>::iterator it, closer& c) {
    waiting_.splice(waiting_.end(), it->on_displace ? waiting_ : busy_, it);
    it->on_displace = &c;
  }

  void work(std::list<entry>::iterator it) {
    if (!it->on_displace) return;
    busy_.splice(busy_.end(), waiting_, it);
    it->on_displace = nullptr;
  }

  limits limits_;
  std::function<void(std::size_t, bool)> on_count_;
  std::list<entry> waiting_;  // the longest waiting first
  std::list<entry> busy_;
  std::unordered_map<ip::address, std::size_t> per_address_;
  std::size_t open_ = 0;
};

connection_table::slot::~slot() {
  release();
}

connection_table::slot::slot(slot&& other) noexcept : state_(std::move(other.state_)), entry_(other.entry_) {
  if (state_) entry_->owner = this;
}

connection_table::slot& connection_table::slot::operator=(slot&& other) noexcept {
  if (this == &other) return *this;
  release();
  state_ = std::move(other.state_);
  entry_ = other.entry_;
  if (state_) entry_->owner = this;
  return *this;
}

void connection_table::slot::waiting(closer& c) {
  if (state_) state_->wait(entry_, c);
}

void connection_table::slot::busy() {
  if (state_) state_->work(entry_);
}

void connection_table::slot::release() {
  if (auto s = std::move(state_)) s->remove(entry_);
}

connection_table::connection_table(limits l, std::function<void(std::size_t, bool)> on_count)
    : state_(std::make_shared<state>(l, std::move(on_count))) {}

connection_table::~connection_table() {
  state_->on_count_ = nullptr;  // what it calls may be gone before the last slot
}

connection_table::admission connection_table::admit(const ip::address& peer) {
  admission out;
  auto& s = *state_;
  const auto key = address_key(peer);
  if (s.limits_.per_address != 0) {
    const auto found = s.per_address_.find(key);
    if (found != s.per_address_.end() && found->second >= s.limits_.per_address) {
      out.refused = refusal::per_address;
      return out;
    }
  }
  if (s.open_ >= s.limits_.total) {
    if (s.waiting_.empty()) {
      out.refused = refusal::total;
      return out;
    }
    auto& oldest = s.waiting_.front();
    closer* displaced = oldest.on_displace;
    oldest.owner->release();
    displaced->close_now();
    out.displaced_waiting = true;
  }
  out.place.state_ = state_;
  out.place.entry_ = s.add(key, out.place);
  return out;
}

std::size_t connection_table::open() const noexcept {
  return state_->open_;
}

std::size_t connection_table::waiting() const noexcept {
  return state_->waiting_.size();
}

std::size_t connection_table::open_from(const ip::address& peer) const {
  const auto found = state_->per_address_.find(address_key(peer));
  return found == state_->per_address_.end() ? 0 : found->second;
}

const connection_table::limits& connection_table::limits_in_force() const noexcept {
  return state_->limits_;
}

ip::address connection_table::address_key(const ip::address& peer) {
  if (peer.is_v4()) return peer;
  const auto v6 = peer.to_v6();
  if (v6.is_v4_mapped()) return ip::make_address_v4(ip::v4_mapped, v6);
  auto bytes = v6.to_bytes();
  for (std::size_t i = 8; i < bytes.size(); ++i)
    bytes[i] = 0;
  return ip::address_v6(bytes);
}

}  // namespace sandgate::gateway
