// Placement across devices (the seeds' LTTng tracer followed TensorFlow's
// rendezvous Send/Recv between devices): for each function whose graph the
// framework placed on more than one device (TensorFlow's partition graphs,
// recorded as "tf.function NAME (placed)"), the time each device's ops take,
// the tensors that cross devices (Send -> Recv pairs) with their bytes, the
// Send's time and how long the consumer waited after it, the critical path of
// a call through the graph with the measured node times, and a placement with
// fewer crossings together with its replayed call time.
//
// Node times come from the ops recorded in the calls profiled with --ops-steps
// (XSpace TF ops: "node:Type"); without them only the graph's figures are
// known (devices, crossings) and nothing is replayed.
//
// The replay: each measured node starts `delay` after its last input is ready
// (the measured start minus the measured ready time) and runs its measured
// duration; nodes not in the profile (_Recv, _Arg, constants) pass their
// inputs through. Unchanged, it reproduces the measured schedule. The proposed
// placement removes the Send of every tensor whose producer and consumer end on
// one device, and the consumer's delay after a removed crossing becomes the
// median delay after a same-device input. Threads are not modelled: a lower
// bound where the graph runs wider than the cores.
//
// The proposal: the layers the program placed (name scopes with a requested
// device), in graph order, either cut into as many contiguous runs as devices
// with each device's present share of the measured time, or all on one device;
// the candidate whose replay is shortest (unmeasured: with the fewest
// crossings). A layer's forward nodes move; its variables go with it and the
// ops updating a variable with the variable; gradients, loss and optimizer
// math stay where the framework put them, as it would place unpinned ops.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/trace.h"

namespace strata::analysis {

struct PlacementDevice {
  std::string name;        // "CPU:1", "GPU:0" (the placed device's last part)
  uint64_t nodes = 0;      // nodes placed on it (Send/Recv included)
  double op_ns = 0;        // measured op time per call
};

struct CrossEdge {
  std::string from, to;    // producer node, its first consumer on the other device
  std::string src_device, dst_device;
  int64_t bytes = -1;      // the tensor's size where its shape is static
  double sends = 0;        // per call
  double send_ns = 0;      // per call: the _Send op's time
  double wait_ns = 0;      // per call: consumers' start after the send, where it was their last input
};

struct PlacementMove {
  std::string layer;
  std::string from_device, to_device;
  uint64_t nodes = 0;
};

struct PlacementResult {
  uint32_t process = 0;
  std::string function;           // "tf.function train_step"
  std::vector<PlacementDevice> devices;  // in the order the graph first uses them
  size_t cross_tensors = 0;       // Send -> Recv pairs in the graph
  // Measured (zero without profiled calls):
  size_t calls_measured = 0;
  double call_ns = 0;             // mean profiled call
  std::vector<CrossEdge> edges;   // by send_ns + wait_ns, descending
  double cross_ns = 0;            // per call: sends plus waits after them
  double local_delay_ns = 0;      // median delay after a same-device input
  double path_ns = 0;             // replayed call, unchanged
  std::vector<std::string> critical_path;  // nodes of the replayed path, longest first (at most 10)
  // The proposal (empty moves: none with fewer crossings):
  std::vector<PlacementMove> moves;
  size_t cross_tensors_after = 0;
  double path_after_ns = 0;       // replayed call with the moves
};

std::vector<PlacementResult> Placement(const model::Trace& t);

}  // namespace strata::analysis
