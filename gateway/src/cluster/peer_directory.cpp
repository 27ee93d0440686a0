#include "peer_directory.hpp"

#include <gateway/log.hpp>

#include <boost/url/parse.hpp>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace sandgate::gateway {

namespace {

peer parse_one(std::string_view node_text, std::string_view url) {
  const std::string item = std::string(node_text) + "=" + std::string(url);
  unsigned node = 0;
  const auto [end, ec] = std::from_chars(node_text.data(), node_text.data() + node_text.size(), node);
  if (ec != std::errc() || end != node_text.data() + node_text.size() || node > 0xffff)
    throw std::invalid_argument("peer " + item + ": the node must be a number from 0 to 65535");
  auto parsed = boost::urls::parse_absolute_uri(url);
  if (!parsed) throw std::invalid_argument("peer " + item + ": not a URL");
  if (parsed->scheme() != "http")
    throw std::invalid_argument("peer " + item + ": only http:// peers are supported");
  if (parsed->host().empty()) throw std::invalid_argument("peer " + item + ": the URL has no host");
  peer p;
  p.node = static_cast<std::uint16_t>(node);
  p.url = std::string(url);
  p.host = parsed->host_address();  // without the brackets of an IPv6 literal
  p.port = parsed->has_port() ? std::string(parsed->port()) : "80";
  p.base = parsed->path().empty() ? "/" : std::string(parsed->path());
  if (p.base.back() != '/') p.base += '/';
  return p;
}

}  // namespace

std::vector<peer> parse_peers(std::string_view text) {
  std::vector<peer> out;
  std::set<std::uint16_t> seen;
  std::istringstream lines{std::string(text)};
  for (std::string line; std::getline(lines, line);) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::replace(line.begin(), line.end(), ',', ' ');
    std::istringstream words(line);
    std::vector<std::string> items;
    for (std::string w; words >> w;)
      items.push_back(w);
    for (std::size_t i = 0; i < items.size(); ++i) {
      std::string node_text, url;
      if (auto eq = items[i].find('='); eq != std::string::npos) {
        node_text = items[i].substr(0, eq);
        url = items[i].substr(eq + 1);
      } else if (i + 1 < items.size()) {  // "N URL"
        node_text = items[i];
        url = items[++i];
      } else {
        throw std::invalid_argument("peer " + items[i] + ": expected N=URL or 'N URL'");
      }
      auto p = parse_one(node_text, url);
      if (!seen.insert(p.node).second)
        throw std::invalid_argument("peer node " + std::to_string(p.node) + " is listed twice");
      out.push_back(std::move(p));
    }
  }
  return out;
}

peer_directory::peer_directory(std::uint16_t self, const std::string& inline_peers,
                               std::filesystem::path file)
    : self_(self), inline_(parse_peers(inline_peers)), file_(std::move(file)) {
  if (!file_.empty()) {
    std::error_code ec;
    file_time_ = std::filesystem::last_write_time(file_, ec);
    if (ec) throw std::invalid_argument("--peers-file " + file_.string() + ": " + ec.message());
    from_file_ = read_file();
  }
  merge();
}

std::vector<peer> peer_directory::read_file() const {
  std::ifstream in(file_);
  if (!in) throw std::invalid_argument("--peers-file " + file_.string() + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  return parse_peers(text.str());
}

void peer_directory::merge() {
  all_.clear();
  std::set<std::uint16_t> seen{self_};
  for (const auto* list : {&inline_, &from_file_})
    for (const auto& p : *list)
      if (seen.insert(p.node).second) all_.push_back(p);
}

const std::vector<peer>& peer_directory::peers() {
  if (file_.empty()) return all_;
  std::error_code ec;
  const auto t = std::filesystem::last_write_time(file_, ec);
  if (ec || t == file_time_) {
    if (ec && !file_error_logged_) {
      log::warn("peers_file_unreadable", {{"path", file_.string()}, {"error", ec.message()}});
      file_error_logged_ = true;
    }
    return all_;
  }
  file_time_ = t;  // a file that is wrong is read again once it changes again
  file_error_logged_ = false;
  try {
    from_file_ = read_file();
    merge();
    log::info("peers_changed", {{"path", file_.string()}, {"peers", std::to_string(all_.size())}});
  } catch (const std::exception& e) {
    log::warn("peers_file_rejected", {{"path", file_.string()}, {"error", e.what()}});
  }
  return all_;
}

}  // namespace sandgate::gateway
