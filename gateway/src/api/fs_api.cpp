// /api/sandboxes/{id}/fs: the sandbox's whole file tree as the sandbox sees
// it (absolute paths in its own view; relative ones are in /workspace),
// every operation done by its supervisor as the sandbox user (sandboxing's
// supervisor_files.cpp): what the sandbox cannot read or write, neither can
// this API. Contents come back as descriptors the supervisor opened, sent
// from here with Range support like a workspace download.
#include "router.hpp"

#include <gateway/ids.hpp>
#include <sandboxing/unique_fd.hpp>

#include <boost/url.hpp>

#include <sys/stat.h>

#include <cerrno>
#include <limits>

namespace sandgate::gateway {
namespace http = boost::beast::http;
using json = nlohmann::json;
namespace ctl = sandboxing::control;

namespace {

constexpr std::size_t max_path_bytes = 4096;

// The supervisor's refusal as the API says it: by errno, with its message (which names the path).
domain_error fs_error(const ctl::reply& r) {
  const int code = r.data.is_object() ? r.data.value("errno", 0) : 0;
  switch (code) {
    case ENOENT:
      return {fault::not_found, r.error, "no_such_path"};  // not the sandbox's own 404
    case EACCES:
    case EPERM:
    case EROFS:
      return {fault::forbidden, r.error};
    case EISDIR:
    case ENOTDIR:
    case EEXIST:
    case ENOTEMPTY:
    case EXDEV:
    case EBUSY:
    case ETXTBSY:
      return {fault::conflict, r.error};
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
    case E2BIG:
      return {fault::too_large, r.error};
    case EINVAL:
    case ENAMETOOLONG:
    case ELOOP:
      return {fault::invalid, r.error};
    default:
      return {code == 0 ? fault::conflict : fault::internal, r.error};
  }
}

bool truthy(const std::map<std::string, std::string>& query, const char* key, bool absent) {
  const auto it = query.find(key);
  if (it == query.end()) return absent;
  return it->second == "true" || it->second == "1" || it->second.empty();
}

}  // namespace

std::optional<std::string> router::fs_path(context& ctx, const char* key) {
  const auto it = ctx.query.find(key);
  if (it == ctx.query.end() || it->second.empty()) {
    ctx.reply(ctx.error(http::status::bad_request,
                        std::string("\"") + key + "\" (a path in the sandbox) is required"));
    return std::nullopt;
  }
  if (it->second.size() > max_path_bytes || it->second.find('\0') != std::string::npos) {
    ctx.reply(
        ctx.error(http::status::bad_request,
                  std::string("\"") + key + "\" must be a path of at most 4096 bytes without NUL bytes"));
    return std::nullopt;
  }
  return it->second;
}

void router::ask_files(context& ctx, const std::shared_ptr<sandbox_entry>& s, json op,
                       std::function<void(const json&)> then) {
  s->touch();
  auto self = ctx.shared_from_this();
  s->box->call(std::move(op), [self, then = std::move(then)](const ctl::reply& r) {
    if (!r.ok) return self->reply(self->error(fs_error(r)));
    then(r.data);
  });
}

void router::fs_request(context& ctx, const std::string& sandbox_id, const std::string& what) {
  auto s = own_sandbox(ctx, sandbox_id);
  if (!s) return;
  const auto m = ctx.req.method();
  if (what == "stat") return fs_stat(ctx, s);
  if (what == "list") return fs_list(ctx, s);
  if (what == "mkdir") return fs_mkdir(ctx, s);
  if (what == "rename") return fs_rename(ctx, s);
  if (m == http::verb::delete_) return fs_delete(ctx, s);
  if (m == http::verb::put)  // uploads are streamed: they never get here with a body
    return ctx.reply(ctx.error(http::status::bad_request, "Malformed upload"));
  fs_read(ctx, s);
}

void router::fs_read(context& ctx, const std::shared_ptr<sandbox_entry>& s) {
  auto path = fs_path(ctx, "path");
  if (!path) return;
  json op = {{"op", "file_open"}, {"path", *path}};
  const bool lines = ctx.query.contains("start_line") || ctx.query.contains("end_line");
  if (lines) {
    std::uint64_t first = 1, last = std::numeric_limits<std::uint64_t>::max();
    for (const auto& [key, out] :
         {std::pair<const char*, std::uint64_t*>{"start_line", &first}, {"end_line", &last}}) {
      const auto it = ctx.query.find(key);
      if (it == ctx.query.end()) continue;
      char* end = nullptr;
      errno = 0;
      const auto value = std::strtoull(it->second.c_str(), &end, 10);
      if (it->second.empty() || *end != '\0' || it->second[0] == '-' || errno != 0 || value == 0)
        return ctx.reply(ctx.error(http::status::bad_request,
                                   std::string("\"") + key + "\" must be a line number from 1"));
      *out = value;
    }
    if (last < first)
      return ctx.reply(
          ctx.error(http::status::bad_request, "\"end_line\" must not be before \"start_line\""));
    op = {{"op", "file_lines"}, {"path", *path}, {"start", first}, {"end", last}};
  }
  auto self = ctx.shared_from_this();
  ask_files(ctx, s, std::move(op), [this, self, s, name = *path, lines](const json& data) {
    const int n = data.value("fd", -1);
    std::string error;
    auto fd = s->box->copy_descriptor(n, error);
    s->box->call({{"op", "release_fd"}, {"fd", n}}, nullptr);
    if (!fd) return self->reply(self->error(http::status::conflict, error));
    serve_file(*self, std::move(fd), data.value("size", std::uint64_t{0}),
               data.value("mtime_ms", std::int64_t{0}) / 1000, lines ? "lines.txt" : name);
  });
}

void router::fs_stat(context& ctx, const std::shared_ptr<sandbox_entry>& s) {
  auto path = fs_path(ctx, "path");
  if (!path) return;
  json op = {{"op", "file_stat"}, {"path", *path}, {"follow", truthy(ctx.query, "follow", true)}};
  ask_files(ctx, s, std::move(op), [self = ctx.shared_from_this(), path = *path](const json& data) {
    json out = data;
    out["path"] = path;
    self->reply(self->json(http::status::ok, out));
  });
}

void router::fs_list(context& ctx, const std::shared_ptr<sandbox_entry>& s) {
  auto path = fs_path(ctx, "path");
  if (!path) return;
  auto self = ctx.shared_from_this();
  ask_files(ctx, s, {{"op", "file_list"}, {"path", *path}}, [this, self, s](const json& data) {
    const int n = data.value("fd", -1);
    std::string error;
    auto fd = s->box->copy_descriptor(n, error);
    s->box->call({{"op", "release_fd"}, {"fd", n}}, nullptr);
    if (!fd) return self->reply(self->error(http::status::conflict, error));
    // The listing is the supervisor's JSON array, sent as it wrote it.
    serve_file(*self, std::move(fd), data.value("size", std::uint64_t{0}), 0, "listing.json",
               data.value("truncated", false));
  });
}

void router::fs_mkdir(context& ctx, const std::shared_ptr<sandbox_entry>& s) {
  std::string error;
  auto body = body_object(ctx.req.body(), error);
  if (!body) return ctx.reply(ctx.error(http::status::bad_request, error));
  const auto& path = body->value("path", json());
  if (!path.is_string() || path.get_ref<const std::string&>().empty())
    return ctx.reply(ctx.error(http::status::bad_request, "\"path\" must be a path in the sandbox"));
  json op = {{"op", "file_mkdir"}, {"path", path}, {"parents", body->value("parents", false)}};
  auto self = ctx.shared_from_this();
  ask_files(ctx, s, std::move(op), [this, self, s, path](const json&) {
    audit(*self, "fs.mkdir", {{"sandbox_id", s->id}, {"path", path}});
    self->reply(self->json(http::status::created, {{"path", path}}));
  });
}

void router::fs_rename(context& ctx, const std::shared_ptr<sandbox_entry>& s) {
  std::string error;
  auto body = body_object(ctx.req.body(), error);
  if (!body) return ctx.reply(ctx.error(http::status::bad_request, error));
  const auto& from = body->value("from", json());
  const auto& to = body->value("to", json());
  if (!from.is_string() || !to.is_string() || from.get_ref<const std::string&>().empty() ||
      to.get_ref<const std::string&>().empty())
    return ctx.reply(
        ctx.error(http::status::bad_request, "\"from\" and \"to\" must be paths in the sandbox"));
  json op = {
      {"op", "file_rename"}, {"from", from}, {"to", to}, {"overwrite", body->value("overwrite", false)}};
  auto self = ctx.shared_from_this();
  ask_files(ctx, s, std::move(op), [this, self, s, from, to](const json&) {
    audit(*self, "fs.rename", {{"sandbox_id", s->id}, {"from", from}, {"to", to}});
    self->reply(self->json(http::status::ok, {{"path", to}}));
  });
}

void router::fs_delete(context& ctx, const std::shared_ptr<sandbox_entry>& s) {
  auto path = fs_path(ctx, "path");
  if (!path) return;
  json op = {{"op", "file_delete"},
             {"path", *path},
             {"recursive", truthy(ctx.query, "recursive", false)},
             {"files_only", truthy(ctx.query, "files_only", false)}};
  auto self = ctx.shared_from_this();
  ask_files(ctx, s, std::move(op), [this, self, s, path = *path](const json&) {
    audit(*self, "fs.delete", {{"sandbox_id", s->id}, {"path", path}});
    self->reply(self->empty(http::status::no_content));
  });
}

}  // namespace sandgate::gateway

namespace sandgate::gateway {

void router::begin_fs_upload(const http::request_header<>& header, responder respond,
                             const std::function<void(upload_start)>& ready) {
  auto ctx = std::make_shared<context>();
  ctx->owner = this;
  ctx->req = request(http::request_header<>(header));
  auto reject = [this, ctx, ready](response&& res) {
    add_cors(ctx->req, res.base());
    res.keep_alive(false);
    res.prepare_payload();
    upload_start out;
    out.rejection = std::move(res);
    ready(std::move(out));
  };
  auto t = parse_target(ctx->req.target(), cfg_.base_url);
  if (!t) return reject(ctx->error(http::status::not_found, "No such path"));
  ctx->parts = std::move(t->segments);
  ctx->query = std::move(t->query);
  const auto token = ctx->query.count("token") ? ctx->query["token"] : std::string();
  if (auto rejection = authenticate(ctx->req, token, ctx->who)) return reject(std::move(*rejection));
  const auto& p = ctx->parts;
  std::shared_ptr<sandbox_entry> s =
      p.size() == 4 && is_uuid(p[2]) ? kernels_.sandboxes().find(p[2]) : nullptr;
  if (s && s->pooled) s = nullptr;
  if (!s || !ctx->who.sees(s->owner))
    return reject(ctx->not_found("Sandbox does not exist: " + (p.size() > 2 ? p[2] : ""),
                                 s || p.size() <= 2 ? std::nullopt : kernels_.sandboxes().gone(p[2])));
  const auto path = ctx->query.find("path");
  if (path == ctx->query.end() || path->second.empty() || path->second.size() > max_path_bytes ||
      path->second.find('\0') != std::string::npos)
    return reject(
        ctx->error(http::status::bad_request, "\"path\" (a path in the sandbox, without NUL) is required"));
  json op = {{"op", "file_create"}, {"path", path->second}, {"parents", truthy(ctx->query, "parents", true)}};
  s->touch();
  s->box->call(std::move(op), [this, ctx, s, name = path->second, respond = std::move(respond), ready,
                               reject](const ctl::reply& r) mutable {
    if (!r.ok) return reject(ctx->error(fs_error(r)));
    const int n = r.data.value("fd", -1);
    std::string error;
    auto fd = s->box->copy_descriptor(n, error);
    s->box->call({{"op", "release_fd"}, {"fd", n}}, nullptr);
    if (!fd) {
      s->box->call({{"op", "file_abort"}, {"temp", r.data.value("temp", "")}}, nullptr);
      return reject(ctx->error(http::status::conflict, error));
    }
    auto job = std::make_shared<upload_job>();
    job->sandbox = s;
    job->fs_temp = r.data.value("temp", "");
    job->fs_file = std::move(fd);
    job->fs_path = name;
    job->max_bytes = std::numeric_limits<std::uint64_t>::max();  // the filesystem's own limits apply
    ctx->respond = std::move(respond);
    job->context = ctx;
    upload_start out;
    out.job = std::move(job);
    ready(std::move(out));
  });
}

void router::finish_fs_upload(const std::shared_ptr<upload_job>& job, boost::beast::error_code ec) {
  auto ctx = std::static_pointer_cast<context>(job->context);
  auto& s = job->sandbox;
  if (ec) {
    abort_upload(job);
    const domain_error err =
        ec.category() == boost::system::generic_category()
            ? errno_file_error(ec.value(), "write", job->fs_path)
            : domain_error{fault::invalid, "The upload did not complete: " + ec.message()};
    return ctx->reply(ctx->error(err));
  }
  struct stat st {};
  ::fstat(job->fs_file.get(), &st);
  job->fs_file.reset();
  s->box->call(
      {{"op", "file_commit"}, {"temp", job->fs_temp}, {"path", job->fs_path}},
      [this, ctx, job, size = st.st_size](const ctl::reply& r) {
        if (!r.ok) return ctx->reply(ctx->error(fs_error(r)));
        audit(*ctx, "fs.write", {{"sandbox_id", job->sandbox->id}, {"path", job->fs_path}, {"size", size}});
        ctx->reply(ctx->json(http::status::created, {{"path", job->fs_path}, {"size", size}}));
      });
}

}  // namespace sandgate::gateway
