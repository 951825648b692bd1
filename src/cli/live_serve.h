// `strata record --serve`: the web UI and REST API of the running program
// (server/live.h), from before it starts until the user stops strata after it
// has ended (its trace is then served like `strata view`'s).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace strata::cli {

struct LiveServeOptions {
  std::string bind = "127.0.0.1";
  int port = 8177;
  std::string token;
};

class LiveServe {
 public:
  LiveServe();
  ~LiveServe();
  // Maps the recording's control block and starts serving (threads that take
  // no signal). Prints the URL on stderr.
  Status Start(const std::string& trace_dir, const std::vector<std::string>& command, const LiveServeOptions& o,
               bool quiet);
  // The program ended: its trace is served, and the live state says so.
  void Finished(int exit_code);
  // Serves until SIGINT or SIGTERM.
  void ServeUntilStopped(bool quiet);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::cli
