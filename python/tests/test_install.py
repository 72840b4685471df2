"""pip installs the package into a virtual environment without network, and it works there.

Packages the extension this build made (KESTREL_PREBUILT_EXTENSION) so the test stays quick;
the same command without that variable builds the extension with CMake first (see README).
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.environ.get("KESTREL_PYTHON_SOURCE", "")
EXTENSION = os.environ.get("KESTREL_EXTENSION", "")

CHECK = """
import kestrel, os, sys
assert kestrel.__file__.startswith(sys.prefix), kestrel.__file__
assert os.path.exists(os.path.join(os.path.dirname(kestrel.__file__), "_kestrel.pyi"))
kestrel.create_default_model("model")
kestrel.export("model", "model.kst", max_context=32, prefill_step=4)
result = kestrel.Runner("model.kst").generate("Once", max_new_tokens=4, temperature=0, ignore_eos=True)
assert len(result.token_ids) == 4
print("installed", kestrel.__version__)
"""


class InstallTest(unittest.TestCase):
    def test_pip_install_into_a_venv(self):
        if not SOURCE or not EXTENSION:
            raise unittest.SkipTest("run through ctest (KESTREL_PYTHON_SOURCE and KESTREL_EXTENSION)")
        with tempfile.TemporaryDirectory(prefix="kestrel-install-") as scratch:
            # pip builds in the tree it is given: build a copy, not the source tree.
            tree = os.path.join(scratch, "src")
            shutil.copytree(SOURCE, tree, ignore=shutil.ignore_patterns("tests", "build", "*.egg-info", "__pycache__"))
            venv = os.path.join(scratch, "venv")
            subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", venv], check=True)
            python = os.path.join(venv, "bin", "python")
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            env["KESTREL_PREBUILT_EXTENSION"] = EXTENSION
            install = subprocess.run([python, "-m", "pip", "install", "--no-build-isolation", "--no-index",
                                      "--no-deps", "--disable-pip-version-check", tree],
                                     capture_output=True, text=True, env=env, timeout=300)
            self.assertEqual(install.returncode, 0, install.stdout + install.stderr)
            work = os.path.join(scratch, "work")
            os.mkdir(work)
            run = subprocess.run([python, "-c", CHECK], capture_output=True, text=True, env=env, cwd=work, timeout=60)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            self.assertIn("installed 0.1.0", run.stdout)


if __name__ == "__main__":
    unittest.main()
