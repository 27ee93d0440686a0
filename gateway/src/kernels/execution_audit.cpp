#include "execution_audit.hpp"

#include "kernel.hpp"

#include <boost/asio/post.hpp>

namespace sandgate::gateway {

execution_audit::~execution_audit() {
  while (!pending_.empty())
    write(pending_.begin()->first);
}

void execution_audit::watch(kernel& k, std::function<void()> on_end) {
  std::weak_ptr<execution_audit> weak = weak_from_this();
  k.on_execution_finished([weak, on_end = std::move(on_end), id = k.id(), owner = k.owner(),
                           sandbox_id = k.sandbox_id()](const execution_record& r) {
    auto self = weak.lock();
    if (!self) return;
    self->on_end(id, owner, sandbox_id, r);
    if (on_end) on_end();
  });
}

void execution_audit::on_end(const std::string& kernel_id, const std::string& owner,
                             const std::string& sandbox_id, const execution_record& r) {
  const std::string key = kernel_id + "/" + r.msg_id;
  const std::string& s = r.status;
  const bool known = s == "ok" || s == "error" || s == "timeout" || s == "aborted";
  const auto end = r.finished.value_or(std::chrono::steady_clock::now());
  pending p;
  // Over the channels: the principal whose connection sent the request
  // (the kernel's owner for one a previous gateway took).
  p.principal = r.principal.empty() ? owner : r.principal;
  using ojson = nlohmann::ordered_json;
  const bool digested = !r.code_from.empty();
  auto& f = p.fields;
  f["kernel_id"] = kernel_id;
  f["sandbox_id"] = sandbox_id;
  f["owner"] = owner;
  f["msg_id"] = r.msg_id;
  f["via"] = "channels";
  f["code_sha256"] = digested ? ojson(r.code_sha256) : ojson(nullptr);
  f["code_bytes"] = digested ? ojson(r.code_bytes) : ojson(nullptr);
  f["code_from"] = digested ? ojson(r.code_from) : ojson(nullptr);
  f["outcome"] = !r.sandbox_ended.empty() ? std::string("sandbox_ended") : known ? s : std::string("error");
  if (!r.sandbox_ended.empty()) f["sandbox_ended"] = r.sandbox_ended;
  f["duration_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(end - r.started_steady).count();
  f["timed_out"] = r.timed_out;
  f["kernel_restarted"] = r.kernel_restarted;
  pending_[key] = std::move(p);
  // The record's waiters (a REST execute) are told right after this, in
  // the same call: write once they have amended it.
  boost::asio::post(io_, [weak = weak_from_this(), key] {
    if (auto self = weak.lock()) self->write(key);
  });
}

void execution_audit::amend(const std::string& kernel_id, const std::string& msg_id,
                            const std::string& principal, const std::string& code_sha256,
                            std::uint64_t code_bytes) {
  auto it = pending_.find(kernel_id + "/" + msg_id);
  if (it == pending_.end()) return;  // never sent to the kernel (it was not running): nothing ran
  auto& f = it->second.fields;
  it->second.principal = principal;
  f["via"] = "rest";
  f["code_sha256"] = code_sha256;
  f["code_bytes"] = code_bytes;
  f["code_from"] = "request";
}

void execution_audit::write(const std::string& key) {
  auto it = pending_.find(key);
  if (it == pending_.end()) return;
  log_.record("execute", it->second.principal, it->second.fields);
  pending_.erase(it);
}

}  // namespace sandgate::gateway
