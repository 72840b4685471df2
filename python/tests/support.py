"""Shared fixtures of the Python tests: the embedded default model, exported once per module.

Run through ctest, which sets PYTHONPATH to the built module and KESTREL_CLI to the CLI binary.
"""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

import kestrel

CLI = os.environ.get("KESTREL_CLI", "")


class ModelFixture:
    """A scratch directory holding the default model checkpoint and a program exported from it."""

    def __init__(self, max_context=256, prefill_step=32):
        self.dir = tempfile.mkdtemp(prefix="kestrel-python-")
        self.checkpoint = os.path.join(self.dir, "model")
        self.program = os.path.join(self.dir, "model.kst")
        kestrel.create_default_model(self.checkpoint)
        kestrel.export(self.checkpoint, self.program, max_context=max_context, prefill_step=prefill_step)
        with open(os.path.join(self.checkpoint, "config.json")) as f:
            self.config = json.load(f)

    def path(self, name):
        return os.path.join(self.dir, name)

    def remove(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def run_cli(*args):
    """Runs the kestrel CLI; returns (exit code, stdout, stderr)."""
    if not CLI:
        raise unittest.SkipTest("KESTREL_CLI is not set (run the tests through ctest)")
    done = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout, done.stderr
