// A hand-written OpenCL pipeline, run unmodified under `strata record` by the
// OpenCL tests: several kernels chained by events, writes, reads, a copy, a
// fill, a map/unmap, a marker and a barrier on two in-order queues, waits with
// clWaitForEvents and clFinish. It asks for no profiling and passes NULL for
// most events, like ordinary programs do. It checks its own results, and prints
// what it enqueued so that the tests can compare the trace with it:
//
//   cl_pipeline [ITERATIONS] [N]        -> "expect kernels=.. writes=.. ..." lines
//   cl_pipeline --loop K [STEPS]        -> K tiny kernels, "per_enqueue_us=X" (benchmark); with
//                                          STEPS, in that many steps (each ends with a clFinish),
//                                          marked through strata's C API when strata records
//                                          (found at run time: the program does not link it)
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <dlfcn.h>
#include <time.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CK(x)                                                                     \
  do {                                                                            \
    cl_int e_ = (x);                                                              \
    if (e_ != CL_SUCCESS) {                                                       \
      std::fprintf(stderr, "cl_pipeline: %s:%d %s -> %d\n", __FILE__, __LINE__, #x, e_); \
      std::exit(1);                                                               \
    }                                                                             \
  } while (0)

namespace {

const char* kSource = R"CLC(
__kernel void scale(__global float* x, float a) { size_t i = get_global_id(0); x[i] *= a; }
__kernel void add(__global const float* a, __global const float* b, __global float* c) {
  size_t i = get_global_id(0); c[i] = a[i] + b[i];
}
__kernel void partial_sum(__global const float* x, __global float* out, __local float* tmp) {
  size_t l = get_local_id(0), g = get_global_id(0), n = get_local_size(0);
  tmp[l] = x[g];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t s = n / 2; s > 0; s >>= 1) {
    if (l < s) tmp[l] += tmp[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) out[get_group_id(0)] = tmp[0];
}
__kernel void inc(__global float* x) { size_t i = get_global_id(0); x[i] += 1.0f; }
)CLC";

double Now() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

struct Cl {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  cl_context ctx = nullptr;
  cl_program prog = nullptr;
};

Cl Setup() {
  Cl c;
  cl_int err;
  CK(clGetPlatformIDs(1, &c.platform, nullptr));
  CK(clGetDeviceIDs(c.platform, CL_DEVICE_TYPE_ALL, 1, &c.device, nullptr));
  c.ctx = clCreateContext(nullptr, 1, &c.device, nullptr, nullptr, &err);
  CK(err);
  c.prog = clCreateProgramWithSource(c.ctx, 1, &kSource, nullptr, &err);
  CK(err);
  CK(clBuildProgram(c.prog, 1, &c.device, "", nullptr, nullptr));
  return c;
}

cl_kernel Kernel(const Cl& c, const char* name) {
  cl_int err;
  cl_kernel k = clCreateKernel(c.prog, name, &err);
  CK(err);
  return k;
}

// --loop K [STEPS]: the benchmark's workload (10k tiny kernels, no events, one
// clFinish per step).
int Loop(int k_count, int steps) {
  using StepFn = void (*)(uint64_t);
  auto step_begin = reinterpret_cast<StepFn>(dlsym(RTLD_DEFAULT, "strata_step_begin_"));
  auto step_end = reinterpret_cast<StepFn>(dlsym(RTLD_DEFAULT, "strata_step_end_"));
  if (steps < 1) steps = 1;
  Cl c = Setup();
  cl_int err;
  cl_command_queue q = clCreateCommandQueueWithProperties(c.ctx, c.device, nullptr, &err);
  CK(err);
  cl_kernel k = Kernel(c, "inc");
  size_t n = 64;
  cl_mem buf = clCreateBuffer(c.ctx, CL_MEM_READ_WRITE, n * sizeof(float), nullptr, &err);
  CK(err);
  float zero = 0;
  CK(clEnqueueFillBuffer(q, buf, &zero, sizeof zero, 0, n * sizeof(float), 0, nullptr, nullptr));
  CK(clSetKernelArg(k, 0, sizeof buf, &buf));
  for (int i = 0; i < 100; ++i) CK(clEnqueueNDRangeKernel(q, k, 1, nullptr, &n, nullptr, 0, nullptr, nullptr));
  CK(clFinish(q));
  double t0 = Now();
  for (int s = 0; s < steps; ++s) {
    if (step_begin) step_begin(static_cast<uint64_t>(s));
    for (int i = s * k_count / steps; i < (s + 1) * k_count / steps; ++i)
      CK(clEnqueueNDRangeKernel(q, k, 1, nullptr, &n, nullptr, 0, nullptr, nullptr));
    CK(clFinish(q));
    if (step_end) step_end(static_cast<uint64_t>(s));
  }
  double t1 = Now();
  float host = 0;
  CK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof host, &host, 0, nullptr, nullptr));
  if (host != static_cast<float>(k_count + 100)) {
    std::fprintf(stderr, "cl_pipeline: wrong result %g\n", static_cast<double>(host));
    return 1;
  }
  std::printf("per_enqueue_us=%.3f\n", (t1 - t0) * 1e6 / k_count);
  clReleaseMemObject(buf);
  clReleaseKernel(k);
  clReleaseCommandQueue(q);
  clReleaseProgram(c.prog);
  clReleaseContext(c.ctx);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 2 && std::strcmp(argv[1], "--loop") == 0) return Loop(std::atoi(argv[2]), argc > 3 ? std::atoi(argv[3]) : 1);
  int iterations = argc > 1 ? std::atoi(argv[1]) : 3;
  size_t n = argc > 2 ? static_cast<size_t>(std::atol(argv[2])) : 4096;
  const size_t group = 64;
  n = (n + group - 1) / group * group;
  const size_t bytes = n * sizeof(float);
  const size_t groups = n / group;

  Cl c = Setup();
  cl_int err;
  // Two queues, as a program overlapping transfers and compute would use:
  // the 1.x entry point and the 2.0 one, neither asking for profiling.
  cl_command_queue q = clCreateCommandQueue(c.ctx, c.device, 0, &err);
  CK(err);
  cl_command_queue q2 = clCreateCommandQueueWithProperties(c.ctx, c.device, nullptr, &err);
  CK(err);
  cl_command_queue_properties seen = 0;
  CK(clGetCommandQueueInfo(q, CL_QUEUE_PROPERTIES, sizeof seen, &seen, nullptr));
  if (seen & CL_QUEUE_PROFILING_ENABLE) {
    std::fprintf(stderr, "cl_pipeline: the queue reports profiling the program did not ask for\n");
    return 1;
  }
  cl_kernel scale = Kernel(c, "scale"), add = Kernel(c, "add"), psum = Kernel(c, "partial_sum");

  std::vector<float> ha(n), hb(n), hc(n), hsum(groups);
  for (size_t i = 0; i < n; ++i) {
    ha[i] = static_cast<float>(i % 97) * 0.5f;
    hb[i] = static_cast<float>(i % 13);
  }
  cl_mem a = clCreateBuffer(c.ctx, CL_MEM_READ_WRITE, bytes, nullptr, &err);
  CK(err);
  cl_mem b = clCreateBuffer(c.ctx, CL_MEM_READ_WRITE, bytes, nullptr, &err);
  CK(err);
  cl_mem sum = clCreateBuffer(c.ctx, CL_MEM_READ_WRITE, bytes, nullptr, &err);
  CK(err);
  cl_mem parts = clCreateBuffer(c.ctx, CL_MEM_READ_WRITE, groups * sizeof(float), nullptr, &err);
  CK(err);
  cl_mem scratch = clCreateBuffer(c.ctx, CL_MEM_READ_WRITE, bytes, nullptr, &err);
  CK(err);

  int kernels = 0, writes = 0, reads = 0, copies = 0, fills = 0, maps = 0, unmaps = 0, markers = 0, barriers = 0;
  unsigned long long written = 0, read = 0, copied = 0, filled = 0, mapped = 0;
  float factor = 2.0f;
  double expect_total = 0;
  for (int it = 0; it < iterations; ++it) {
    // Upload: one non-blocking write with an event the program waits on, one blocking write.
    cl_event wrote_a = nullptr;
    CK(clEnqueueWriteBuffer(q2, a, CL_FALSE, 0, bytes, ha.data(), 0, nullptr, &wrote_a));
    CK(clEnqueueWriteBuffer(q, b, CL_TRUE, 0, bytes, hb.data(), 0, nullptr, nullptr));
    writes += 2;
    written += 2ull * bytes;
    float zero = 0;
    CK(clEnqueueFillBuffer(q, scratch, &zero, sizeof zero, 0, bytes, 0, nullptr, nullptr));
    ++fills;
    filled += bytes;
    // Compute chain on q, the first kernel waiting for q2's upload.
    CK(clSetKernelArg(scale, 0, sizeof a, &a));
    CK(clSetKernelArg(scale, 1, sizeof factor, &factor));
    cl_event scaled = nullptr;
    CK(clEnqueueNDRangeKernel(q, scale, 1, nullptr, &n, &group, 1, &wrote_a, &scaled));
    CK(clSetKernelArg(add, 0, sizeof a, &a));
    CK(clSetKernelArg(add, 1, sizeof b, &b));
    CK(clSetKernelArg(add, 2, sizeof sum, &sum));
    CK(clEnqueueNDRangeKernel(q, add, 1, nullptr, &n, nullptr, 1, &scaled, nullptr));
    CK(clEnqueueMarkerWithWaitList(q, 0, nullptr, nullptr));
    ++markers;
    CK(clSetKernelArg(psum, 0, sizeof sum, &sum));
    CK(clSetKernelArg(psum, 1, sizeof parts, &parts));
    CK(clSetKernelArg(psum, 2, group * sizeof(float), nullptr));
    CK(clEnqueueNDRangeKernel(q, psum, 1, nullptr, &n, &group, 0, nullptr, nullptr));
    kernels += 3;
    CK(clEnqueueBarrierWithWaitList(q, 0, nullptr, nullptr));
    ++barriers;
    CK(clEnqueueCopyBuffer(q, sum, scratch, 0, 0, bytes, 0, nullptr, nullptr));
    ++copies;
    copied += bytes;
    cl_event read_done = nullptr;
    CK(clEnqueueReadBuffer(q, parts, CL_FALSE, 0, groups * sizeof(float), hsum.data(), 0, nullptr, &read_done));
    ++reads;
    read += groups * sizeof(float);
    CK(clWaitForEvents(1, &read_done));
    // Map the copy to check it on the host, then unmap.
    auto* m = static_cast<float*>(clEnqueueMapBuffer(q, scratch, CL_TRUE, CL_MAP_READ, 0, bytes, 0, nullptr, nullptr, &err));
    CK(err);
    ++maps;
    mapped += bytes;
    for (size_t i = 0; i < n; ++i) {
      float want = ha[i] * factor + hb[i];
      if (std::fabs(m[i] - want) > 1e-3f) {
        std::fprintf(stderr, "cl_pipeline: sum[%zu] = %g, want %g\n", i, static_cast<double>(m[i]), static_cast<double>(want));
        return 1;
      }
    }
    CK(clEnqueueUnmapMemObject(q, scratch, m, 0, nullptr, nullptr));
    ++unmaps;
    CK(clFinish(q));
    double total = 0, want_total = 0;
    for (float v : hsum) total += v;
    for (size_t i = 0; i < n; ++i) want_total += static_cast<double>(ha[i] * factor + hb[i]);
    if (std::fabs(total - want_total) > 1e-3 * want_total) {
      std::fprintf(stderr, "cl_pipeline: total %g, want %g\n", total, want_total);
      return 1;
    }
    expect_total += total;
    clReleaseEvent(wrote_a);
    clReleaseEvent(scaled);
    clReleaseEvent(read_done);
  }
  // Read the result back the usual way: blocking, no event.
  CK(clEnqueueReadBuffer(q, sum, CL_TRUE, 0, bytes, hc.data(), 0, nullptr, nullptr));
  ++reads;
  read += bytes;
  CK(clFinish(q2));

  std::printf("expect kernels=%d writes=%d reads=%d copies=%d fills=%d maps=%d unmaps=%d markers=%d barriers=%d\n",
              kernels, writes, reads, copies, fills, maps, unmaps, markers, barriers);
  std::printf("expect bytes_written=%llu bytes_read=%llu bytes_copied=%llu bytes_filled=%llu bytes_mapped=%llu\n",
              written, read, copied, filled, mapped);
  std::printf("expect n=%zu group=%zu groups=%zu buffers=5 buffer_bytes=%llu\n", n, group, groups,
              4ull * bytes + groups * sizeof(float));
  std::printf("checksum %.3f\n", expect_total);
  for (cl_mem x : {a, b, sum, parts, scratch}) clReleaseMemObject(x);
  clReleaseKernel(scale);
  clReleaseKernel(add);
  clReleaseKernel(psum);
  clReleaseCommandQueue(q);
  clReleaseCommandQueue(q2);
  clReleaseProgram(c.prog);
  clReleaseContext(c.ctx);
  return 0;
}
