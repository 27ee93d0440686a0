#include "own_requests.hpp"

#include <utility>

namespace sandgate::gateway {

void own_requests::add(const std::string& msg_id, done_handler done) {
  if (requests_.emplace(msg_id, std::move(done)).second) order_.push_back(msg_id);
  while (order_.size() > max_requests_) {
    requests_.erase(order_.front());
    order_.pop_front();
  }
}

bool own_requests::answer(const protocol::message& msg) {
  auto it = requests_.find(msg.parent.msg_id);
  if (it == requests_.end()) return false;
  if (!msg.msg_type().ends_with("_reply")) return true;
  auto done = std::move(it->second);
  requests_.erase(it);  // its id stays in order_ until evicted
  if (done) {
    // No document: a kernel's status of another type than a string is "nothing".
    const auto status = protocol::string_member(msg.content, "status");
    done(status == "ok" ? std::string() : "the kernel answered " + status.value_or("nothing"));
  }
  return true;
}

void own_requests::fail_all(const std::string& why) {
  auto requests = std::exchange(requests_, {});
  order_.clear();
  for (auto& [msg_id, done] : requests)
    if (done) done(why);
}

}  // namespace sandgate::gateway
