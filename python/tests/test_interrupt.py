"""The GIL is released while generating, and Ctrl-C (SIGINT) stops a request between tokens,
raising KeyboardInterrupt and leaving the runner usable."""

import os
import signal
import threading
import time
import unittest

import kestrel
from support import ModelFixture

fixture = None
LONG = 500  # tokens: with the portable kernels long enough (0.3 s or more) that a signal sent 50 ms in arrives mid-generation


def setUpModule():
    global fixture
    fixture = ModelFixture(max_context=512, prefill_step=32)


def tearDownModule():
    fixture.remove()


def send_sigint_after(seconds):
    timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    return timer


class InterruptTest(unittest.TestCase):
    def setUp(self):
        # A process started with SIGINT ignored (a background job) would never see it.
        self.previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        # The portable kernels: slow enough that every timing below has a wide margin.
        self.runner = kestrel.Runner(fixture.program, kernels="portable")

    def tearDown(self):
        signal.signal(signal.SIGINT, self.previous)

    def expected_after_interrupt(self):
        return kestrel.Runner(fixture.program).generate("Once", max_new_tokens=8, temperature=0).token_ids

    def test_ctrl_c_stops_generate(self):
        timer = send_sigint_after(0.05)
        started = time.monotonic()
        with self.assertRaises(KeyboardInterrupt):
            self.runner.generate("Once", max_new_tokens=LONG, temperature=0, ignore_eos=True)
        timer.join()
        # It stopped inside the generation, well before its end.
        self.assertGreater(self.runner.position, 0)
        self.assertLess(self.runner.position, LONG - 50)
        self.assertLess(time.monotonic() - started, 5)
        # The session goes on, and a reset one answers like a fresh runner.
        self.assertEqual(len(self.runner.generate(" more", max_new_tokens=4, temperature=0).token_ids), 4)
        self.runner.reset()
        self.assertEqual(self.runner.generate("Once", max_new_tokens=8, temperature=0).token_ids,
                         self.expected_after_interrupt())

    def test_ctrl_c_stops_a_stream(self):
        pieces = []
        timer = send_sigint_after(0.05)
        # `with` closes the stream however the loop ends: the signal may arrive in the loop body.
        with self.assertRaises(KeyboardInterrupt):
            with self.runner.stream("Once", max_new_tokens=LONG, temperature=0, ignore_eos=True) as stream:
                for piece in stream:
                    pieces.append(piece)
                    time.sleep(0.001)  # a slow consumer
        timer.join()
        self.assertTrue(pieces)
        self.assertEqual(stream.result.stop_reason, "callback")
        self.assertLess(self.runner.position, LONG - 50)
        self.runner.reset()
        self.assertEqual(self.runner.generate("Once", max_new_tokens=8, temperature=0).token_ids,
                         self.expected_after_interrupt())

    def test_ctrl_c_while_a_stream_waits(self):
        # A fast consumer spends its time waiting inside the iterator, which then raises and
        # stops the request itself (close() is a no-op then; it covers a signal that landed in
        # the loop's own bytecode instead).
        stream = self.runner.stream("Once", max_new_tokens=LONG, temperature=0, ignore_eos=True)
        timer = send_sigint_after(0.05)
        with self.assertRaises(KeyboardInterrupt):
            while True:
                next(stream)
        timer.join()
        stream.close()
        self.assertEqual(stream.result.stop_reason, "callback")
        self.assertLess(len(stream.result.token_ids), LONG - 50)
        self.assertEqual(len(self.runner.generate(" more", max_new_tokens=4).token_ids), 4)

    def test_gil_is_released_while_generating(self):
        stamps = []
        done = threading.Event()

        def tick():
            while not done.is_set():
                stamps.append(time.monotonic())
                time.sleep(0.002)

        thread = threading.Thread(target=tick)
        thread.start()
        # Calls until 0.3 s of generation (one call can be short on a fast machine).
        calls = []
        try:
            while sum(end - start for start, end in calls) < 0.3:
                self.runner.reset()
                start = time.monotonic()
                self.runner.generate("Once", max_new_tokens=LONG, temperature=0, ignore_eos=True)
                calls.append((start, time.monotonic()))
        finally:
            done.set()
            thread.join()
        # With the GIL held for a whole call the other thread could not have run inside it
        # (20 ms margins cover a switch interval of 5 ms at either end).
        inside = [t for t in stamps if any(start + 0.02 < t < end - 0.02 for start, end in calls)]
        self.assertGreater(len(inside), 5, f"{len(calls)} calls")

    def test_one_request_at_a_time_across_threads(self):
        errors = []
        started = threading.Event()

        def other():
            started.wait()
            time.sleep(0.05)
            try:
                self.runner.generate("Once", max_new_tokens=2)
            except RuntimeError as error:
                errors.append(str(error))

        thread = threading.Thread(target=other)
        thread.start()
        started.set()
        self.runner.generate("Once", max_new_tokens=LONG, temperature=0, ignore_eos=True)
        thread.join()
        self.assertEqual(len(errors), 1)
        self.assertIn("busy", errors[0])


if __name__ == "__main__":
    unittest.main()
