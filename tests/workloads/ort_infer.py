"""An ONNX Runtime inference loop as services write it: an MLP model built with
onnx's helpers and saved to a file, loaded into an InferenceSession on the CPU
provider, then one session.run per batch of numpy inputs, with the argmax of the
outputs read per batch. Prints iter_ms= per iteration."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import IterClock, parse_args  # noqa: E402


def extra(p):
    p.add_argument("--features", type=int, default=256)
    p.add_argument("--hidden", type=int, default=1024)


args = parse_args(__doc__, iters=40, batch=32, extra=extra)
import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
import onnxruntime as ort  # noqa: E402

rng = np.random.default_rng(0)
inits = [numpy_helper.from_array((rng.standard_normal((args.features, args.hidden)) * 0.05).astype("float32"), "w1"),
         numpy_helper.from_array(np.zeros(args.hidden, "float32"), "b1"),
         numpy_helper.from_array((rng.standard_normal((args.hidden, 10)) * 0.05).astype("float32"), "w2")]
nodes = [helper.make_node("MatMul", ["x", "w1"], ["h0"], name="fc1/MatMul"),
         helper.make_node("Add", ["h0", "b1"], ["h1"], name="fc1/Add"),
         helper.make_node("Relu", ["h1"], ["h2"], name="relu"),
         helper.make_node("MatMul", ["h2", "w2"], ["y0"], name="fc2/MatMul"),
         helper.make_node("Softmax", ["y0"], ["y"], name="softmax")]
graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", args.features])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
path = os.path.join(tempfile.mkdtemp(), "mlp.onnx")
onnx.save(model, path)
session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
clock = IterClock(args)
while clock.more():
    x = rng.standard_normal((args.batch, args.features)).astype("float32")
    (probs,) = session.run(None, {"x": x})
    labels = probs.argmax(axis=1)
    clock.tick(args.batch)
clock.done()
