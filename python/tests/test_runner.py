"""kestrel.Runner: generation against the CLI, streaming, sessions, the tokenizer, the last
step's logits, and errors."""

import json
import time
import unittest

import numpy as np

import kestrel
from support import ModelFixture, run_cli

fixture = None


def setUpModule():
    global fixture
    fixture = ModelFixture(max_context=128, prefill_step=8)


def tearDownModule():
    fixture.remove()


class GenerateTest(unittest.TestCase):
    def setUp(self):
        self.runner = kestrel.Runner(fixture.program)

    def test_same_result_as_the_cli(self):
        for temperature, seed in ((0.0, 1), (0.9, 7), (1.3, 12345)):
            with self.subTest(temperature=temperature, seed=seed):
                self.runner.reset()
                ours = self.runner.generate("The little bird", max_new_tokens=24, temperature=temperature, seed=seed,
                                            top_k=30, top_p=0.9, min_p=0.02, repeat_penalty=1.1)
                code, out, err = run_cli("run", fixture.program, "-p", "The little bird", "-n", "24", "--json",
                                         "--temperature", str(temperature), "--seed", str(seed), "--top-k", "30",
                                         "--top-p", "0.9", "--min-p", "0.02", "--repeat-penalty", "1.1")
                self.assertEqual(code, 0, err)
                cli = json.loads(out)
                self.assertEqual(ours.token_ids, cli["token_ids"])
                self.assertEqual(ours.prompt_token_ids, cli["prompt_token_ids"])
                self.assertEqual(ours.text, cli["text"])
                self.assertEqual(ours.stop_reason, cli["stop_reason"])
                self.assertEqual(ours.seed, seed)
                self.assertEqual(ours.stats.prompt_tokens, len(cli["prompt_token_ids"]))
                self.assertEqual(ours.stats.generated_tokens, len(ours.token_ids))

    def test_result_fields(self):
        result = self.runner.generate("Once", max_new_tokens=10, temperature=0, ignore_eos=True)
        self.assertEqual(result.stop_reason, "max_new_tokens")
        self.assertEqual(len(result.token_ids), 10)
        self.assertEqual(result.prompt_token_ids, self.runner.tokenizer.encode("Once", add_bos=True))
        self.assertEqual(result.text, self.runner.tokenizer.decode(result.token_ids))
        self.assertGreater(result.stats.ttft_ms, 0)
        self.assertIsInstance(result.seed, int)

    def test_token_id_prompts_and_stop_strings(self):
        ids = self.runner.tokenizer.encode("Once upon", add_bos=True)
        by_ids = self.runner.generate(ids, max_new_tokens=12, temperature=0)
        self.runner.reset()
        by_text = self.runner.generate("Once upon", max_new_tokens=12, temperature=0)
        self.assertEqual(by_ids.token_ids, by_text.token_ids)
        self.runner.reset()
        by_array = self.runner.generate(np.array(ids), max_new_tokens=12, temperature=0)
        self.assertEqual(by_array.token_ids, by_text.token_ids)
        # Stop at a text the unconstrained generation produces.
        stop = by_text.text[3:6]
        self.runner.reset()
        stopped = self.runner.generate("Once upon", max_new_tokens=12, temperature=0, stop=[stop])
        self.assertEqual(stopped.stop_reason, "stop_string")
        self.assertEqual(stopped.text, by_text.text[: by_text.text.index(stop)])

    def test_sessions_continue_until_reset(self):
        first = self.runner.generate("Once", max_new_tokens=6, temperature=0)
        second = self.runner.generate(" and then", max_new_tokens=6, temperature=0)
        self.assertGreater(self.runner.position, 0)
        # A fresh runner given the whole conversation at once answers the second turn the same way.
        whole = kestrel.Runner(fixture.program).generate(
            first.prompt_token_ids + first.token_ids + second.prompt_token_ids, max_new_tokens=6, temperature=0)
        self.assertEqual(second.token_ids, whole.token_ids)
        self.runner.reset()
        self.assertEqual(self.runner.position, 0)
        self.assertEqual(self.runner.generate("Once", max_new_tokens=6, temperature=0).token_ids, first.token_ids)

    def test_errors_leave_the_session_usable(self):
        first = self.runner.generate("Once", max_new_tokens=4, temperature=0)
        position = self.runner.position
        with self.assertRaises(kestrel.CapacityError) as caught:
            self.runner.generate("Once", max_new_tokens=500)
        self.assertIsInstance(caught.exception, ValueError)
        self.assertIn("context is 128", str(caught.exception))
        self.assertEqual(self.runner.position, position)
        bad = {"top_p": 0.0, "temperature": -1.0, "top_k": -2, "repeat_penalty": 0.0, "max_new_tokens": -1}
        for name, value in bad.items():
            with self.subTest(name=name), self.assertRaises(ValueError):
                self.runner.generate("Once", **{name: value})
        with self.assertRaises(ValueError) as caught:
            self.runner.generate([1, 100000])
        self.assertIn("100000", str(caught.exception))
        with self.assertRaises(ValueError):
            self.runner.generate("")
        with self.assertRaises(TypeError):
            self.runner.generate([1.5, 2.0])
        with self.assertRaises(TypeError):
            self.runner.generate("Once", temprature=0)
        self.assertEqual(self.runner.position, position)
        self.runner.reset()
        self.assertEqual(self.runner.generate("Once", max_new_tokens=4, temperature=0).token_ids, first.token_ids)

    def test_model_info_and_loading_errors(self):
        self.assertEqual(self.runner.vocab_size, fixture.config["vocab_size"])
        self.assertEqual(self.runner.max_context, 128)
        self.assertEqual(self.runner.bos_id, fixture.config["bos_token_id"])
        self.assertEqual(self.runner.eos_ids, [fixture.config["eos_token_id"]])
        with self.assertRaises(kestrel.IoError):
            kestrel.Runner(fixture.path("missing.kst"))
        for kwargs in ({"threads": -1}, {"kernels": "fast"}, {"allocator": "nonesuch"}):
            with self.subTest(**kwargs), self.assertRaises(ValueError):
                kestrel.Runner(fixture.program, **kwargs)
        portable = kestrel.Runner(fixture.program, kernels="portable", allocator="memfd", threads=1)
        self.assertEqual(portable.generate("Once", max_new_tokens=8, temperature=0).token_ids,
                         self.runner.generate("Once", max_new_tokens=8, temperature=0).token_ids)

    def test_delegated_program_on_the_qnn_stand_in(self):
        path = fixture.path("qnn.kst")
        kestrel.export(fixture.checkpoint, path, backend="qnn", max_context=128, prefill_step=8)
        self.assertTrue(kestrel.Program(path).delegates)
        runner = kestrel.Runner(path, backend_options={"qnn": {"library": "stand-in"}})
        ours = runner.generate("The little bird", max_new_tokens=12, temperature=0)
        code, out, err = run_cli("run", path, "-p", "The little bird", "-n", "12", "--temperature", "0", "--json",
                                 "--backend-option", "qnn.library=stand-in")
        self.assertEqual(code, 0, err)
        self.assertEqual(ours.token_ids, json.loads(out)["token_ids"])
        with self.assertRaises(ValueError) as caught:
            kestrel.Runner(path, backend_options={"qnn": {"libary": "stand-in"}})
        self.assertIn("did you mean 'library'", str(caught.exception))
        with self.assertRaises(ValueError) as caught:
            kestrel.Runner(path, backend_options={"qnm": {"library": "stand-in"}})
        self.assertIn("did you mean 'qnn'", str(caught.exception))

    def test_prefill_buckets_generate_what_one_step_generates(self):
        prompt = "The little bird sang of the rain over the hills while the river ran cold and slow below"
        want = self.runner.generate(prompt, max_new_tokens=10, temperature=0).token_ids
        for backend, run_options in ((None, None), ("qnn", {"qnn": {"library": "stand-in"}})):
            with self.subTest(backend=backend):
                path = fixture.path(f"buckets-{backend}.kst")
                report = kestrel.export(fixture.checkpoint, path, backend=backend, max_context=128, prefill_step=8,
                                        extra_prefill_steps=[32])
                self.assertIn("prefill_32", [m["name"] for m in report["methods"]])
                runner = kestrel.Runner(path, backend_options=run_options)
                result = runner.generate(prompt, max_new_tokens=10, temperature=0)
                self.assertGreaterEqual(len(result.prompt_token_ids), 32)
                self.assertEqual(result.token_ids, want)

    def test_close(self):
        with kestrel.Runner(fixture.program) as runner:
            runner.generate("Once", max_new_tokens=2)
        with self.assertRaises(ValueError) as caught:
            runner.generate("Once")
        self.assertIn("closed", str(caught.exception))
        runner.close()  # twice is fine


class StreamTest(unittest.TestCase):
    def setUp(self):
        self.runner = kestrel.Runner(fixture.program)

    def test_pieces_join_to_the_generated_text(self):
        for seed in range(4):
            with self.subTest(seed=seed):
                self.runner.reset()
                generated = self.runner.generate("The little bird", max_new_tokens=40, temperature=1.0, seed=seed)
                self.runner.reset()
                stream = self.runner.stream("The little bird", max_new_tokens=40, temperature=1.0, seed=seed)
                pieces = list(stream)
                self.assertGreater(len(pieces), 1)
                self.assertEqual("".join(pieces), generated.text)
                self.assertEqual(stream.result.token_ids, generated.token_ids)
                self.assertEqual(stream.result.stop_reason, generated.stop_reason)
                self.assertEqual(stream.result.seed, seed)

    def test_stopping_early_leaves_the_runner_usable(self):
        stream = self.runner.stream("Once", max_new_tokens=100, temperature=0, ignore_eos=True)
        first = next(stream)
        self.assertTrue(first)
        with self.assertRaises(RuntimeError) as caught:
            self.runner.generate("Once")
        self.assertIn("busy", str(caught.exception))
        with self.assertRaises(RuntimeError):
            self.runner.last_logits()
        time.sleep(0.2)  # an idle consumer: the worker waits a few pieces ahead instead of finishing
        stream.close()
        self.assertEqual(stream.result.stop_reason, "callback")
        self.assertLess(len(stream.result.token_ids), 40)
        self.assertEqual(list(stream), [])
        # Dropping a stream mid-way frees the runner too.
        for _ in self.runner.stream("Once", max_new_tokens=50):
            break
        self.runner.reset()
        expected = kestrel.Runner(fixture.program).generate("Once", max_new_tokens=8, temperature=0)
        self.assertEqual(self.runner.generate("Once", max_new_tokens=8, temperature=0).token_ids, expected.token_ids)

    def test_errors_surface_before_the_first_piece(self):
        stream = self.runner.stream("Once", max_new_tokens=1000)
        with self.assertRaises(kestrel.CapacityError):
            next(stream)
        self.assertIsNone(stream.result)
        self.assertEqual(len(self.runner.generate("Once", max_new_tokens=3).token_ids), 3)


class TokenizerAndLogitsTest(unittest.TestCase):
    def setUp(self):
        self.runner = kestrel.Runner(fixture.program)

    def test_tokenizer_round_trip(self):
        tokenizer = self.runner.tokenizer
        text = "The little bird sang, and the wind answered: ünïcode too."
        ids = tokenizer.encode(text)
        self.assertTrue(all(0 <= i < tokenizer.vocab_size for i in ids))
        self.assertEqual(tokenizer.decode(ids), text)
        self.assertEqual(tokenizer.encode(text, add_bos=True), [tokenizer.bos_id] + ids)
        self.assertEqual(tokenizer.eos_ids, self.runner.eos_ids)
        with self.assertRaises(kestrel.OutOfRangeError):
            tokenizer.decode([tokenizer.vocab_size + 5])
        self.assertIsNone(tokenizer.token_id("no such piece"))

    def test_last_logits_is_a_view_of_the_last_step(self):
        self.assertIsNone(self.runner.last_logits())
        ids = self.runner.tokenizer.encode("Once upon a time", add_bos=True)
        scored = self.runner.generate(ids, max_new_tokens=0)
        self.assertEqual(scored.token_ids, [])
        logits = self.runner.last_logits()
        self.assertEqual((logits.shape, logits.dtype), ((self.runner.vocab_size,), np.float32))
        self.assertFalse(logits.flags.writeable)
        self.assertFalse(logits.flags.owndata)
        self.assertIs(logits.base, self.runner._core)  # a view of the runner's memory, not a copy
        snapshot = logits.copy()
        # Greedy decoding picks the argmax of these very scores.
        self.runner.reset()
        greedy = self.runner.generate(ids, max_new_tokens=1, temperature=0)
        self.assertEqual(greedy.token_ids[0], int(np.argmax(snapshot)))
        again = self.runner.last_logits()
        self.assertTrue(np.shares_memory(again, logits) or np.array_equal(again, snapshot))
        np.testing.assert_array_equal(again, snapshot)
        # The next step writes the same buffer: the view changes with it (no copy was made).
        self.runner.generate([greedy.token_ids[0]], max_new_tokens=0)
        after = self.runner.last_logits()
        self.assertFalse(np.array_equal(after, snapshot))
        if np.shares_memory(after, logits):
            np.testing.assert_array_equal(logits, after)
        self.runner.reset()
        self.assertIsNone(self.runner.last_logits())
        # The view keeps the runner's buffers alive.
        view = kestrel.Runner(fixture.program)
        view.generate(ids, max_new_tokens=0)
        kept = view.last_logits()
        del view
        np.testing.assert_allclose(kept, snapshot, rtol=0, atol=0)


if __name__ == "__main__":
    unittest.main()
