// libstrata_http.so: `strata view`'s HTTP transport over cpp-httplib (see
// http_backend.h for why it is a module). The policy (who may ask what) is
// here; the answers come from the binary through HttpBackendConfig::handle.
#include <cstring>

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/http_backend.h"

namespace strata::server {
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

class Backend final : public HttpBackend {
 public:
  explicit Backend(HttpBackendConfig cfg) : cfg_(std::move(cfg)) { Routes(); }

  int Bind(int port, std::string* error) override {
    std::string host = cfg_.host;
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    if (port == 0) {
      port = svr_.bind_to_any_port(host);
      if (port < 0) {
        *error = fmt::format("cannot listen on {}", cfg_.host);
        return -1;
      }
    } else if (!svr_.bind_to_port(host, port)) {
      *error = fmt::format("cannot listen on {} port {} (in use, or not an address of this machine)", cfg_.host, port);
      return -1;
    }
    port_ = port;
    return port;
  }
  void Run() override { svr_.listen_after_bind(); }
  void Stop() override { svr_.stop(); }

 private:
  // Host header names this server (loopback binds: against DNS rebinding).
  bool HostAllowed(const httplib::Request& req) const {
    if (!IsLoopback(cfg_.host)) return true;
    std::string host = req.get_header_value("Host");
    for (const char* name : {"127.0.0.1", "localhost", "[::1]"})
      if (host == fmt::format("{}:{}", name, port_) || host == name) return true;
    return host == fmt::format("{}:{}", cfg_.host, port_);
  }

  bool Authorized(const httplib::Request& req) const {
    if (cfg_.token.empty()) return true;
    std::string auth = req.get_header_value("Authorization");
    if (auth.rfind("Bearer ", 0) == 0 && SameToken(auth.substr(7), cfg_.token)) return true;
    return req.has_param("token") && SameToken(req.get_param_value("token"), cfg_.token);
  }

  static void Answer(const ApiResponse& r, httplib::Response& res) {
    res.status = r.status;
    res.set_content(r.body, r.content_type.c_str());
  }

  void Routes() {
    svr_.set_payload_max_length(kMaxRequestBytes);
    svr_.set_tcp_nodelay(true);  // (headers and body are two writes: no 40 ms delayed-ACK stall)
    svr_.set_read_timeout(10, 0);
    svr_.set_write_timeout(30, 0);
    svr_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
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
    auto file = [](const char* body, const char* type) {
      return [body, type](const httplib::Request&, httplib::Response& res) {
        res.set_header("Content-Security-Policy",
                       "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:");
        res.set_content(body, std::strlen(body), type);
      };
    };
    svr_.Get("/", file(cfg_.index_html, "text/html; charset=utf-8"));
    svr_.Get("/index.html", file(cfg_.index_html, "text/html; charset=utf-8"));
    svr_.Get("/app.js", file(cfg_.app_js, "text/javascript; charset=utf-8"));
    svr_.Get("/views.js", file(cfg_.views_js, "text/javascript; charset=utf-8"));
    svr_.Get("/style.css", file(cfg_.style_css, "text/css; charset=utf-8"));
    svr_.Get(R"(/api/.*)", [this](const httplib::Request& req, httplib::Response& res) {
      std::multimap<std::string, std::string> params(req.params.begin(), req.params.end());
      Answer(cfg_.handle("GET", req.path, params, std::string()), res);
    });
    svr_.Post("/api/v1/record", [this](const httplib::Request& req, httplib::Response& res) {
      Answer(cfg_.handle("POST", req.path, {}, req.body), res);
    });
    svr_.set_error_handler([](const httplib::Request&, httplib::Response& res) {
      if (res.body.empty()) {
        SetError(res, res.status, res.status == 404 ? "not found" : fmt::format("HTTP {}", res.status));
      }
    });
    svr_.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
      SetError(res, 500, "internal error");
    });
  }

  HttpBackendConfig cfg_;
  httplib::Server svr_;
  int port_ = 0;
};

}  // namespace
}  // namespace strata::server

extern "C" __attribute__((visibility("default"))) strata::server::HttpBackend* strata_http_backend_create_v1(
    const strata::server::HttpBackendConfig* cfg) {
  try {
    return new strata::server::Backend(*cfg);
  } catch (...) {
    return nullptr;
  }
}
