"""kestrel.Program: metadata, methods with their I/O, delegates, and unreadable files."""

import os
import unittest

import kestrel
from support import ModelFixture, run_cli

fixture = None


def setUpModule():
    global fixture
    fixture = ModelFixture(max_context=96, prefill_step=16)


def tearDownModule():
    fixture.remove()


class ProgramTest(unittest.TestCase):
    def test_metadata_follows_the_checkpoint(self):
        program = kestrel.Program(fixture.program)
        meta = program.metadata
        self.assertEqual(meta["io_contract"], "hf_static")
        self.assertEqual(meta["io_contract_version"], 1)
        self.assertEqual(meta["max_context"], 96)
        self.assertEqual(meta["vocab_size"], fixture.config["vocab_size"])
        self.assertEqual(meta["n_layers"], fixture.config["num_hidden_layers"])
        self.assertEqual(meta["n_kv_heads"], fixture.config["num_key_value_heads"])
        self.assertEqual(meta["prefill_step"], 16)
        self.assertEqual(meta["bos_id"], fixture.config["bos_token_id"])
        self.assertEqual(meta["eos_ids"], [fixture.config["eos_token_id"]])
        self.assertEqual(program.file_bytes, os.path.getsize(fixture.program))

    def test_methods_list_their_inputs_and_outputs(self):
        config = fixture.config
        heads = config["num_key_value_heads"]
        head_dim = config["hidden_size"] // config["num_attention_heads"]
        methods = kestrel.Program(fixture.program).methods
        self.assertEqual(list(methods), ["prefill", "decode"])
        for name, step in (("prefill", 16), ("decode", 1)):
            method = methods[name]
            self.assertEqual(method.name, name)
            inputs = {t.name: t for t in method.inputs}
            self.assertEqual(inputs["tokens"].dtype, "i64")
            self.assertEqual(inputs["tokens"].shape, (1, step))
            self.assertEqual(inputs["tokens"].nbytes, 8 * step)
            for layer in range(config["num_hidden_layers"]):
                cache = inputs[f"k_cache_{layer}"]
                self.assertEqual((cache.dtype, cache.shape), ("f32", (1, heads, 96, head_dim)))
                self.assertEqual(cache.nbytes, 4 * heads * 96 * head_dim)
            logits = method.outputs[0]
            self.assertEqual(logits.dtype, "f32")
            self.assertEqual(logits.shape, (1, 1, config["vocab_size"]))
        self.assertEqual(kestrel.Program(fixture.program).delegates, [])

    def test_describe_is_what_inspect_prints(self):
        code, out, err = run_cli("inspect", fixture.program)
        self.assertEqual(code, 0, err)
        self.assertEqual(kestrel.Program(fixture.program).describe(), out)

    def test_delegates_carry_their_compile_specs(self):
        path = fixture.path("qnn.kst")
        kestrel.export(fixture.checkpoint, path, backend="qnn", max_context=64, options={"soc_model": "SM8550"})
        delegates = kestrel.Program(path).delegates
        self.assertGreater(len(delegates), 0)
        for delegate in delegates:
            self.assertEqual(delegate.backend_id, "qnn")
            self.assertGreater(delegate.payload_bytes, 0)
            self.assertTrue(delegate.compile_specs)
            self.assertTrue(all(isinstance(v, bytes) for v in delegate.compile_specs.values()))

    def test_unreadable_files_raise_with_the_path(self):
        with self.assertRaises(kestrel.IoError) as caught:
            kestrel.Program(fixture.path("missing.kst"))
        self.assertIsInstance(caught.exception, OSError)
        self.assertIn("missing.kst", str(caught.exception))
        with open(fixture.program, "rb") as f:
            data = f.read()
        truncated = fixture.path("truncated.kst")
        with open(truncated, "wb") as f:
            f.write(data[: len(data) // 2])
        with self.assertRaises(kestrel.Error) as caught:
            kestrel.Program(truncated)
        self.assertIn("truncated.kst", str(caught.exception))
        code, _, err = run_cli("inspect", truncated)
        self.assertNotEqual(code, 0)
        self.assertEqual(err.strip(), "kestrel inspect: " + str(caught.exception))


if __name__ == "__main__":
    unittest.main()
