// /api/sandboxes/{id}/files/{path}: upload (streamed to disk), download
// (with Range), directory listings and removal, all beneath the sandbox's
// workspace (see workspace_files).
#include "router.hpp"

#include <gateway/ids.hpp>

#include <boost/beast/core/file_posix.hpp>
#include <boost/beast/http/basic_file_body.hpp>
#include <boost/url.hpp>
#include <nlohmann/json.hpp>

#include <charconv>
#include <ctime>

namespace sandgate::gateway {
namespace http = boost::beast::http;
namespace beast = boost::beast;
using json = nlohmann::json;

namespace {

// A window [offset, offset + length) of an open file, as Beast's File
// concept: basic_file_body sends it as if it were the whole file.
class file_window {
 public:
  file_window() = default;
  file_window(file_window&&) = default;
  file_window& operator=(file_window&&) = default;

  void assign(int fd, std::uint64_t offset, std::uint64_t length, beast::error_code& ec) {
    file_.native_handle(fd);
    offset_ = offset;
    length_ = length;
    file_.seek(offset, ec);
  }
  [[nodiscard]] bool is_open() const { return file_.is_open(); }
  void close(beast::error_code& ec) { file_.close(ec); }
  void open(const char*, beast::file_mode, beast::error_code& ec) {
    ec = boost::system::errc::make_error_code(boost::system::errc::operation_not_supported);
  }
  std::uint64_t size(beast::error_code& ec) const {
    ec = {};
    return length_;
  }
  std::uint64_t pos(beast::error_code& ec) const { return file_.pos(ec) - offset_; }
  void seek(std::uint64_t offset, beast::error_code& ec) { file_.seek(offset_ + offset, ec); }
  std::size_t read(void* buffer, std::size_t n, beast::error_code& ec) const {
    return file_.read(buffer, n, ec);
  }
  std::size_t write(const void*, std::size_t, beast::error_code& ec) {
    ec = boost::system::errc::make_error_code(boost::system::errc::operation_not_supported);
    return 0;
  }

 private:
  beast::file_posix file_;
  std::uint64_t offset_ = 0;
  std::uint64_t length_ = 0;
};

using window_body = http::basic_file_body<file_window>;

std::string content_type_of(const std::string& path) {
  static const std::map<std::string, std::string> types = {
      {"png", "image/png"},
      {"jpg", "image/jpeg"},
      {"jpeg", "image/jpeg"},
      {"gif", "image/gif"},
      {"webp", "image/webp"},
      {"svg", "image/svg+xml"},
      {"pdf", "application/pdf"},
      {"json", "application/json"},
      {"csv", "text/csv; charset=utf-8"},
      {"tsv", "text/tab-separated-values; charset=utf-8"},
      {"txt", "text/plain; charset=utf-8"},
      {"log", "text/plain; charset=utf-8"},
      {"md", "text/markdown; charset=utf-8"},
      {"py", "text/x-python; charset=utf-8"},
      {"ipynb", "application/x-ipynb+json"},
      {"html", "text/html; charset=utf-8"},
      {"htm", "text/html; charset=utf-8"},
      {"xml", "application/xml"},
      {"zip", "application/zip"},
      {"gz", "application/gzip"},
      {"tar", "application/x-tar"},
      {"parquet", "application/vnd.apache.parquet"},
      {"xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"}};
  const auto slash = path.rfind('/');
  const auto dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash))
    return "application/octet-stream";
  std::string ext = path.substr(dot + 1);
  for (auto& c : ext)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto it = types.find(ext);
  return it == types.end() ? "application/octet-stream" : it->second;
}

// RFC 9110's IMF-fixdate.
std::string http_date(std::time_t t) {
  std::tm utc{};
  gmtime_r(&t, &utc);
  char text[64];
  const auto n = std::strftime(text, sizeof text, "%a, %d %b %Y %H:%M:%S GMT", &utc);
  return std::string(text, n);
}

bool parse_u64(std::string_view s, std::uint64_t& out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

// One "bytes=a-b" range of a file of `size` bytes: nothing for no or
// several ranges (the whole file is sent), false when unsatisfiable.
bool parse_range(std::string_view header, std::uint64_t size,
                 std::optional<std::pair<std::uint64_t, std::uint64_t>>& range) {
  range.reset();
  if (header.substr(0, 6) != "bytes=") return true;
  header.remove_prefix(6);
  if (header.find(',') != std::string_view::npos) return true;
  const auto dash = header.find('-');
  if (dash == std::string_view::npos) return true;
  const auto first = header.substr(0, dash);
  const auto last = header.substr(dash + 1);
  std::uint64_t a = 0, b = 0;
  if (first.empty()) {  // the last N bytes
    if (!parse_u64(last, b) || b == 0) return false;
    if (size == 0) return false;
    a = b >= size ? 0 : size - b;
    range.emplace(a, size - 1);
    return true;
  }
  if (!parse_u64(first, a) || a >= size) return false;
  if (last.empty()) {
    b = size - 1;
  } else if (!parse_u64(last, b) || b < a) {
    return false;
  }
  range.emplace(a, std::min(b, size - 1));
  return true;
}

}  // namespace

std::optional<std::string> router::file_path(const context& ctx) const {
  std::string path;
  for (std::size_t i = 4; i < ctx.parts.size(); ++i) {
    if (!path.empty()) path += '/';
    path += ctx.parts[i];
  }
  domain_error err;
  return workspace_files::normalize(path, err);
}

void router::file_request(context& ctx, const std::string& sandbox_id) {
  auto s = own_sandbox(ctx, sandbox_id);
  if (!s) return;
  auto path = file_path(ctx);
  if (!path) return ctx.reply(ctx.error(http::status::bad_request, "Malformed file path"));
  const auto m = ctx.req.method();
  if (m == http::verb::delete_) return delete_file(ctx, s, *path);
  if (m == http::verb::put)  // uploads are streamed: they never get here with a body
    return ctx.reply(ctx.error(http::status::bad_request, "Malformed upload"));
  get_file(ctx, s, *path);
}

std::unique_ptr<workspace_files> router::open_files(context& ctx, const sandbox_entry& s) {
  unique_fd root(s.box->open_workspace());
  if (!root) {
    ctx.reply(
        ctx.error(http::status::conflict, "The sandbox's workspace is not available (is it starting?)"));
    return nullptr;
  }
  return std::make_unique<workspace_files>(std::move(root), s.box->owner_uid(), s.box->owner_gid());
}

void router::get_file(context& ctx, const std::shared_ptr<sandbox_entry>& s, const std::string& path) {
  s->touch();
  auto files = open_files(ctx, *s);
  if (!files) return;
  domain_error err;
  auto st = files->stat(path, err);
  if (st && S_ISDIR(st->st_mode)) {
    auto entries = files->list(path, err);
    if (!entries) return ctx.reply(ctx.error(err));
    json out = json::array();
    for (const auto& e : *entries)
      out.push_back({{"name", e.name},
                     {"type", e.type},
                     {"size", e.size},
                     {"mtime", protocol::iso8601(
                                   std::chrono::system_clock::time_point(std::chrono::seconds(e.mtime_s)))}});
    return ctx.reply(ctx.json(http::status::ok, out));
  }
  struct stat fst {};
  unique_fd fd = st ? files->open_read(path, fst, err) : unique_fd();
  if (!fd) return ctx.reply(ctx.error(err));
  serve_file(ctx, std::move(fd), static_cast<std::uint64_t>(fst.st_size), fst.st_mtim.tv_sec, path);
}

void router::serve_file(context& ctx, unique_fd fd, std::uint64_t size, std::int64_t mtime_s,
                        const std::string& path, bool truncated) {
  std::optional<std::pair<std::uint64_t, std::uint64_t>> range;
  if (!parse_range(ctx.req[http::field::range], size, range)) {
    auto res = ctx.error(http::status::range_not_satisfiable, "The range is outside the file");
    res.set(http::field::content_range, "bytes */" + std::to_string(size));
    return ctx.reply(std::move(res));
  }
  http::response<window_body> res{range ? http::status::partial_content : http::status::ok,
                                  ctx.req.version()};
  res.set(http::field::server, "sandgate");
  res.set(http::field::content_type, content_type_of(path));
  res.set(http::field::accept_ranges, "bytes");
  if (mtime_s > 0) res.set(http::field::last_modified, http_date(static_cast<std::time_t>(mtime_s)));
  if (truncated) res.set("X-Sandgate-Truncated", "true");
  res.set("X-Content-Type-Options", "nosniff");
  res.set("Content-Security-Policy", "sandbox");  // never run as the gateway's origin
  const std::uint64_t offset = range ? range->first : 0;
  const std::uint64_t length = range ? range->second - range->first + 1 : size;
  if (range)
    res.set(http::field::content_range, "bytes " + std::to_string(range->first) + "-" +
                                            std::to_string(range->second) + "/" + std::to_string(size));
  beast::error_code ec;
  file_window window;
  window.assign(fd.release(), offset, length, ec);
  if (ec)
    return ctx.reply(ctx.error(http::status::internal_server_error, "Cannot read the file: " + ec.message()));
  res.body().reset(std::move(window), ec);
  res.keep_alive(ctx.req.keep_alive());
  res.prepare_payload();
  if (ctx.req.method() == http::verb::head) {
    response head{res.result(), ctx.req.version()};
    for (const auto& f : res.base())
      head.set(f.name_string(), f.value());
    head.keep_alive(ctx.req.keep_alive());
    return ctx.reply_body(std::move(head));
  }
  ctx.reply_body(std::move(res));
}

void router::delete_file(context& ctx, const std::shared_ptr<sandbox_entry>& s, const std::string& path) {
  s->touch();
  auto files = open_files(ctx, *s);
  if (!files) return;
  domain_error err;
  if (!files->remove(path, err)) return ctx.reply(ctx.error(err));
  audit(ctx, "file.delete", {{"sandbox_id", s->id}, {"path", path}});
  ctx.reply(ctx.empty(http::status::no_content));
}

bool router::is_upload(const http::request_header<>& header) const {
  if (header.method() != http::verb::put) return false;
  auto t = boost::urls::parse_origin_form(header.target());
  if (!t) return false;
  const std::string prefix = cfg_.base_url + "api/sandboxes/";
  const std::string path = t->path();
  if (path.rfind(prefix, 0) != 0) return false;
  const auto id_end = path.find('/', prefix.size());
  if (id_end == std::string::npos) return false;
  const std::string_view rest = std::string_view(path).substr(id_end);
  return rest.starts_with("/files/") || rest == "/fs";
}

void router::begin_upload(const http::request_header<>& header, responder respond,
                          const std::function<void(upload_start)>& ready) {
  auto t = boost::urls::parse_origin_form(header.target());
  if (t && t->path().ends_with("/fs")) return begin_fs_upload(header, std::move(respond), ready);
  ready(begin_workspace_upload(header, std::move(respond)));
}

void router::abort_upload(const std::shared_ptr<upload_job>& job) {
  if (!job) return;
  if (job->files) return job->files->abort(job->upload);
  if (!job->fs_temp.empty()) job->sandbox->box->call({{"op", "file_abort"}, {"temp", job->fs_temp}}, nullptr);
}

router::upload_start router::begin_workspace_upload(const http::request_header<>& header, responder respond) {
  auto ctx = std::make_shared<context>();
  ctx->owner = this;
  ctx->req = request(http::request_header<>(header));
  upload_start out;
  auto reject = [&](response&& res) {
    add_cors(ctx->req, res.base());
    res.keep_alive(false);
    res.prepare_payload();
    out.rejection = std::move(res);
    return std::move(out);
  };
  try {
    auto t = parse_target(ctx->req.target(), cfg_.base_url);
    if (!t) return reject(ctx->error(http::status::not_found, "No such path"));
    ctx->parts = std::move(t->segments);
    const auto token = t->query.count("token") ? t->query["token"] : std::string();
    if (auto rejection = authenticate(ctx->req, token, ctx->who)) return reject(std::move(*rejection));
    const auto& p = ctx->parts;
    if (p.size() < 4 || p[0] != "api" || p[1] != "sandboxes" || p[3] != "files")
      return reject(ctx->error(http::status::not_found, "No such path"));
    auto s = is_uuid(p[2]) ? kernels_.sandboxes().find(p[2]) : nullptr;
    if (!s || !ctx->who.sees(s->owner))
      return reject(ctx->not_found("Sandbox does not exist: " + p[2],
                                   s ? std::nullopt : kernels_.sandboxes().gone(p[2])));
    auto path = file_path(*ctx);
    if (!path || path->empty())
      return reject(ctx->error(http::status::bad_request, "A file path is required"));
    const auto length = header[http::field::content_length];
    std::uint64_t declared = 0;
    if (!length.empty() && parse_u64(length, declared) && s->limits.workspace_bytes &&
        declared > s->limits.workspace_bytes)
      return reject(ctx->error(domain_error{fault::too_large, "The file (" + std::to_string(declared) +
                                                                  " bytes) is larger than the workspace (" +
                                                                  std::to_string(s->limits.workspace_bytes) +
                                                                  " bytes)"}));
    unique_fd root(s->box->open_workspace());
    if (!root) return reject(ctx->error(http::status::conflict, "The sandbox's workspace is not available"));
    auto job = std::make_shared<upload_job>();
    job->files = std::make_unique<workspace_files>(std::move(root), s->box->owner_uid(), s->box->owner_gid());
    domain_error err;
    auto upload = job->files->begin_upload(*path, err);
    if (!upload) return reject(ctx->error(err));
    s->touch();
    job->upload = std::move(*upload);
    job->sandbox = s;
    job->max_bytes = s->limits.workspace_bytes ? s->limits.workspace_bytes : cfg_.http_body_limit_bytes;
    ctx->respond = std::move(respond);
    job->context = ctx;
    out.job = std::move(job);
    return out;
  } catch (const std::exception& e) {
    return reject(
        ctx->error(http::status::internal_server_error, std::string("Internal error: ") + e.what()));
  }
}

void router::finish_upload(const std::shared_ptr<upload_job>& job, beast::error_code ec) {
  if (!job->files) return finish_fs_upload(job, ec);
  auto ctx = std::static_pointer_cast<context>(job->context);
  const auto& up = job->upload;
  if (ec) {
    const std::string path = up.path;
    job->files->abort(job->upload);
    domain_error err;
    if (ec == http::error::body_limit || ec == boost::system::errc::file_too_large)
      err = {fault::too_large,
             "The upload is larger than the workspace (" + std::to_string(job->max_bytes) + " bytes)"};
    else if (ec.category() == boost::system::system_category() ||
             ec.category() == boost::system::generic_category())
      err = errno_file_error(ec.value(), "write", path);
    else
      err = {fault::invalid, "The upload did not complete: " + ec.message()};
    auto res = ctx->error(err);
    res.keep_alive(ec != http::error::body_limit);  // past the drop limit the rest of the body is unread
    return ctx->reply(std::move(res));
  }
  struct stat st {};
  ::fstat(job->upload.file.get(), &st);
  domain_error err;
  const std::string path = up.path;
  if (!job->files->commit(job->upload, err)) return ctx->reply(ctx->error(err));
  audit(*ctx, "file.put", {{"sandbox_id", job->sandbox->id}, {"path", path}, {"size", st.st_size}});
  auto res = ctx->json(http::status::created, {{"path", path}, {"size", st.st_size}});
  res.set(http::field::location, cfg_.base_url + "api/sandboxes/" + job->sandbox->id + "/files/" + path);
  ctx->reply(std::move(res));
}

}  // namespace sandgate::gateway
