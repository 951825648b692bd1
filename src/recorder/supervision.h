// `strata record`'s side of the link to the traced processes' recorders: it
// listens on the trace's socket (record_encoding.h), keeps the buffer memory
// each process hands over, and when a process ends reads what it published
// (salvage.h): its final counts if it exited normally, and its buffers' last
// records, written to the trace, if it was killed, crashed past its signal
// handler, or exec'ed.
//
// LTTng's consumer daemon makes the same promise for its applications' ring
// buffers: what reached a buffer survives the application.
#pragma once

#include <pthread.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "format/tsdl.h"
#include "recorder/salvage.h"

namespace strata::recorder {

class Supervision {
 public:
  Supervision() = default;
  ~Supervision();
  Supervision(const Supervision&) = delete;
  Supervision& operator=(const Supervision&) = delete;

  // Listens for the processes of the trace with `uuid` in `trace_dir`, from a
  // thread of its own. An error means processes keep their buffers to
  // themselves: the trace is still made, only what a killed process had
  // buffered is lost (and cannot be counted).
  Status Start(const std::string& trace_dir, const format::Uuid& uuid);

  // Once the command has exited: stops listening and accounts for every
  // process that connected, in order of arrival. Processes still alive are
  // accounted from what they published so far (end "running").
  std::vector<ProcessAccount> Finish();

  bool started() const { return listen_fd_ >= 0; }

 private:
  struct Conn {
    int sock = -1;
    int memfd = -1;
    uint64_t bytes = 0;
    uint32_t pid = 0;
    uint64_t instance = 0;
    bool ended = false;  // accounted for
    ProcessAccount account;
  };
  static void* ThreadMain(void* self);
  void Loop();
  void Accept();
  // Reads the hello (and its memfd) or sees the connection close.
  void OnReadable(Conn& c);
  // The process behind `c` is gone (or the recording is over): account for it.
  void End(Conn& c, bool recording_over);

  std::string dir_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  pthread_t thread_{};
  bool thread_running_ = false;
  std::mutex mu_;  // conns_ (the thread, then Finish after joining it)
  std::vector<Conn> conns_;
};

}  // namespace strata::recorder
