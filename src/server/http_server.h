// The HTTP side of `strata view` (cpp-httplib): serves the UI's files, which
// are compiled into the binary (src/server/ui/), and the REST API (api.h).
//
// Safety: it binds 127.0.0.1 unless told otherwise; on a loopback address it
// answers only requests whose Host header names that address (a web page
// elsewhere cannot reach it by DNS rebinding); on any other address every
// request must carry the token (`Authorization: Bearer TOKEN` or `?token=`).
// Requests are bounded (64 KiB), only GET is served (and POST of a JSON body
// to /api/v1/record, from no other origin), and any path that is not
// one of the UI's files or an API endpoint is a 404: no file is ever read by
// the name a request gives.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "server/api.h"

namespace strata::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;       // 0: a free port the system picks
  std::string token;  // required on every request when not empty
};

// 32 hex digits from the system's random source.
std::string RandomToken();

class HttpServer {
 public:
  HttpServer(Api& api, ServerOptions opt);
  ~HttpServer();
  // Binds the address; returns the port bound.
  StatusOr<int> Bind();
  // Serves until Stop (from another thread or a signal handler's thread).
  void Run();
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::server
