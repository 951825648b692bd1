// The Python stack of a sampled thread, read by the kernel at the instant of
// its CPU sample (a BPF program attached to strata's cpu-clock events), so
// that a sample's Python frames and the op it falls in are of the same moment.
//
// Why in the kernel: in CPython 3.11 the frames live in each thread's
// heap-allocated data stack and change with every call; the supervisor reads
// a sample milliseconds after it was taken, when the thread has moved on (the
// fallback without privilege, python_stacks.cc, does exactly that). Here the
// sampled thread is stopped in its timer interrupt while we walk its frames.
//
// For each sample of a thread of an interpreter the supervisor registered
// (`procs`: pid -> address of _PyRuntime), the program finds the thread's
// PyThreadState (cached in `tstates`, checked against native_thread_id), walks
// cframe->current_frame and the `previous` links, and writes one record to
// the CPU's ring (`out`, a BPF_OUTPUT event sharing the ring of the sample,
// written just before the sample itself):
//
//   u32 magic 'PYST' | u32 tid | u32 pid | u32 frames | frames x { u64 code, u64 prev_instr }
//
// The supervisor names code objects and turns prev_instr into a line later:
// code objects live as long as their function, unlike the frames. Offsets
// come from `layout` (filled from python311_layout.c, the interpreter's own
// headers), so nothing here is tied to one build of CPython.
//
// Built with clang -target bpf (see CMakeLists.txt); loaded by python_bpf.cc.
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <bpf/bpf_helpers.h>

#define MAX_FRAMES 128  // a power of two: the index mask below
#define MAX_THREADS 256 // PyThreadStates scanned for an unknown thread
#define RECORD_MAGIC 0x54535950u  // "PYST"

struct layout {
  __u64 runtime_interpreters_head;
  __u64 interp_threads_head;
  __u64 tstate_next;
  __u64 tstate_native_thread_id;
  __u64 tstate_cframe;
  __u64 cframe_current_frame;
  __u64 frame_code;
  __u64 frame_previous;
  __u64 frame_prev_instr;
};

struct frame_out {
  __u64 code;
  __u64 prev_instr;
};

struct record {
  __u32 magic;
  __u32 tid;
  __u32 pid;
  __u32 frames;
  struct frame_out frame[MAX_FRAMES];
  // Not sent: the first 64 bytes of the frame being read. One read per frame
  // instead of one per field (each costs a fault-tolerant user copy); the
  // loader checks that f_code, previous and prev_instr lie within them.
  __u64 frame_head[8];
};

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct layout);
} layout SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, __u32);    // pid
  __type(value, __u64);  // address of _PyRuntime in that process
} procs SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 16384);
  __type(key, __u64);    // pid << 32 | tid
  __type(value, __u64);  // its PyThreadState
} tstates SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct record);
} scratch SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
  __uint(key_size, sizeof(__u32));
  __uint(value_size, sizeof(__u32));
} out SEC(".maps");

static __always_inline __u64 read_u64(__u64 addr) {
  __u64 v = 0;
  if (bpf_probe_read_user(&v, sizeof v, (const void*)addr) != 0) return 0;
  return v;
}

static __always_inline __u64 find_tstate(const struct layout* l, __u64 runtime, __u32 pid, __u32 tid) {
  __u64 key = ((__u64)pid << 32) | tid;
  __u64* cached = bpf_map_lookup_elem(&tstates, &key);
  if (cached && *cached && read_u64(*cached + l->tstate_native_thread_id) == tid) return *cached;
  __u64 interp = read_u64(runtime + l->runtime_interpreters_head);
  if (!interp) return 0;
  __u64 ts = read_u64(interp + l->interp_threads_head);
  for (int i = 0; i < MAX_THREADS && ts; ++i) {
    if (read_u64(ts + l->tstate_native_thread_id) == tid) {
      bpf_map_update_elem(&tstates, &key, &ts, BPF_ANY);
      return ts;
    }
    ts = read_u64(ts + l->tstate_next);
  }
  return 0;
}

SEC("perf_event")
int python_stack(struct bpf_perf_event_data* ctx) {
  __u64 id = bpf_get_current_pid_tgid();
  __u32 pid = id >> 32, tid = (__u32)id;
  __u64* runtime = bpf_map_lookup_elem(&procs, &pid);
  if (!runtime) return 1;  // 1: the sample itself is written as usual
  __u32 zero = 0;
  const struct layout* l = bpf_map_lookup_elem(&layout, &zero);
  struct record* r = bpf_map_lookup_elem(&scratch, &zero);
  if (!l || !r) return 1;
  __u64 ts = find_tstate(l, *runtime, pid, tid);
  if (!ts) return 1;  // not a Python thread (torch's pool, strata's own)
  __u64 cframe = read_u64(ts + l->tstate_cframe);
  __u64 frame = cframe ? read_u64(cframe + l->cframe_current_frame) : 0;
  __u32 n = 0;
  for (int i = 0; i < MAX_FRAMES && frame; ++i) {
    if (bpf_probe_read_user(r->frame_head, sizeof r->frame_head, (const void*)frame) != 0) break;
    __u64 code = r->frame_head[(l->frame_code / 8) & 7];
    if (!code) break;
    r->frame[i & (MAX_FRAMES - 1)].code = code;
    r->frame[i & (MAX_FRAMES - 1)].prev_instr = r->frame_head[(l->frame_prev_instr / 8) & 7];
    n = i + 1;
    frame = r->frame_head[(l->frame_previous / 8) & 7];
  }
  r->magic = RECORD_MAGIC;
  r->tid = tid;
  r->pid = pid;
  r->frames = n;
  __u64 size = 16 + (__u64)n * sizeof(struct frame_out);
  if (size > 16 + sizeof r->frame) size = 16 + sizeof r->frame;
  bpf_perf_event_output(ctx, &out, BPF_F_CURRENT_CPU, r, size);
  return 1;
}

// The kernel lets only GPL-compatible programs read user memory and write perf records.
char LICENSE[] SEC("license") = "Dual BSD/GPL";
