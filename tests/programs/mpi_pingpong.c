/* MPI as HPC-style training loops use it: 4 ranks, each iteration a ping-pong
 * between rank pairs (0<->1, 2<->3: MPI_Send then MPI_Recv, the partner the
 * other way round), a halo exchange around the ring (MPI_Irecv from the
 * left, MPI_Isend to the right, MPI_Waitall), a compute phase, an MPI_Allreduce of a gradient-sized
 * buffer and of the loss, and an MPI_Barrier every 10 iterations. Each rank
 * prints its median iteration time and how many messages it sent.
 *
 *   mpirun -np 4 mpi_pingpong [ITERS]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int Cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int iters = argc > 1 ? atoi(argv[1]) : 50;
  int peer = rank ^ 1;
  enum { kGrad = 65536 };
  float* grad = malloc(sizeof(float) * kGrad);
  float* sum = malloc(sizeof(float) * kGrad);
  double* times = malloc(sizeof(double) * iters);
  double msg[8] = {0};
  double halo_out[64] = {0}, halo_in[64];
  int left = (rank + size - 1) % size, right = (rank + 1) % size;
  int sent = 0;
  for (int it = 0; it < iters; ++it) {
    double t0 = Now();
    if (peer < size) {
      if (rank < peer) {
        MPI_Send(msg, 8, MPI_DOUBLE, peer, 7, MPI_COMM_WORLD);
        MPI_Recv(msg, 8, MPI_DOUBLE, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(msg, 8, MPI_DOUBLE, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(msg, 8, MPI_DOUBLE, peer, 7, MPI_COMM_WORLD);
      }
      ++sent;
    }
    MPI_Request halo[2];
    MPI_Irecv(halo_in, 64, MPI_DOUBLE, left, 9, MPI_COMM_WORLD, &halo[0]);
    MPI_Isend(halo_out, 64, MPI_DOUBLE, right, 9, MPI_COMM_WORLD, &halo[1]);
    MPI_Waitall(2, halo, MPI_STATUSES_IGNORE);
    ++sent;
    for (int i = 0; i < kGrad; ++i) grad[i] = (float)((i * 31 + it + rank) % 97) * 0.01f;
    MPI_Allreduce(grad, sum, kGrad, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double loss = sum[it % kGrad], total = 0;
    MPI_Allreduce(&loss, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (it % 10 == 9) MPI_Barrier(MPI_COMM_WORLD);
    times[it] = Now() - t0;
  }
  qsort(times, iters, sizeof(double), Cmp);
  printf("rank %d pid %d sent %d median iteration %.3f ms\n", rank, (int)getpid(), sent, times[iters / 2] * 1e3);
  free(grad);
  free(sum);
  free(times);
  MPI_Finalize();
  return 0;
}
