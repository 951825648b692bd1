// Independent pieces of work spread over the machine's cores: the report's
// sections, the critical paths of a trace's steps. Work is taken in index
// order from a shared counter (a long item does not hold up the others), the
// calling thread works too, and the first exception thrown by an item is
// rethrown once every thread has stopped.
//
//   base::ParallelFor(items.size(), [&](size_t i) { Build(items[i]); });
//
// STRATA_THREADS=N caps the threads (1: everything on the calling thread, in
// order), else all the cores this process may run on.
#pragma once

#include <cstddef>
#include <functional>

namespace strata::base {

// Threads ParallelFor uses: STRATA_THREADS, else the CPUs in this process's
// affinity mask; at least 1.
size_t WorkerThreads();

// f(i) for every i in [0, n), on up to `threads` threads (0: WorkerThreads()).
void ParallelFor(size_t n, const std::function<void(size_t)>& f, size_t threads = 0);

}  // namespace strata::base
