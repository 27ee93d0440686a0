// Loads fixtures/golden.json once.

#include "fixtures.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <stdexcept>

namespace sandgate::protocol::testing {

std::string base64_decode(std::string_view text) {
  static constexpr std::string_view alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  unsigned bits = 0;
  int count = 0;
  for (const char c : text) {
    if (c == '=') break;
    const auto value = alphabet.find(c);
    if (value == std::string_view::npos) throw std::invalid_argument("bad base64");
    bits = (bits << 6) | static_cast<unsigned>(value);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out.push_back(static_cast<char>((bits >> count) & 0xff));
    }
  }
  return out;
}

const std::vector<golden_case>& golden_cases() {
  static const std::vector<golden_case> cases = [] {
    std::ifstream in(SANDGATE_PROTOCOL_FIXTURES "/golden.json");
    if (!in) throw std::runtime_error("cannot open golden.json");
    const auto j = nlohmann::json::parse(in);
    std::vector<golden_case> out;
    for (const auto& c : j.at("cases")) {
      golden_case g;
      g.name = c.at("name");
      g.key = c.at("key");
      g.channel = c.at("channel");
      g.identities = c.at("identities");
      for (const auto& f : c.at("zmq_frames"))
        g.zmq_frames.push_back(base64_decode(f.get<std::string>()));
      g.signature = c.at("signature");
      g.msg_id = c.at("msg_id");
      g.msg_type = c.at("msg_type");
      g.session = c.at("session");
      g.username = c.at("username");
      g.date = c.at("date");
      g.parent_msg_id = c.at("parent_msg_id");
      g.legacy = base64_decode(c.at("legacy").at("data").get<std::string>());
      g.legacy_binary = c.at("legacy").at("binary");
      g.legacy_exact = c.at("legacy").at("exact");
      g.v1 = base64_decode(c.at("v1").get<std::string>());
      g.client_legacy = base64_decode(c.at("client_legacy").at("data").get<std::string>());
      g.client_legacy_binary = c.at("client_legacy").at("binary");
      g.client_ascii = c.at("client_legacy").at("ascii");
      out.push_back(std::move(g));
    }
    return out;
  }();
  return cases;
}

}  // namespace sandgate::protocol::testing
