// The boundary between `strata view`'s server (http_server.cc, in the
// binary) and its HTTP transport (http_module.cc: cpp-httplib, built as
// libstrata_http.so and loaded on the first Bind). Debian's cpp-httplib is
// built with OpenSSL, whose initialisation ran at every start of every strata
// command (about 2.5-4.5 ms of a `strata report`'s start) though only a server
// needs it.
//
// Both sides come from the same build (same compiler, same standard library),
// so C++ types cross it; the module links nothing of strata's.
#pragma once

#include <functional>
#include <map>
#include <string>

namespace strata::server {

// An answer of the REST API (api.h), as the transport sends it.
struct ApiResponse {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
};

// True for 127.0.0.0/8, ::1 and "localhost" (both sides ask: a token is
// required elsewhere, and the Host header is checked on loopback).
inline bool IsLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

struct HttpBackendConfig {
  std::string host;   // as given (an IPv6 address may be in brackets)
  std::string token;  // required on every request when not empty
  // The UI's files: NUL-terminated, alive as long as the process.
  const char* index_html = "";
  const char* app_js = "";
  const char* views_js = "";
  const char* style_css = "";
  // An API request: method ("GET" or "POST"), path, query parameters, body.
  std::function<ApiResponse(const std::string&, const std::string&, const std::multimap<std::string, std::string>&,
                          const std::string&)>
      handle;
};

class HttpBackend {
 public:
  virtual ~HttpBackend() = default;
  // The port bound (0: a free one), or -1 with `error` set.
  virtual int Bind(int port, std::string* error) = 0;
  virtual void Run() = 0;
  virtual void Stop() = 0;
};

}  // namespace strata::server

// The module's one entry point (dlsym), versioned by its name.
inline constexpr const char* kStrataHttpEntry = "strata_http_backend_create_v1";
using StrataHttpCreate = strata::server::HttpBackend* (*)(const strata::server::HttpBackendConfig*);
