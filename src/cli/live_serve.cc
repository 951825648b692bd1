#include "cli/live_serve.h"

#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <thread>

#include "cli/commands.h"
#include "server/api.h"
#include "server/http_server.h"
#include "server/live.h"

namespace strata::cli {

struct LiveServe::Impl {
  std::string dir;
  std::unique_ptr<server::Api> api;
  std::unique_ptr<server::LiveRun> live;
  std::unique_ptr<server::HttpServer> http;
  std::thread thread;
  std::string url;
};

LiveServe::LiveServe() : impl_(std::make_unique<Impl>()) {}

LiveServe::~LiveServe() {
  if (impl_->http) impl_->http->Stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

Status LiveServe::Start(const std::string& trace_dir, const std::vector<std::string>& command,
                        const LiveServeOptions& o, bool quiet) {
  std::string cmdline;
  for (const std::string& a : command) cmdline += (cmdline.empty() ? "" : " ") + a;
  STRATA_ASSIGN_OR_RETURN(impl_->live, server::LiveRun::Open(trace_dir, cmdline));
  impl_->dir = trace_dir;
  impl_->api = std::make_unique<server::Api>(std::vector<std::string>{}, IndexOptionsForCommand());
  impl_->api->SetLive(impl_->live.get());
  server::ServerOptions so;
  so.host = o.bind;
  so.port = o.port;
  so.token = o.token;
  if (!server::IsLoopback(so.host) && so.token.empty()) so.token = server::RandomToken();
  impl_->http = std::make_unique<server::HttpServer>(*impl_->api, so);
  STRATA_ASSIGN_OR_RETURN(int port, impl_->http->Bind());
  std::string host = so.host.find(':') != std::string::npos && so.host.front() != '[' ? "[" + so.host + "]" : so.host;
  impl_->url = "http://" + host + ":" + std::to_string(port) + "/" + (so.token.empty() ? "" : "?token=" + so.token);
  // The server's threads take no signal: the supervisor's handlers forward them to the program.
  sigset_t all, before;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &before);
  impl_->thread = std::thread([h = impl_->http.get()] { h->Run(); });
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  if (!quiet) std::fprintf(stderr, "strata: serving the live run at %s\n", impl_->url.c_str());
  return OkStatus();
}

void LiveServe::Finished(int exit_code) {
  size_t id = impl_->api->AddTrace(impl_->dir);
  impl_->live->Finished(exit_code, id);
}

void LiveServe::ServeUntilStopped(bool quiet) {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  if (!quiet) {
    std::fprintf(stderr, "strata: the trace is served at %s (Ctrl-C stops it)\n", impl_->url.c_str());
    std::fflush(stderr);
  }
  // Open (and index) the trace now rather than on the page's first request.
  std::thread warm([api = impl_->api.get()] { (void)api->Handle("GET", "/api/v1/traces/0", {}); });
  int sig = 0;
  sigwait(&stop, &sig);
  impl_->http->Stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  warm.join();
}

}  // namespace strata::cli
