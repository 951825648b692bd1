#include "server/http_server.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "base/error.h"

namespace strata::server {

// The UI's files (generated from src/server/ui/ by CMake).
extern const char kUiIndexHtml[];
extern const char kUiAppJs[];
extern const char kUiViewsJs[];
extern const char kUiStyleCss[];

namespace {

constexpr size_t kMaxRequestBytes = 64 << 10;

bool SameToken(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

void SetError(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(nlohmann::json{{"error", message}}.dump() + "\n", "application/json");
}

}  // namespace

bool IsLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

std::string RandomToken() {
  unsigned char b[16] = {};
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    size_t got = 0;
    while (got < sizeof b) {
      ssize_t n = ::read(fd, b + got, sizeof b - got);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    ::close(fd);
  }
  std::string s;
  for (unsigned char c : b) s += fmt::format("{:02x}", c);
  return s;
}

struct HttpServer::Impl {
  Api& api;
  ServerOptions opt;
  httplib::Server svr;
  int port = 0;

  Impl(Api& a, ServerOptions o) : api(a), opt(std::move(o)) {}

  // Host header names this server (loopback binds: against DNS rebinding).
  bool HostAllowed(const httplib::Request& req) const {
    if (!IsLoopback(opt.host)) return true;
    std::string host = req.get_header_value("Host");
    for (const char* name : {"127.0.0.1", "localhost", "[::1]"})
      if (host == fmt::format("{}:{}", name, port) || host == name) return true;
    return host == fmt::format("{}:{}", opt.host, port);
  }

  bool Authorized(const httplib::Request& req) const {
    if (opt.token.empty()) return true;
    std::string auth = req.get_header_value("Authorization");
    if (auth.rfind("Bearer ", 0) == 0 && SameToken(auth.substr(7), opt.token)) return true;
    return req.has_param("token") && SameToken(req.get_param_value("token"), opt.token);
  }

  void Routes() {
    svr.set_payload_max_length(kMaxRequestBytes);
    svr.set_tcp_nodelay(true);  // (headers and body are two writes: no 40 ms delayed-ACK stall)
    svr.set_read_timeout(10, 0);
    svr.set_write_timeout(30, 0);
    svr.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      res.set_header("X-Content-Type-Options", "nosniff");
      res.set_header("Cache-Control", "no-store");
      if (!HostAllowed(req)) {
        SetError(res, 403, "unexpected Host header");
        return httplib::Server::HandlerResponse::Handled;
      }
      if (!Authorized(req)) {
        SetError(res, 401, "a token is required (Authorization: Bearer TOKEN, or ?token=)");
        return httplib::Server::HandlerResponse::Handled;
      }
      if (req.method == "POST" && req.path == "/api/v1/record") {
        // Against cross-site requests from a page elsewhere: a JSON body (a
        // type a page cannot send without a CORS preflight, which is never
        // granted) and, when the browser says where the page is from, this server.
        if (req.get_header_value("Content-Type").rfind("application/json", 0) != 0) {
          SetError(res, 415, "the body must be application/json");
          return httplib::Server::HandlerResponse::Handled;
        }
        std::string origin = req.get_header_value("Origin");
        if (!origin.empty() && origin != "http://" + req.get_header_value("Host")) {
          SetError(res, 403, "a request from another origin");
          return httplib::Server::HandlerResponse::Handled;
        }
      } else if (req.method != "GET" && req.method != "HEAD") {
        SetError(res, 405, "only GET (and POST /api/v1/record)");
        return httplib::Server::HandlerResponse::Handled;
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    auto file = [this](const char* body, const char* type) {
      return [body, type](const httplib::Request&, httplib::Response& res) {
        res.set_header("Content-Security-Policy",
                       "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:");
        res.set_content(body, std::strlen(body), type);
      };
    };
    svr.Get("/", file(kUiIndexHtml, "text/html; charset=utf-8"));
    svr.Get("/index.html", file(kUiIndexHtml, "text/html; charset=utf-8"));
    svr.Get("/app.js", file(kUiAppJs, "text/javascript; charset=utf-8"));
    svr.Get("/views.js", file(kUiViewsJs, "text/javascript; charset=utf-8"));
    svr.Get("/style.css", file(kUiStyleCss, "text/css; charset=utf-8"));
    svr.Get(R"(/api/.*)", [this](const httplib::Request& req, httplib::Response& res) {
      std::multimap<std::string, std::string> params(req.params.begin(), req.params.end());
      ApiResponse r = api.Handle("GET", req.path, params);
      res.status = r.status;
      res.set_content(r.body, r.content_type.c_str());
    });
    svr.Post("/api/v1/record", [this](const httplib::Request& req, httplib::Response& res) {
      ApiResponse r = api.Handle("POST", req.path, {}, req.body);
      res.status = r.status;
      res.set_content(r.body, r.content_type.c_str());
    });
    svr.set_error_handler([](const httplib::Request&, httplib::Response& res) {
      if (res.body.empty()) {
        SetError(res, res.status, res.status == 404 ? "not found" : fmt::format("HTTP {}", res.status));
      }
    });
    svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
      SetError(res, 500, "internal error");
    });
  }
};

HttpServer::HttpServer(Api& api, ServerOptions opt) : impl_(std::make_unique<Impl>(api, std::move(opt))) {
  impl_->Routes();
}

HttpServer::~HttpServer() = default;

StatusOr<int> HttpServer::Bind() {
  std::string host = impl_->opt.host;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  int port = impl_->opt.port;
  if (port == 0) {
    port = impl_->svr.bind_to_any_port(host);
    if (port < 0) return Err(StatusCode::kUnavailable, "cannot listen on {}", impl_->opt.host);
  } else if (!impl_->svr.bind_to_port(host, port)) {
    return Err(StatusCode::kUnavailable, "cannot listen on {} port {} (in use, or not an address of this machine)",
               impl_->opt.host, port);
  }
  impl_->port = port;
  return port;
}

void HttpServer::Run() { impl_->svr.listen_after_bind(); }

void HttpServer::Stop() { impl_->svr.stop(); }

}  // namespace strata::server
