#include "dns_message.hpp"

#include <algorithm>
#include <cstring>

#include "byte_reader.hpp"
#include "sandboxing/network_policy.hpp"

namespace sandgate::egress::dns {
namespace {

constexpr std::uint16_t class_in = 1;
constexpr std::uint16_t type_opt = 41;
constexpr std::uint16_t flag_response = 0x8000;
constexpr std::uint16_t flag_truncated = 0x0200;
constexpr std::uint16_t flag_recursion_desired = 0x0100;
constexpr std::size_t max_pointers = 16;
constexpr std::size_t max_name_bytes = 255;

void put16(std::string& out, std::uint16_t v) {
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v & 0xff));
}

// A message, with DNS's names on top of the checked reads.
class reader : public byte_reader {
 public:
  using byte_reader::byte_reader;

  bool u16(std::uint16_t& v) {
    const auto n = number(2);
    if (n) v = static_cast<std::uint16_t>(*n);
    return n.has_value();
  }
  bool u32(std::uint32_t& v) {
    const auto n = number(4);
    if (n) v = *n;
    return n.has_value();
  }
  bool skip(std::size_t n) { return bytes(n).has_value(); }
  // A possibly compressed name, lower-cased, without the final dot ("" is the root).
  bool name(std::string& out) {
    out.clear();
    std::size_t at = pos_;
    std::size_t pointers = 0;
    bool jumped = false;
    for (;;) {
      if (at >= bytes_.size()) return false;
      const unsigned len = byte(at);
      if ((len & 0xc0) == 0xc0) {
        if (at + 1 >= bytes_.size() || ++pointers > max_pointers) return false;
        const std::size_t target = ((len & 0x3f) << 8) | byte(at + 1);
        if (target >= at) return false;  // only backwards: no loops
        if (!jumped) pos_ = at + 2;
        jumped = true;
        at = target;
        continue;
      }
      if (len & 0xc0) return false;  // the reserved label types
      if (len == 0) {
        if (!jumped) pos_ = at + 1;
        return true;
      }
      if (at + 1 + len > bytes_.size()) return false;
      if (!out.empty()) out.push_back('.');
      for (std::size_t i = 0; i < len; ++i) {
        const char c = bytes_[at + 1 + i];
        out.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
      }
      if (out.size() > max_name_bytes) return false;
      at += 1 + len;
    }
  }
  [[nodiscard]] std::string_view at(std::size_t n) const { return bytes_.substr(pos_, n); }
};

struct record {
  std::string owner;
  std::uint16_t type = 0;
  std::string_view data;
  std::string target;  // CNAME: the name it points to
};

answer failed(std::string why) {
  return {{}, std::move(why)};
}

}  // namespace

std::optional<std::string> encode_query(std::uint16_t id, std::string_view name, record_type type) {
  const std::string host = sandboxing::normalize_host(name);
  if (host.empty() || host.size() > 253 || host.starts_with("*.") || !sandboxing::valid_host_pattern(host))
    return std::nullopt;
  std::string out;
  put16(out, id);
  put16(out, flag_recursion_desired);
  for (std::uint16_t count : {1, 0, 0, 1})  // one question, one additional record (OPT)
    put16(out, count);
  for (std::size_t start = 0; start <= host.size();) {
    const std::size_t end = std::min(host.find('.', start), host.size());
    out.push_back(static_cast<char>(end - start));
    out.append(host, start, end - start);
    start = end + 1;
  }
  out.push_back('\0');
  put16(out, static_cast<std::uint16_t>(type));
  put16(out, class_in);
  out.push_back('\0');  // OPT: the root name, the UDP payload size we take, no flags, no data
  put16(out, type_opt);
  put16(out, static_cast<std::uint16_t>(max_udp_bytes));
  for (int i = 0; i < 3; ++i)
    put16(out, 0);
  return out;
}

std::optional<std::uint16_t> message_id(std::string_view message) {
  if (message.size() < 2) return std::nullopt;
  return static_cast<std::uint16_t>((static_cast<unsigned char>(message[0]) << 8) |
                                    static_cast<unsigned char>(message[1]));
}

answer parse_answer(std::string_view message, std::uint16_t id, std::string_view name, record_type type) {
  const std::string asked = sandboxing::normalize_host(name);
  reader r(message);
  std::uint16_t got_id = 0, flags = 0, questions = 0, answers = 0, authority = 0, additional = 0;
  if (!r.u16(got_id) || !r.u16(flags) || !r.u16(questions) || !r.u16(answers) || !r.u16(authority) ||
      !r.u16(additional))
    return failed("a DNS message shorter than its header");
  if (got_id != id || !(flags & flag_response)) return failed("not the response to the query");
  if ((flags >> 11 & 0xf) != 0) return failed("a DNS response to another kind of query");
  if (questions != 1) return failed("a DNS response with " + std::to_string(questions) + " questions");
  std::string qname;
  std::uint16_t qtype = 0, qclass = 0;
  if (!r.name(qname) || !r.u16(qtype) || !r.u16(qclass))
    return failed("a malformed question in the DNS response");
  if (qname != asked || qtype != static_cast<std::uint16_t>(type) || qclass != class_in)
    return failed("a DNS response to another question (" + qname + ")");
  switch (flags & 0xf) {
    case 0:
      break;
    case 3:
      return failed("no such name (NXDOMAIN)");
    case 2:
      return failed("the DNS server failed (SERVFAIL)");
    case 5:
      return failed("the DNS server refused the query (REFUSED)");
    default:
      return failed("the DNS server answered with code " + std::to_string(flags & 0xf));
  }
  std::vector<record> records;
  for (std::uint16_t i = 0; i < answers; ++i) {
    record rec;
    std::uint16_t rclass = 0, length = 0;
    std::uint32_t ttl = 0;
    if (!r.name(rec.owner) || !r.u16(rec.type) || !r.u16(rclass) || !r.u32(ttl) || !r.u16(length))
      return failed("a malformed record in the DNS answer");
    const std::size_t data_at = r.pos();
    rec.data = r.at(length);
    if (rec.data.size() != length) return failed("a DNS record longer than the message");
    if (rec.type == static_cast<std::uint16_t>(record_type::cname)) {
      if (!r.name(rec.target) || r.pos() != data_at + length)
        return failed("a malformed CNAME in the DNS answer");
    } else if (!r.skip(length)) {
      return failed("a DNS record longer than the message");
    }
    if (rclass == class_in) records.push_back(std::move(rec));
  }
  // The chain from the name asked: its records, or those of what its CNAME names, and so on.
  answer out;
  std::vector<std::string> chain{asked};
  for (std::size_t hops = 0; hops <= max_cname_chain; ++hops) {
    const auto next = std::find_if(records.begin(), records.end(), [&](const record& rec) {
      return rec.owner == chain.back() && rec.type == static_cast<std::uint16_t>(record_type::cname);
    });
    if (next == records.end()) break;
    if (std::find(chain.begin(), chain.end(), next->target) != chain.end()) return failed("a CNAME loop");
    chain.push_back(next->target);
  }
  const std::size_t size = type == record_type::a ? 4 : 16;
  for (const auto& rec : records) {
    if (rec.type != static_cast<std::uint16_t>(type) || rec.owner != chain.back()) continue;
    if (rec.data.size() != size)
      return failed("an address record of " + std::to_string(rec.data.size()) + " bytes");
    sandboxing::ip_address a;
    a.v4 = type == record_type::a;
    std::memcpy(a.bytes.data(), rec.data.data(), size);
    if (std::find(out.addresses.begin(), out.addresses.end(), a) == out.addresses.end())
      out.addresses.push_back(a);
  }
  if (out.addresses.empty() && (flags & flag_truncated)) return failed("the DNS answer was truncated");
  return out;
}

}  // namespace sandgate::egress::dns
