"""python/strata/_loop_head.py: arm() after a model's work fires at the loop's
next head (the `for`/`while` line taking the next iteration), not at the exit of
a `with` block the work ran in, nor inside a helper that did the work; and it
gives up (emit(1)) once the tail runs past its budget."""
import contextlib
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from strata import _loop_head  # noqa: E402


class LoopHeadTest(unittest.TestCase):
    def setUp(self):
        self.events = []
        self.lines = []
        self.stage = None
        _loop_head._last_arm[0] = 0.0

    def emit(self, what):
        # Bit 0: gave up (1) or saw the head (0); above it, the head's line.
        self.events.append((what & 1, self.stage))
        self.lines.append(what >> 1)

    def test_for_loop_with_block(self):
        head = sys._getframe().f_lineno + 1
        for _ in range(3):
            self.stage = "head"
            with contextlib.nullcontext():
                self.stage = "work"; _loop_head.arm(self.emit)  # noqa: E702
            self.stage = "tail"
        self.assertEqual(self.events, [(0, "tail")] * 3)
        self.assertEqual(self.lines, [head] * 3)  # the loop's own line

    def test_while_loop_with_block(self):
        i = 0
        head = sys._getframe().f_lineno + 1
        while i < 3:
            with contextlib.nullcontext():
                with contextlib.nullcontext():
                    self.stage = "work"; _loop_head.arm(self.emit)  # noqa: E702
            self.stage = "tail"
            i += 1
        self.assertEqual(self.events, [(0, "tail")] * 3)
        self.assertEqual(self.lines, [head] * 3)

    def test_helper_does_the_work(self):
        def step():
            self.stage = "work"; _loop_head.arm(self.emit)  # noqa: E702
            self.stage = "helper tail"

        for _ in range(2):
            self.stage = "head"
            step()
            self.stage = "tail"
        self.assertEqual(self.events, [(0, "tail")] * 2)

    def test_gives_up_past_the_budget(self):
        # 10 ms of tail in each iteration: the first tail may run 50 ms (it
        # warms up), the next a tenth of the iteration before it (1 ms).
        for _ in range(2):
            self.stage = "work"; _loop_head.arm(self.emit)  # noqa: E702
            t = time.perf_counter()
            while time.perf_counter() - t < 0.01:
                pass
            self.stage = "tail"
        self.assertEqual([w for w, _ in self.events], [0, 1])
        self.assertEqual(sys.gettrace(), None)

    def test_no_give_up_while_the_step_unwinds(self):
        # arm() runs in the optimizer's post-hook, inside step(): if the thread
        # is held there past the budget (preempted under load), the mark must
        # still come after step() returns, or it falls inside the optimizer
        # step and the importer cannot tell it from the step itself.
        import importlib.util
        import tempfile
        d = tempfile.mkdtemp()
        path = os.path.join(d, "fake_optim.py")
        with open(path, "w") as f:
            f.write("import time\n"
                    "def nothing():\n    pass\n"
                    "def step(arm, emit, stage):\n"
                    "    arm(emit)\n"
                    "    stage('unwinding')\n"
                    "    t = time.perf_counter()\n"
                    "    while time.perf_counter() - t < 0.06:\n        pass\n"
                    "    for _ in range(64):\n        nothing()\n"
                    "    stage('returned')\n")
        spec = importlib.util.spec_from_file_location("fake_optim", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _loop_head.skip_dir(d)

        def stage(s):
            self.stage = s

        for _ in range(2):
            self.stage = "work"
            mod.step(_loop_head.arm, self.emit, stage)
            self.stage = "tail"
        self.assertEqual(self.events, [(1, "returned"), (1, "returned")])
        self.assertEqual(sys.gettrace(), None)


if __name__ == "__main__":
    unittest.main()
