#pragma once
// Golden vectors from fixtures/golden.json (made by make_fixtures.py with
// jupyter_client, Notebook and jupyter_server's serialisers).

#include <string>
#include <vector>

namespace sandgate::protocol::testing {

struct golden_case {
  std::string name;
  std::string key;
  std::string channel;
  std::size_t identities = 0;
  std::vector<std::string> zmq_frames;
  std::string signature;
  std::string msg_id, msg_type, session, username, date, parent_msg_id;
  std::string legacy;  // what the Notebook server sends a browser
  bool legacy_binary = false;
  bool legacy_exact = false;  // byte-identical (ASCII-only content)
  std::string v1;             // what jupyter_server sends with the v1 protocol
  std::string client_legacy;  // what a legacy client sends
  bool client_legacy_binary = false;
  bool client_ascii = false;
};

const std::vector<golden_case>& golden_cases();

std::string base64_decode(std::string_view text);

}  // namespace sandgate::protocol::testing
