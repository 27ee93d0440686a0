#include "audit_log.hpp"

#include <gateway/log.hpp>
#include <jupyter_protocol/message.hpp>

#include <openssl/evp.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <system_error>

namespace sandgate::gateway {

sandboxing::unique_fd audit_log::open_file(const std::filesystem::path& path) {
  sandboxing::unique_fd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600));
  if (!fd) throw std::system_error(errno, std::generic_category(), "open(" + path.string() + ", O_APPEND)");
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    throw std::system_error(errno, std::generic_category(), "fstat(" + path.string() + ")");
  // A regular file the gateway made or was given is its alone; a device
  // (/dev/null, /dev/full) is left as it is.
  if (S_ISREG(st.st_mode) && (st.st_mode & 07777) != 0600 && ::fchmod(fd.get(), 0600) != 0)
    throw std::system_error(errno, std::generic_category(), "fchmod(" + path.string() + ", 0600)");
  return fd;
}

audit_log::audit_log(std::filesystem::path path) : path_(std::move(path)), fd_(open_file(path_)) {}

void audit_log::reopen() {
  try {
    fd_ = open_file(path_);
    partial_ = false;
    log::info("audit_log_reopened", {{"path", path_.string()}});
  } catch (const std::exception& e) {
    log::error("audit_log_reopen_failed", {{"path", path_.string()}, {"error", e.what()}});
  }
}

void audit_log::record(std::string_view event, const std::optional<std::string>& principal,
                       const nlohmann::ordered_json& fields) noexcept {
  try {
    using ojson = nlohmann::ordered_json;
    constexpr auto replace = ojson::error_handler_t::replace;
    const ojson head = {{"time", protocol::iso8601_now()},
                        {"event", event},
                        {"principal", principal ? ojson(*principal) : nullptr}};
    std::string text = head.dump(-1, ' ', false, replace);
    // The fields follow the head's members, serialised where they are
    // (one that names a head member replaces it in place).
    if (fields.is_object() && !fields.empty()) {
      if (fields.contains("time") || fields.contains("event") || fields.contains("principal")) {
        ojson line = head;
        for (const auto& [key, value] : fields.items())
          line[key] = value;
        text = line.dump(-1, ' ', false, replace);
      } else {
        text.back() = ',';
        const std::string rest = fields.dump(-1, ' ', false, replace);
        text.append(rest, 1, std::string::npos);
      }
    }
    text.push_back('\n');
    write_line(text);
  } catch (const std::exception& e) {  // allocation; nothing else throws here
    log::error("audit_record_failed", {{"event", event}, {"error", e.what()}});
  }
}

void audit_log::write_line(const std::string& text) {
  // After a line cut short (disk full), start on a line of its own.
  const std::string line = partial_ ? "\n" + text : text;
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_.get(), line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      partial_ = partial_ || done > 0;
      ++dropped_;
      if (!failing_)
        log::error("audit_write_failed", {{"path", path_.string()},
                                          {"error", std::generic_category().message(err)},
                                          {"note", "audit lines are dropped until a write succeeds"}});
      failing_ = true;
      return;
    }
    done += static_cast<std::size_t>(n);
  }
  partial_ = false;
  if (failing_) {
    log::warn("audit_write_recovered",
              {{"path", path_.string()}, {"dropped_lines", std::to_string(dropped_)}});
    failing_ = false;
    dropped_ = 0;
  }
}

std::string sha256_hex(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_Digest(data.data(), data.size(), digest.data(), &size, EVP_sha256(), nullptr) != 1) return {};
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * size);
  for (unsigned int i = 0; i < size; ++i) {
    out.push_back(hex[digest[i] >> 4]);
    out.push_back(hex[digest[i] & 0xf]);
  }
  return out;
}

}  // namespace sandgate::gateway
