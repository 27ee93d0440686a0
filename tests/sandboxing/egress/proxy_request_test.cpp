#include "proxy_request.hpp"

#include <gtest/gtest.h>

namespace eg = sandgate::egress;
namespace http = boost::beast::http;

namespace {

http::request<http::empty_body> request(http::verb method, const char* target) {
  http::request<http::empty_body> req{method, target, 11};
  return req;
}

}  // namespace

TEST(proxy_request, authorities) {
  auto t = eg::parse_authority("Files.Example.org:8080", 80);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->host, "files.example.org");
  EXPECT_EQ(t->port, 8080);
  EXPECT_EQ(t->authority, "files.example.org:8080");
  t = eg::parse_authority("[::ffff:127.0.0.1]:443", 0);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->host, "::ffff:127.0.0.1");
  EXPECT_EQ(t->authority, "[::ffff:127.0.0.1]:443");
  t = eg::parse_authority("example.com", 80);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->authority, "example.com");
  for (const char* bad : {"", "user@host:80", "host:0", "host:65536", "host:", "::1", "[example.com]:80",
                          "host:80x", "a/b:80", "[::1", "files.test..:80", "..", ".", ".:443"})
    EXPECT_FALSE(eg::parse_authority(bad, 80)) << bad;
  EXPECT_FALSE(eg::parse_authority("example.com", 0));  // CONNECT needs a port
  // One final dot is the name's own (and dropped): the authority parses back to the same host.
  t = eg::parse_authority("Example.COM.:8080", 80);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->host, "example.com");
  EXPECT_EQ(eg::parse_authority(t->authority, 80)->host, "example.com");
}

TEST(proxy_request, connect_and_absolute_uris) {
  std::string error;
  auto t = eg::target_of(request(http::verb::connect, "secure.test:443"), error);
  ASSERT_TRUE(t) << error;
  EXPECT_TRUE(t->tunnel);
  EXPECT_EQ(t->port, 443);
  t = eg::target_of(request(http::verb::get, "http://files.test:8080/a?b=1#frag"), error);
  ASSERT_TRUE(t) << error;
  EXPECT_FALSE(t->tunnel);
  EXPECT_EQ(t->host, "files.test");
  EXPECT_EQ(t->path, "/a?b=1");
  t = eg::target_of(request(http::verb::get, "HTTP://files.test"), error);
  ASSERT_TRUE(t) << error;
  EXPECT_EQ(t->path, "/");
  EXPECT_EQ(t->port, 80);
  EXPECT_FALSE(eg::target_of(request(http::verb::get, "https://files.test/"), error));
  EXPECT_FALSE(eg::target_of(request(http::verb::get, "ftp://files.test/"), error));
  EXPECT_FALSE(eg::target_of(request(http::verb::get, "http://user:pw@files.test/"), error));
  EXPECT_FALSE(eg::target_of(request(http::verb::connect, "secure.test"), error));
}

TEST(proxy_request, origin_form_uses_host) {
  std::string error;
  auto req = request(http::verb::get, "/x");
  EXPECT_FALSE(eg::target_of(req, error));
  req.set(http::field::host, "files.test:81");
  auto t = eg::target_of(req, error);
  ASSERT_TRUE(t) << error;
  EXPECT_EQ(t->host, "files.test");
  EXPECT_EQ(t->port, 81);
}

TEST(proxy_request, upstream_head_drops_hop_by_hop_fields) {
  auto req = request(http::verb::get, "http://files.test/p");
  req.set(http::field::host, "evil.test");
  req.set(http::field::proxy_authorization, "Basic x");
  req.set("Proxy-Connection", "keep-alive");
  req.set(http::field::connection, "keep-alive, X-Secret");
  req.set("X-Secret", "1");
  req.set(http::field::user_agent, "curl");
  std::string error;
  const auto t = eg::target_of(req, error);
  ASSERT_TRUE(t);
  EXPECT_EQ(eg::upstream_head(req, *t),
            "GET /p HTTP/1.1\r\nHost: files.test\r\nUser-Agent: curl\r\nConnection: close\r\n\r\n");
}
