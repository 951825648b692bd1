// scripts/gpu-check's AMD sample (built with hipcc on a machine with an AMD GPU):
// the HIP twin of tests/programs/cuda_vector_add.cu, timed with HIP events.
//
//   hip_vector_add [N] [ITERATIONS]  -> "kernels=K ... kernel_ms=..."
#include <hip/hip_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

#define CK(x)                                                                                    \
  do {                                                                                           \
    hipError_t e_ = (x);                                                                         \
    if (e_ != hipSuccess) {                                                                      \
      std::printf("hip error: %s: %s (%d)\n", #x, hipGetErrorString(e_), static_cast<int>(e_)); \
      return 3;                                                                                  \
    }                                                                                            \
  } while (0)

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 1 << 20;
  int iterations = argc > 2 ? std::atoi(argv[2]) : 10;
  size_t bytes = static_cast<size_t>(n) * sizeof(float);
  std::vector<float> ha(n, 1.0f), hb(n, 2.0f), hc(n, 0.0f);
  float *a = nullptr, *b = nullptr, *c = nullptr;
  CK(hipMalloc(&a, bytes));
  CK(hipMalloc(&b, bytes));
  CK(hipMalloc(&c, bytes));
  CK(hipMemcpy(a, ha.data(), bytes, hipMemcpyHostToDevice));
  CK(hipMemcpy(b, hb.data(), bytes, hipMemcpyHostToDevice));
  hipEvent_t start, stop;
  CK(hipEventCreate(&start));
  CK(hipEventCreate(&stop));
  int block = 256, grid = (n + block - 1) / block;
  float total_ms = 0;
  for (int i = 0; i < iterations; ++i) {
    CK(hipEventRecord(start));
    hipLaunchKernelGGL(vector_add, dim3(grid), dim3(block), 0, 0, a, b, c, n);
    CK(hipGetLastError());
    CK(hipEventRecord(stop));
    CK(hipEventSynchronize(stop));
    float ms = 0;
    CK(hipEventElapsedTime(&ms, start, stop));
    total_ms += ms;
  }
  CK(hipMemcpy(hc.data(), c, bytes, hipMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i)
    if (hc[i] != 3.0f) {
      std::printf("wrong result at %d\n", i);
      return 1;
    }
  std::printf("kernels=%d grid=%d block=%d kernel_ms=%.6f\n", iterations, grid, block, static_cast<double>(total_ms));
  CK(hipFree(a));
  CK(hipFree(b));
  CK(hipFree(c));
  return 0;
}
