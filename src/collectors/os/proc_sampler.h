// Process counters from /proc, sampled by the supervisor at ~10 Hz for the
// traced process tree: per thread CPU time (user, system), context switches
// (voluntary, involuntary) and last CPU; per process RSS, virtual size, I/O
// bytes (all, and storage), page faults and thread count.
//
// Raw cumulative values are recorded (thread_stat / process_stat events in a
// cpu stream with cpu_id = kSupervisorCpuId); the importer turns them into
// rates. This works without any privilege: they are our own children.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "base/status.h"
#include "format/ctf_writer.h"

namespace strata::collectors::os {

class ProcSampler {
 public:
  ProcSampler(uint32_t hz, std::unique_ptr<format::StreamWriter> writer);
  ~ProcSampler();

  // Starts sampling `root` and its descendants on a thread of its own.
  void Start(pid_t root);
  // Takes a last sample, stops, and closes the stream.
  Status Stop();

  // One pass over the tree (used by Start's thread; public for tests).
  void SampleOnce();

  uint64_t samples() const { return samples_; }

 private:
  void Run();
  void Discover();

  uint32_t hz_;
  std::unique_ptr<format::StreamWriter> writer_;
  pid_t root_ = 0;
  std::set<pid_t> pids_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  uint64_t samples_ = 0;
  int64_t ns_per_tick_ = 10000000;
  Status status_;
};

}  // namespace strata::collectors::os
