// Transparent huge pages where the kernel has them free.
//
// A large buffer written front to back once (a model column, a decoded index
// column) faults in a page at a time: on 4 KiB pages that is a fault, a page
// allocation and a page clear every 4 KiB, a third of the CPU of building an
// index here. Marked MADV_HUGEPAGE, it faults 2 MiB at a time. But in
// Debian's default THP mode ("madvise" for both enabling and defrag) a marked
// region that finds no free 2 MiB block makes the faulting thread compact
// memory first: once measured at 1 s of system time for a build that takes
// 0.1 s with free huge pages. So a region is marked only while the kernel's
// free lists (/proc/buddyinfo) hold enough free 2 MiB blocks for it, and
// marked MADV_NOHUGEPAGE otherwise (a column that grows past what is free
// stops asking for them).
#pragma once

#include <cstddef>

namespace strata::base {

// Bytes the kernel's free lists hold in blocks of at least one huge page
// (every node and zone of /proc/buddyinfo); 0 where that cannot be read.
size_t FreeHugePageBytes();

// Asks for huge pages on the 2 MiB-aligned part of [p, p + bytes) when
// FreeHugePageBytes() is at least twice that part, and for small pages
// otherwise. Regions under 8 MiB are left alone (their faults are few).
// Returns whether huge pages were asked for.
bool AdviseHugePagesIfFree(void* p, size_t bytes);

}  // namespace strata::base
