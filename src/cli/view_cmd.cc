// `strata view TRACE... [--port N] [--bind ADDR]`: serves the web UI and the
// REST API (src/server/) for the traces named, until interrupted.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/files.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "index/open_trace.h"
#include "server/api.h"
#include "server/http_server.h"

namespace strata::cli {
namespace {

struct ViewArgs {
  std::vector<std::string> traces;
  std::string bind = "127.0.0.1";
  int port = 8177;
  std::string token;
};

int RunView(const ViewArgs& a) {
  for (const std::string& t : a.traces)
    if (!PathExists(t)) return BadInput(t + ": no such trace");
  server::ServerOptions so;
  so.host = a.bind;
  so.port = a.port;
  so.token = a.token;
  // Anything but loopback is reachable by others: a token on every request.
  if (!server::IsLoopback(so.host) && so.token.empty()) so.token = server::RandomToken();
  // Left for the OS to reclaim at exit (like `strata report`'s model): the
  // thread that opens the traces may still be importing one when a signal
  // ends the server, and must not find them gone.
  auto& api = *new server::Api(a.traces, IndexOptionsForCommand());
  server::HttpServer http(api, so);
  // SIGINT and SIGTERM are taken by this thread (sigwait) to stop the server
  // cleanly; the server's threads, started after, inherit the mask.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  auto port = http.Bind();
  if (!port.ok()) {
    PrintError(port.status().message());
    return kExitOutput;
  }
  std::thread server([&http] { http.Run(); });
  // Open each trace and build what a counter lane reads (the points grouped
  // by series and their block summaries: seconds on 100M points). A trace
  // whose index is current is made ready before the URL is printed, so that
  // the first page is as fast as the next (a second or two on a 100M-event
  // trace); one that must be indexed first is prepared after, in the
  // background (the page says "opening" meanwhile).
  auto warm_one = [&api](size_t i) {
    const std::string trace = "/api/v1/traces/" + std::to_string(i);
    (void)api.Handle("GET", trace, {});
    (void)api.Handle("GET", trace + "/counters/0", {{"pixels", "1"}});
  };
  std::vector<size_t> later;
  const index::IndexOptions io = IndexOptionsForCommand();
  for (size_t i = 0; i < a.traces.size(); ++i) {
    if (index::FindCurrentIndex(a.traces[i], io).ok()) warm_one(i);
    else later.push_back(i);
  }
  std::thread warm([warm_one, later] {
    for (size_t i : later) warm_one(i);
  });
  std::string host = so.host.find(':') != std::string::npos && so.host.front() != '[' ? "[" + so.host + "]" : so.host;
  std::printf("strata view: %zu trace%s at http://%s:%d/%s\n", a.traces.size(), a.traces.size() == 1 ? "" : "s",
              host.c_str(), *port, so.token.empty() ? "" : ("?token=" + so.token).c_str());
  std::printf("(Ctrl-C stops it)\n");
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  http.Stop();
  server.join();
  warm.detach();  // (an import under way ends with the process; `api` outlives it)
  return kExitOk;
}

}  // namespace

void AddViewCommand(CLI::App& app) {
  auto args = std::make_shared<ViewArgs>();
  CLI::App* cmd = app.add_subcommand("view", "Open traces in the web UI: a local server for the main view, the "
                                             "timeline and the analyses, and the REST API under /api/v1");
  cmd->add_option("traces", args->traces, "trace directories or files (strata, PyTorch-profiler JSON, XSpace, LTTng)")
      ->required();
  cmd->add_option("--port", args->port, "Port to listen on (0: any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  cmd->add_option("--bind", args->bind,
                  "Address to listen on; any address but loopback requires a token on every request (printed)")
      ->capture_default_str();
  cmd->add_option("--token", args->token, "The token requests must carry (default: none on loopback, else random)");
  SetCommandHelp(cmd, "strata view [OPTIONS] TRACE...",
                 "  strata view mytrace                      open http://127.0.0.1:8177/ in a browser\n"
                 "  strata view --port 0 run1 run2           two traces, any free port\n"
                 "  strata view --bind 0.0.0.0 mytrace       reachable from other machines, with a token\n"
                 "  curl 127.0.0.1:8177/api/v1/traces/0/steps   the REST API (docs/api/openapi.yaml)");
  cmd->callback([args]() { throw CLI::RuntimeError(RunView(*args)); });
}

}  // namespace strata::cli
