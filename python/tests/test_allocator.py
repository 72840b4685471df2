"""Runner(allocator=...): a Python object serving method I/O buffers through the runtime's
buffer allocator hook."""

import gc
import mmap
import unittest
from collections import Counter

import numpy as np

import kestrel
from support import ModelFixture

fixture = None


def setUpModule():
    global fixture
    fixture = ModelFixture(max_context=64, prefill_step=8)


def tearDownModule():
    fixture.remove()


class CountingAllocator:
    """Aligned numpy buffers; records every call."""

    def __init__(self, align=64, decline=()):
        self.align = align
        self.decline = set(decline)  # tensor names to answer None for
        self.calls = Counter()
        self.infos = []
        self.live = {}
        self.freed = []
        self.binds = []

    def alignment(self):
        self.calls["alignment"] += 1
        return self.align

    def allocate(self, nbytes, info):
        self.calls["allocate"] += 1
        self.infos.append(info)
        if info.name in self.decline:
            return None
        raw = np.zeros(nbytes + self.align, dtype=np.uint8)
        offset = (-raw.ctypes.data) % self.align
        buffer = raw[offset:offset + nbytes]
        self.live[id(buffer)] = buffer
        return buffer

    def bind(self, buffer, method, index, is_input):
        self.calls["bind"] += 1
        self.assertLive(buffer)
        self.binds.append((method, index, is_input))

    def free(self, buffer):
        self.calls["free"] += 1
        self.assertLive(buffer)
        self.freed.append(self.live.pop(id(buffer)))

    def assertLive(self, buffer):
        if id(buffer) not in self.live:
            raise AssertionError("the runner passed a buffer the allocator does not hold")


def program_io():
    """(method, index, is_input) -> TensorInfo of every method input and output."""
    io = {}
    for method in kestrel.Program(fixture.program).methods.values():
        for index, info in enumerate(method.inputs):
            io[(method.name, index, True)] = info
        for index, info in enumerate(method.outputs):
            io[(method.name, index, False)] = info
    return io


class AllocatorTest(unittest.TestCase):
    def generate(self, runner):
        return runner.generate("The little bird", max_new_tokens=20, temperature=0, ignore_eos=True).token_ids

    def test_serves_every_io_buffer_and_frees_each_once(self):
        allocator = CountingAllocator()
        runner = kestrel.Runner(fixture.program, allocator=allocator)
        self.assertEqual(allocator.calls["alignment"], 1)
        allocated = allocator.calls["allocate"]
        self.assertGreater(allocated, 0)
        self.assertEqual(len(allocator.live), allocated)
        # Each buffer was asked for with a tensor the program declares, with its size.
        declared = {(info.name, info.dtype, info.shape, info.nbytes) for info in program_io().values()}
        for info in allocator.infos:
            self.assertIn((info.name, info.dtype, info.shape, info.nbytes), declared)
        # Every input and output of both methods is bound exactly once.
        self.assertEqual(sorted(allocator.binds), sorted(program_io()))
        self.assertEqual(len(set(allocator.binds)), len(allocator.binds))

        # The program really runs on these buffers: same tokens as with the heap.
        self.assertEqual(self.generate(runner), self.generate(kestrel.Runner(fixture.program)))
        self.assertTrue(any(buffer.any() for buffer in allocator.live.values()))
        self.assertEqual(allocator.calls["free"], 0)
        runner.close()
        self.assertEqual(allocator.calls["free"], allocated)
        self.assertEqual(allocator.live, {})

    def test_garbage_collection_frees_too(self):
        allocator = CountingAllocator()
        runner = kestrel.Runner(fixture.program, allocator=allocator)
        self.generate(runner)
        del runner
        gc.collect()
        self.assertEqual(allocator.live, {})
        self.assertEqual(allocator.calls["free"], allocator.calls["allocate"])

    def test_none_falls_back_to_the_heap(self):
        first_cache = "k_cache_0"
        allocator = CountingAllocator(decline={first_cache, "tokens"})
        runner = kestrel.Runner(fixture.program, allocator=allocator)
        declined = sum(1 for info in allocator.infos if info.name in allocator.decline)
        self.assertGreater(declined, 0)
        self.assertEqual(len(allocator.live), allocator.calls["allocate"] - declined)
        # Heap buffers are not the allocator's to bind.
        io = program_io()
        self.assertTrue(all(io[key].name not in allocator.decline for key in allocator.binds))
        self.assertEqual(self.generate(runner), self.generate(kestrel.Runner(fixture.program)))
        runner.close()
        self.assertEqual(allocator.live, {})
        self.assertEqual(allocator.calls["free"], allocator.calls["allocate"] - declined)

    def test_mmap_buffers_and_optional_methods(self):
        class PageAllocator:
            def __init__(self):
                self.live = []

            def alignment(self):
                return mmap.PAGESIZE

            def allocate(self, nbytes, info):
                buffer = mmap.mmap(-1, nbytes)
                self.live.append(buffer)
                return buffer

            def free(self, buffer):
                self.live.remove(buffer)
                buffer.close()  # possible because the runner released its export first

        allocator = PageAllocator()
        with kestrel.Runner(fixture.program, allocator=allocator) as runner:
            self.assertTrue(allocator.live)
            self.assertEqual(self.generate(runner), self.generate(kestrel.Runner(fixture.program)))
        self.assertEqual(allocator.live, [])

    def test_registered_allocators_by_name(self):
        for name in ("heap", "memfd"):
            with self.subTest(allocator=name):
                runner = kestrel.Runner(fixture.program, allocator=name)
                self.assertEqual(self.generate(runner), self.generate(kestrel.Runner(fixture.program)))


class BrokenAllocatorTest(unittest.TestCase):
    """Every failing hook raises from Runner(), and everything handed out is still freed."""

    def check_fails(self, allocator, exception, text):
        with self.assertRaises(exception) as caught:
            kestrel.Runner(fixture.program, allocator=allocator)
        self.assertIn(text, str(caught.exception))
        gc.collect()
        self.assertEqual(allocator.live, {})
        self.assertEqual(allocator.calls["free"], allocator.calls["allocate"] - len(
            [i for i in allocator.infos if i.name in allocator.decline]))
        return caught.exception

    def test_allocate_raising(self):
        class Raising(CountingAllocator):
            def allocate(self, nbytes, info):
                if self.calls["allocate"] == 3:
                    self.calls["allocate"] += 1
                    self.infos.append(info)
                    self.decline.add(info.name)
                    raise MemoryError("out of device memory for " + info.name)
                return super().allocate(nbytes, info)

        self.check_fails(Raising(), MemoryError, "out of device memory")

    def test_bind_raising(self):
        class Raising(CountingAllocator):
            def bind(self, buffer, method, index, is_input):
                if method == "decode":
                    raise KeyError("cannot register " + method)
                super().bind(buffer, method, index, is_input)

        self.check_fails(Raising(), KeyError, "cannot register decode")

    def test_unusable_buffers(self):
        class Returning(CountingAllocator):
            def __init__(self, make):
                super().__init__()
                self.make = make

            def allocate(self, nbytes, info):
                buffer = self.make(super().allocate(nbytes, info))
                self.live[id(buffer)] = buffer
                return buffer

            def free(self, buffer):
                self.calls["free"] += 1
                del self.live[id(buffer)]
                self.live = {}  # the inner buffers go with it

        cases = [
            (lambda b: b[:-1], ValueError, "needs"),                 # one byte short
            (lambda b: bytes(b), TypeError, "not a writable"),       # read-only
            (lambda b: b[::2], TypeError, "not a writable"),         # not contiguous
            (lambda b: "text", TypeError, "returned a str"),         # no buffer at all
            (lambda b: np.zeros(len(b) + 8, np.uint8)[1:], ValueError, "not aligned"),
        ]
        for make, exception, text in cases:
            with self.subTest(text=text):
                allocator = Returning(make)
                with self.assertRaises(exception) as caught:
                    kestrel.Runner(fixture.program, allocator=allocator)
                self.assertIn(text, str(caught.exception))
                self.assertEqual(allocator.calls["free"], 1)  # the rejected object went back

    def test_bad_hook_objects(self):
        with self.assertRaises(TypeError) as caught:
            kestrel.Runner(fixture.program, allocator=object())
        self.assertIn("allocate", str(caught.exception))
        for alignment, exception in ((3, ValueError), (0, ValueError), ("64", TypeError)):
            with self.subTest(alignment=alignment):
                allocator = CountingAllocator(align=64)
                allocator.alignment = lambda value=alignment: value
                with self.assertRaises(exception):
                    kestrel.Runner(fixture.program, allocator=allocator)
                self.assertEqual(allocator.calls["allocate"], 0)


if __name__ == "__main__":
    unittest.main()
