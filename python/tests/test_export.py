"""kestrel.export: the CLI's export path, backend options from a dict, and its errors."""

import os
import unittest

import kestrel
from support import ModelFixture, run_cli

fixture = None


def setUpModule():
    global fixture
    fixture = ModelFixture()


def tearDownModule():
    fixture.remove()


def read(path):
    with open(path, "rb") as f:
        return f.read()


class ExportTest(unittest.TestCase):
    def test_report_describes_the_program_written(self):
        output = fixture.path("report.kst")
        report = kestrel.export(fixture.checkpoint, output, max_context=128, prefill_step=16)
        self.assertEqual(report["output"], output)
        self.assertEqual(report["max_context"], 128)
        self.assertEqual([m["name"] for m in report["methods"]], ["prefill", "decode"])
        self.assertEqual([m["step"] for m in report["methods"]], [16, 1])
        program = kestrel.Program(output)
        self.assertEqual(program.metadata["max_context"], 128)
        for method in report["methods"]:
            self.assertEqual(method["instructions"], program.methods[method["name"]].instructions)
            self.assertEqual(method["arena_bytes"], program.methods[method["name"]].arena_bytes)
        self.assertGreater(report["constant_bytes"], 0)

    def test_same_bytes_as_the_cli(self):
        ours = fixture.path("python.kst")
        cli = fixture.path("cli.kst")
        kestrel.export(fixture.checkpoint, ours, dtype="q8", max_context=64, prefill_step=8)
        code, _, err = run_cli("export", fixture.checkpoint, "-o", cli, "--dtype", "q8", "--max-context", "64",
                               "--prefill-step", "8", "-q")
        self.assertEqual(code, 0, err)
        self.assertEqual(read(ours), read(cli))

    def test_extra_prefill_steps_add_buckets_as_the_cli_does(self):
        ours = fixture.path("buckets-python.kst")
        cli = fixture.path("buckets-cli.kst")
        report = kestrel.export(fixture.checkpoint, ours, max_context=64, prefill_step=8, extra_prefill_steps=[32, 16])
        self.assertEqual([(m["name"], m["step"]) for m in report["methods"]],
                         [("prefill", 8), ("prefill_16", 16), ("prefill_32", 32), ("decode", 1)])
        self.assertEqual(kestrel.Program(ours).metadata["prefill_steps"], [8, 16, 32])
        code, _, err = run_cli("export", fixture.checkpoint, "-o", cli, "--max-context", "64", "--prefill-step", "8",
                               "--extra-prefill-steps", "32,16", "-q")
        self.assertEqual(code, 0, err)
        self.assertEqual(read(ours), read(cli))
        with self.assertRaises(ValueError) as caught:
            kestrel.export(fixture.checkpoint, fixture.path("x.kst"), max_context=64, extra_prefill_steps=[128])
        self.assertIn("extra prefill step 128", str(caught.exception))

    def test_f16_caches_as_the_cli_exports_them(self):
        ours = fixture.path("f16-cache-python.kst")
        cli = fixture.path("f16-cache-cli.kst")
        kestrel.export(fixture.checkpoint, ours, max_context=64, prefill_step=8, cache_dtype="f16")
        program = kestrel.Program(ours)
        self.assertEqual(program.metadata["cache_dtype"], "f16")
        caches = [i for i in program.methods["decode"].inputs if i.name.startswith("k_cache_")]
        self.assertTrue(caches)
        self.assertTrue(all(i.dtype == "f16" for i in caches))
        code, _, err = run_cli("export", fixture.checkpoint, "-o", cli, "--max-context", "64", "--prefill-step", "8",
                               "--cache-dtype", "f16", "-q")
        self.assertEqual(code, 0, err)
        self.assertEqual(read(ours), read(cli))
        result = kestrel.Runner(ours).generate("Once", max_new_tokens=4, temperature=0, ignore_eos=True)
        self.assertEqual(len(result.token_ids), 4)
        with self.assertRaises(ValueError) as caught:
            kestrel.export(fixture.checkpoint, fixture.path("x.kst"), cache_dtype="bf16")
        self.assertIn("cache dtype must be f32 or f16, got 'bf16'", str(caught.exception))

    def test_backend_options_from_a_dict_match_the_cli(self):
        ours = fixture.path("qnn-python.kst")
        cli = fixture.path("qnn-cli.kst")
        kestrel.export(fixture.checkpoint, ours, backend="qnn", max_context=64,
                       options={"soc_model": "SM8550", "skip_node_op_set": {"index_copy"}, "use_fp16": True,
                                "profile_level": 1, "skip_node_id_set": []})
        code, _, err = run_cli("export", fixture.checkpoint, "-o", cli, "--backend", "qnn", "--max-context", "64",
                               "--option", "soc_model=SM8550", "--option", "skip_node_op_set=index_copy",
                               "--option", "use_fp16=true", "--option", "profile_level=1", "-q")
        self.assertEqual(code, 0, err)
        self.assertEqual(read(ours), read(cli))
        program = kestrel.Program(ours)
        self.assertGreater(len(program.delegates), 0)
        self.assertTrue(all(d.backend_id == "qnn" for d in program.delegates))

    def test_sets_may_be_lists_or_tuples(self):
        as_set = fixture.path("set.kst")
        as_list = fixture.path("list.kst")
        report = kestrel.export(fixture.checkpoint, as_set, backend="qnn", max_context=64,
                                options={"skip_node_op_set": {"index_copy", "rms_norm"}})
        kestrel.export(fixture.checkpoint, as_list, backend="qnn", max_context=64,
                       options={"skip_node_op_set": ["rms_norm", "index_copy"]})
        self.assertEqual(read(as_set), read(as_list))
        # The skipped ops stay portable: the option reached the partitioner.
        for method in report["methods"]:
            portable = method["partitions"][0]["portable_ops"]
            self.assertIn("index_copy", portable)
            self.assertIn("rms_norm", portable)

    def test_unknown_option_names_the_closest_valid_one(self):
        with self.assertRaises(ValueError) as caught:
            kestrel.export(fixture.checkpoint, fixture.path("x.kst"), backend="qnn", options={"soc_modle": "SM8650"})
        message = str(caught.exception)
        self.assertIn("'soc_modle'", message)
        self.assertIn("did you mean 'soc_model'", message)
        self.assertIsInstance(caught.exception, kestrel.InvalidArgumentError)
        self.assertFalse(os.path.exists(fixture.path("x.kst")))

    def test_wrong_types_name_the_option(self):
        cases = {
            "use_fp16": "yes",              # str for bool
            "profile_level": 1.5,           # float for int
            "soc_model": 8650,              # int for str
            "skip_node_op_set": [1, 2],     # int set for string set
            "skip_node_id_set": ["a"],      # string set for int set
            "skip_mutable_buffer": None,    # not an option value at all
            "debug": 1,                     # int is not bool
            "skip_node_id_set ": [],        # unknown (trailing space)
        }
        for name, value in cases.items():
            with self.subTest(option=name), self.assertRaises(ValueError) as caught:
                kestrel.export(fixture.checkpoint, fixture.path("x.kst"), backend="qnn", options={name: value})
            self.assertIn(f"'{name}'", str(caught.exception))
        with self.assertRaises(ValueError) as caught:
            kestrel.export(fixture.checkpoint, fixture.path("x.kst"), backend="qnn",
                           options={"skip_node_op_set": ["index_copy", 3]})
        self.assertIn("skip_node_op_set", str(caught.exception))
        self.assertIn("string set", str(caught.exception))

    def test_values_outside_choices_and_ranges(self):
        with self.assertRaises(ValueError) as caught:
            kestrel.export(fixture.checkpoint, fixture.path("x.kst"), backend="qnn", options={"profile_level": 7})
        self.assertIn("profile_level", str(caught.exception))
        self.assertIsInstance(caught.exception, kestrel.OutOfRangeError)
        with self.assertRaises(ValueError) as caught:
            kestrel.export(fixture.checkpoint, fixture.path("x.kst"), backend="qnn",
                           options={"htp_performance_mode": "bursts"})
        self.assertIn("did you mean 'burst'", str(caught.exception))

    def test_backend_and_argument_errors(self):
        with self.assertRaises(ValueError) as caught:
            kestrel.export(fixture.checkpoint, fixture.path("x.kst"), backend="qnm")
        self.assertIn("did you mean 'qnn'", str(caught.exception))
        with self.assertRaises(ValueError) as caught:
            kestrel.export(fixture.checkpoint, fixture.path("x.kst"), options={"use_fp16": True})
        self.assertIn("need a backend", str(caught.exception))
        with self.assertRaises(ValueError) as caught:
            kestrel.export(fixture.checkpoint, fixture.path("x.kst"), dtype="f8")
        self.assertIn("'f8'", str(caught.exception))
        with self.assertRaises(ValueError) as caught:
            kestrel.export(fixture.checkpoint, fixture.path("x.kst"), prefill_step=0)
        self.assertIn("prefill step", str(caught.exception))
        with self.assertRaises(ValueError) as caught:
            kestrel.export(fixture.checkpoint, fixture.path("x.kst"), max_context=0)
        self.assertIn("max_context", str(caught.exception))
        with self.assertRaises(kestrel.InvalidArgumentError) as caught:
            kestrel.export(fixture.checkpoint, fixture.path("x.kst"), max_context=4096)
        self.assertIn("max_position_embeddings", str(caught.exception))
        with self.assertRaises(TypeError):
            kestrel.export(fixture.checkpoint, fixture.path("x.kst"), options=["use_fp16"])

    def test_bad_checkpoints_carry_the_cli_message(self):
        corrupt = fixture.path("corrupt")
        os.makedirs(corrupt, exist_ok=True)
        for name in ("config.json", "tokenizer.json"):
            with open(os.path.join(fixture.checkpoint, name), "rb") as src, open(os.path.join(corrupt, name), "wb") as dst:
                dst.write(src.read())
        with open(os.path.join(corrupt, "model.safetensors"), "wb") as f:
            f.write(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all")
        bad_config = fixture.path("bad-config")
        os.makedirs(bad_config, exist_ok=True)
        with open(os.path.join(bad_config, "config.json"), "w") as f:
            f.write('{"model_type": "llama", "vocab_size": "many"}')
        for checkpoint in (fixture.path("nowhere"), corrupt, bad_config):
            with self.subTest(checkpoint=os.path.basename(checkpoint)):
                with self.assertRaises(kestrel.Error) as caught:
                    kestrel.export(checkpoint, fixture.path("x.kst"))
                code, _, err = run_cli("export", checkpoint, "-o", fixture.path("x.kst"))
                self.assertNotEqual(code, 0)
                self.assertEqual(err.strip().splitlines()[-1], "kestrel export: " + str(caught.exception))
                self.assertIn(os.path.basename(checkpoint), str(caught.exception))
                self.assertFalse(os.path.exists(fixture.path("x.kst")))

    def test_never_overwrites_what_it_reads(self):
        weights = os.path.join(fixture.checkpoint, "model.safetensors")
        before = read(weights)
        with self.assertRaises(kestrel.Error) as caught:
            kestrel.export(fixture.checkpoint, weights)
        self.assertIn("model.safetensors", str(caught.exception))
        self.assertEqual(read(weights), before)

    def test_progress_lines_and_path_objects(self):
        import pathlib
        lines = []
        kestrel.export(pathlib.Path(fixture.checkpoint), pathlib.Path(fixture.path("p.kst")), max_context=64,
                       progress=lines.append)
        self.assertTrue(lines[0].startswith("loading checkpoint"))
        self.assertTrue(any(line.startswith("architecture LlamaForCausalLM: 4 layers") for line in lines))
        self.assertTrue(lines[-1].startswith("writing"))

        def broken(line):
            raise RuntimeError("progress failed: " + line)

        with self.assertRaises(RuntimeError) as caught:
            kestrel.export(fixture.checkpoint, fixture.path("q.kst"), max_context=64, progress=broken)
        self.assertIn("loading checkpoint", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
