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

TEST(control_protocol, spawn_without_the_command_fields_keeps_the_old_meaning) {
  const auto spawn =
      json::parse(R"({"op":"spawn","req":1,"id":"k1","argv":["python3"]})").get<control::spawn_request>();
  EXPECT_FALSE(spawn.capture);
  EXPECT_EQ(spawn.output_limit_bytes, 1u << 20);
  EXPECT_EQ(spawn.stdin_data, std::nullopt);
  EXPECT_EQ(spawn.timeout_ms, std::nullopt);
  EXPECT_EQ(spawn.cwd, "/workspace");
  // and an old-style request is written exactly as before
  control::spawn_request old{2, "k1", {"python3"}, {}, "/workspace", "/run/sandgate/k1.log"};
  EXPECT_EQ(json(old), json::parse(R"({"op":"spawn","req":2,"id":"k1","argv":["python3"],"env":{},
                                      "cwd":"/workspace","log":"/run/sandgate/k1.log"})"));
}

TEST(control_protocol, spawn_command_fields_round_trip) {
  control::spawn_request spawn;
  spawn.req = 9;
  spawn.id = "c1";
  spawn.argv = {"bash", "-c", "cat"};
  spawn.capture = true;
  spawn.output_limit_bytes = 4096;
  spawn.stdin_data = std::string("\0\xff binary\n", 10);
  spawn.timeout_ms = 2500;
  const json j = spawn;
  EXPECT_EQ(j["capture"], true);
  EXPECT_EQ(j["output_limit"], 4096);
  EXPECT_EQ(j["stdin"], "AP8gYmluYXJ5Cg==");
  EXPECT_EQ(j["timeout_ms"], 2500);
  const auto back = j.get<control::spawn_request>();
  EXPECT_TRUE(back.capture);
  EXPECT_EQ(back.output_limit_bytes, 4096u);
  EXPECT_EQ(back.stdin_data, spawn.stdin_data);
  EXPECT_EQ(back.timeout_ms, 2500u);
  // empty stdin is not absent stdin
  const auto empty = json::parse(R"({"id":"c","argv":["cat"],"stdin":""})").get<control::spawn_request>();
  EXPECT_EQ(empty.stdin_data, std::string());
}

TEST(control_protocol, malformed_spawn_command_fields_are_refused) {
  for (const char* text :
       {R"({"id":"c","argv":["cat"],"stdin":"%%%%"})", R"({"id":"c","argv":["cat"],"stdin":12})",
        R"({"id":"c","argv":["cat"],"timeout_ms":-1})", R"({"id":"c","argv":["cat"],"timeout_ms":1.5})",
        R"({"id":"c","argv":["cat"],"output_limit":-5})", R"({"id":"c","argv":["cat"],"capture":"yes"})"}) {
    EXPECT_ANY_THROW(json::parse(text).get<control::spawn_request>()) << text;
  }
}

TEST(control_protocol, kill_and_extend_round_trip) {
  const json kill = control::kill_request{3, "c1"};
  EXPECT_EQ(kill, (json{{"op", "kill"}, {"req", 3}, {"id", "c1"}}));
  EXPECT_EQ(kill.get<control::kill_request>().id, "c1");
  const json extend = control::extend_request{4, 1800000000};
  EXPECT_EQ(extend, (json{{"op", "extend"}, {"req", 4}, {"expires_at", 1800000000}}));
  EXPECT_EQ(extend.get<control::extend_request>().expires_at, 1800000000);
  EXPECT_ANY_THROW(json::parse(R"({"op":"extend","req":5})").get<control::extend_request>());
  EXPECT_ANY_THROW(json::parse(R"({"op":"kill","req":5})").get<control::kill_request>());
}

TEST(control_protocol, exit_event_flags_appear_only_when_set) {
  control::exit_event timed_out{"c1", std::nullopt, 9, false, true, true};
  EXPECT_EQ(json(timed_out), (json{{"event", "exit"},
                                   {"id", "c1"},
                                   {"signal", 9},
                                   {"oom", false},
                                   {"timed_out", true},
                                   {"truncated", true}}));
  const auto back = json(timed_out).get<control::exit_event>();
  EXPECT_TRUE(back.timed_out);
  EXPECT_TRUE(back.truncated);
  const auto old = json::parse(R"({"event":"exit","id":"k1","code":0})").get<control::exit_event>();
  EXPECT_FALSE(old.timed_out);
  EXPECT_FALSE(old.truncated);
}

TEST(control_protocol, output_frames_match_the_output_event) {
  const std::string data("\x00\x01 out\xfe\xff", 8);
  std::string frames;
  control::append_output_frame(frames, "c\"1", control::output_stream::standard_error, data);
  control::append_output_frame(frames, "c2", control::output_stream::standard_output, "");
  control::frame_decoder decoder;
  decoder.feed(frames);
  std::error_code ec;
  const auto first = decoder.next(ec);
  ASSERT_TRUE(first) << ec.message();
  EXPECT_EQ(*first, json(control::output_event{"c\"1", control::output_stream::standard_error, data}));
  const auto event = first->get<control::output_event>();
  EXPECT_EQ(event.id, "c\"1");
  EXPECT_EQ(event.stream, control::output_stream::standard_error);
  EXPECT_EQ(event.data, data);
  const auto second = decoder.next(ec);
  ASSERT_TRUE(second);
  EXPECT_EQ((*second)["stream"], "stdout");
  EXPECT_EQ((*second)["data"], "");
  EXPECT_ANY_THROW(
      json::parse(R"({"event":"output","id":"c","stream":"stdin","data":""})").get<control::output_event>());
}

TEST(control_protocol, a_full_output_chunk_fits_a_frame) {
  std::string frame;
  control::append_output_frame(frame, std::string(64, 'i'), control::output_stream::standard_output,
                               std::string(control::max_output_chunk_bytes, '\xff'));
  EXPECT_LT(frame.size(), control::max_frame_bytes);
  EXPECT_THROW(control::append_output_frame(frame, "c", control::output_stream::standard_output,
                                            std::string(control::max_frame_bytes, 'x')),
               std::length_error);
  EXPECT_LT(frame.size(), control::max_frame_bytes) << "a refused frame leaves the buffer as it was";
}
