#include "sandboxing/control_protocol.hpp"

#include <gtest/gtest.h>

namespace control = sandgate::sandboxing::control;
using json = nlohmann::json;

TEST(control_protocol, frame_is_big_endian_length_then_json) {
  const std::string frame = control::encode_frame(json{{"op", "ping"}});
  ASSERT_GE(frame.size(), 4u);
  const std::string body = R"({"op":"ping"})";
  EXPECT_EQ(frame, std::string("\0\0\0\x0d", 4) + body);
}

TEST(control_protocol, decodes_frames_fed_one_byte_at_a_time) {
  const std::string stream = control::encode_frame(json{{"a", 1}}) + control::encode_frame(json{{"b", 2}});
  control::frame_decoder decoder;
  std::vector<json> messages;
  std::error_code ec;
  for (char c : stream) {
    decoder.feed(std::string_view(&c, 1));
    while (auto m = decoder.next(ec))
      messages.push_back(*m);
    ASSERT_FALSE(ec);
  }
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[0]["a"], 1);
  EXPECT_EQ(messages[1]["b"], 2);
  EXPECT_EQ(decoder.buffered_bytes(), 0u);
}

TEST(control_protocol, refuses_oversized_frames_before_reading_them) {
  control::frame_decoder decoder;
  decoder.feed(std::string("\x00\x10\x00\x01", 4));
  std::error_code ec;
  EXPECT_FALSE(decoder.next(ec));
  EXPECT_EQ(ec, control::frame_errc::frame_too_large);
  EXPECT_THROW(control::encode_frame(json{{"x", std::string(control::max_frame_bytes, 'x')}}),
               std::length_error);
}

TEST(control_protocol, refuses_text_that_is_not_a_json_object) {
  for (const auto& [body, expected] :
       {std::pair<std::string, control::frame_errc>{"{oops", control::frame_errc::not_json},
        {"[1,2]", control::frame_errc::not_an_object}}) {
    control::frame_decoder decoder;
    const auto n = static_cast<char>(body.size());
    decoder.feed(std::string("\0\0\0", 3) + n + body);
    std::error_code ec;
    EXPECT_FALSE(decoder.next(ec));
    EXPECT_EQ(ec, expected) << body;
  }
}

TEST(control_protocol, messages_round_trip) {
  control::spawn_request spawn{
      7, "k1", {"python3", "-c", "1"}, {{"A", "b"}}, "/workspace", "/run/sandgate/k1.log"};
  const auto spawn2 = json(spawn).get<control::spawn_request>();
  EXPECT_EQ(json(spawn)["op"], "spawn");
  EXPECT_EQ(spawn2.req, 7u);
  EXPECT_EQ(spawn2.argv, spawn.argv);
  EXPECT_EQ(spawn2.env, spawn.env);
  EXPECT_EQ(spawn2.log, spawn.log);

  const auto sig = json(control::signal_request{3, "k1", 2, true}).get<control::signal_request>();
  EXPECT_EQ(sig.signal, 2);
  EXPECT_TRUE(sig.group);

  control::ready_event ready{"sb", 10, 9, 200001, 200001, 1700000000, 600, {"k1"}};
  const auto ready2 = json(ready).get<control::ready_event>();
  EXPECT_EQ(json(ready)["event"], "ready");
  EXPECT_EQ(ready2.host_uid, 200001u);
  EXPECT_EQ(ready2.max_execution_s, 600u);
  EXPECT_EQ(ready2.children, std::vector<std::string>{"k1"});

  control::exit_event oom{"k1", std::nullopt, 9, true};
  EXPECT_EQ(json(oom), (json{{"event", "exit"}, {"id", "k1"}, {"signal", 9}, {"oom", true}}));
  control::exit_event code{"k1", 3, std::nullopt, false};
  EXPECT_EQ(json(code), (json{{"event", "exit"}, {"id", "k1"}, {"code", 3}}));

  control::reply failed{4, false, std::nullopt, "no"};
  EXPECT_EQ(json(failed), (json{{"req", 4}, {"ok", false}, {"error", "no"}}));
  EXPECT_EQ(json(control::reply{5, true, 42, ""}), (json{{"req", 5}, {"ok", true}, {"pid", 42}}));
}
