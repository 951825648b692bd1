// A small CUDA program run unmodified under `strata record` by the tests (and by
// scripts/gpu-check on a GPU): vector add with NVTX ranges, timed with CUDA
// events. It prints what it did, or the CUDA error that stopped it; on a host
// without a driver it stops at the first CUDA call, the same with or without
// strata.
//
//   cuda_vector_add [N] [ITERATIONS]  -> "kernels=K ... kernel_ms=..." or "cuda error: ..."
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

#define CK(x)                                                                 \
  do {                                                                        \
    cudaError_t e_ = (x);                                                     \
    if (e_ != cudaSuccess) {                                                  \
      std::printf("cuda error: %s: %s (%d)\n", #x, cudaGetErrorString(e_), static_cast<int>(e_)); \
      return 3;                                                               \
    }                                                                         \
  } while (0)

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 1 << 20;
  int iterations = argc > 2 ? std::atoi(argv[2]) : 10;
  int devices = -1;
  CK(cudaGetDeviceCount(&devices));
  std::printf("devices=%d\n", devices);
  size_t bytes = static_cast<size_t>(n) * sizeof(float);
  std::vector<float> ha(n, 1.0f), hb(n, 2.0f), hc(n, 0.0f);
  float *a = nullptr, *b = nullptr, *c = nullptr;
  CK(cudaMalloc(&a, bytes));
  CK(cudaMalloc(&b, bytes));
  CK(cudaMalloc(&c, bytes));
  nvtxRangePushA("upload");
  CK(cudaMemcpy(a, ha.data(), bytes, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(b, hb.data(), bytes, cudaMemcpyHostToDevice));
  nvtxRangePop();
  cudaEvent_t start, stop;
  CK(cudaEventCreate(&start));
  CK(cudaEventCreate(&stop));
  int block = 256, grid = (n + block - 1) / block;
  float total_ms = 0;
  for (int i = 0; i < iterations; ++i) {
    nvtxRangePushA("step");
    CK(cudaEventRecord(start));
    vector_add<<<grid, block>>>(a, b, c, n);
    CK(cudaGetLastError());
    CK(cudaEventRecord(stop));
    CK(cudaEventSynchronize(stop));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, start, stop));
    total_ms += ms;
    nvtxRangePop();
  }
  CK(cudaMemcpy(hc.data(), c, bytes, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i)
    if (hc[i] != 3.0f) {
      std::printf("wrong result at %d: %g\n", i, static_cast<double>(hc[i]));
      return 1;
    }
  // What scripts/gpu-check compares with the trace: launches and their own timing.
  std::printf("kernels=%d n=%d grid=%d block=%d bytes_htod=%zu bytes_dtoh=%zu kernel_ms=%.6f\n", iterations, n, grid, block,
              2 * bytes, bytes, static_cast<double>(total_ms));
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return 0;
}
