// Planted bottleneck: a host synchronization after every kernel.
//
// Each step runs a chain of stages on an OpenCL device, as a streaming
// pipeline does. For every stage the host waits for the stage's input to
// arrive (from a sensor or a socket: time spent waiting, not computing), derives
// the stage's coefficients from it, writes them to the device and enqueues the
// stage's kernel. The slow variant calls clFinish after every kernel, a habit from
// debugging ("make errors show up where they happen"): the host then waits for
// the device to drain, and the device waits while the host prepares the next
// stage — host and device take turns instead of working at the same time.
//
// strata reports it as `host_sync`: clFinish every stage, and after each one the
// device has nothing queued until the host launches again; that idle time is
// what removing the synchronizations would give back.
//
// --fixed applies the suggestion: the stages are enqueued without waiting (the
// coefficient writes are non-blocking, from buffers that live until the step
// ends) and the step synchronizes once, with the blocking read of its result.
// The host receives and prepares stage k+1 while the device runs stage k.
// Results are identical.
//
// The device is one compute unit of the OpenCL CPU device (PoCL), partitioned
// off with clCreateSubDevices, so that the host thread and the "accelerator"
// each have a core, as a host and its GPU do.
//
//   host_sync [--fixed] [--steps N] [--stages K] [--input-us U]
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include <time.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "strata/strata.hpp"

#define CK(x)                                                                          \
  do {                                                                                 \
    cl_int e_ = (x);                                                                   \
    if (e_ != CL_SUCCESS) {                                                            \
      std::fprintf(stderr, "host_sync: %s:%d %s -> %d\n", __FILE__, __LINE__, #x, e_); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

namespace {

// Each work item runs `reps` multiply-adds with the stage's coefficients.
const char* kSource = R"CLC(
__kernel void stage(__global float* x, __global const float* coef, int reps) {
  size_t i = get_global_id(0);
  float v = x[i];
  float a = coef[i % 64], b = coef[64 + i % 64];
  for (int r = 0; r < reps; ++r) v = v * a + b;
  x[i] = v;
}
)CLC";

constexpr size_t kCoef = 128;

// The host's share of a stage: wait for its input (modelled as a fixed
// latency: the wait costs no CPU, so the example's timing does not depend on how
// busy the machine is), then derive the coefficients from it.
void StageCoefficients(int step, int stage, int input_us, int host_iters, float* out) {
  timespec wait{0, static_cast<long>(input_us) * 1000};
  while (clock_nanosleep(CLOCK_MONOTONIC, 0, &wait, &wait) != 0) {
  }
  for (size_t j = 0; j < kCoef; ++j) {
    double acc = 0;
    for (int r = 0; r < host_iters; ++r) acc += std::sin(0.001 * (step * 131 + stage * 17 + static_cast<int>(j) + r));
    // |a| < 1 keeps the iterated map bounded; b is small.
    out[j] = j < 64 ? static_cast<float>(0.5 + 0.4 * std::tanh(acc)) : static_cast<float>(0.01 * std::tanh(acc));
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool fixed = false;
  int steps = 20, stages = 12, reps = 600, host_iters = 10, input_us = 400;
  size_t n = 4096;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() { return i + 1 < argc ? std::atoi(argv[++i]) : -1; };
    if (a == "--fixed") fixed = true;
    else if (a == "--steps") steps = next();
    else if (a == "--stages") stages = next();
    else if (a == "--reps") reps = next();
    else if (a == "--host-iters") host_iters = next();
    else if (a == "--input-us") input_us = next();
    else {
      std::fprintf(stderr, "usage: host_sync [--fixed] [--steps N] [--stages K] [--reps R] [--host-iters H] [--input-us U]\n");
      return 2;
    }
  }
  if (steps <= 0 || stages <= 0 || reps <= 0 || host_iters <= 0 || input_us < 0 || input_us > 999999) {
    std::fprintf(stderr, "host_sync: counts must be positive\n");
    return 2;
  }

  cl_int err;
  cl_platform_id platform;
  cl_device_id parent;
  CK(clGetPlatformIDs(1, &platform, nullptr));
  CK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &parent, nullptr));
  // One compute unit as the device; fall back to the whole device where it
  // cannot be partitioned.
  cl_device_id device = parent;
  cl_device_partition_property props[] = {CL_DEVICE_PARTITION_EQUALLY, 1, 0};
  cl_uint got = 0;
  if (clCreateSubDevices(parent, props, 1, &device, &got) != CL_SUCCESS || got == 0) device = parent;
  cl_context ctx = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  CK(err);
  cl_program prog = clCreateProgramWithSource(ctx, 1, &kSource, nullptr, &err);
  CK(err);
  CK(clBuildProgram(prog, 1, &device, "", nullptr, nullptr));
  cl_kernel kernel = clCreateKernel(prog, "stage", &err);
  CK(err);
  cl_command_queue q = clCreateCommandQueueWithProperties(ctx, device, nullptr, &err);
  CK(err);

  cl_mem x = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n * sizeof(float), nullptr, &err);
  CK(err);
  std::vector<cl_mem> coef(static_cast<size_t>(stages));
  for (auto& c : coef) {
    c = clCreateBuffer(ctx, CL_MEM_READ_ONLY, kCoef * sizeof(float), nullptr, &err);
    CK(err);
  }
  // Host copies of the coefficients: one per stage, so that a non-blocking
  // write's source stays untouched until the step's final synchronization.
  std::vector<float> host_coef(static_cast<size_t>(stages) * kCoef);
  std::vector<float> init(n);
  for (size_t i = 0; i < n; ++i) init[i] = static_cast<float>(i % 101) / 101.0f;
  CK(clEnqueueWriteBuffer(q, x, CL_TRUE, 0, n * sizeof(float), init.data(), 0, nullptr, nullptr));
  CK(clSetKernelArg(kernel, 0, sizeof x, &x));
  CK(clSetKernelArg(kernel, 2, sizeof reps, &reps));

  std::vector<float> result(n);
  double checksum = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (int s = 0; s < steps; ++s) {
    strata::Step step(static_cast<uint64_t>(s));
    for (int k = 0; k < stages; ++k) {
      float* hc = host_coef.data() + static_cast<size_t>(k) * kCoef;
      StageCoefficients(s, k, input_us, host_iters, hc);
      cl_mem c = coef[static_cast<size_t>(k)];
      CK(clEnqueueWriteBuffer(q, c, CL_FALSE, 0, kCoef * sizeof(float), hc, 0, nullptr, nullptr));
      CK(clSetKernelArg(kernel, 1, sizeof c, &c));
      CK(clEnqueueNDRangeKernel(q, kernel, 1, nullptr, &n, nullptr, 0, nullptr, nullptr));
      if (!fixed) CK(clFinish(q));  // the planted bottleneck
    }
    // The step's one necessary synchronization: its result.
    CK(clEnqueueReadBuffer(q, x, CL_TRUE, 0, n * sizeof(float), result.data(), 0, nullptr, nullptr));
    checksum += static_cast<double>(result[static_cast<size_t>(s) % n]);
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s: %d steps of %d stages, %.2f ms/step, checksum %.6f\n", fixed ? "fixed" : "slow", steps, stages,
              ms / steps, checksum);

  for (auto& c : coef) clReleaseMemObject(c);
  clReleaseMemObject(x);
  clReleaseCommandQueue(q);
  clReleaseKernel(kernel);
  clReleaseProgram(prog);
  clReleaseContext(ctx);
  if (device != parent) clReleaseDevice(device);
  return 0;
}
