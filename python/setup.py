"""Builds kestrel._kestrel with the project's CMake build and packages it with the kestrel package.

KESTREL_PREBUILT_EXTENSION=path/to/_kestrel.*.so packages an extension already built (by the
tree's own build) instead of building one.
"""

import os
import pathlib
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent.parent


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        target = pathlib.Path(self.get_ext_fullpath(ext.name)).resolve()
        target.parent.mkdir(parents=True, exist_ok=True)
        prebuilt = os.environ.get("KESTREL_PREBUILT_EXTENSION")
        if prebuilt:
            shutil.copyfile(prebuilt, target)
            return
        build_dir = pathlib.Path(self.build_temp).resolve() / "cmake"
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        subprocess.check_call(["cmake", "-S", str(ROOT), "-B", str(build_dir), *generator,
                               "-DCMAKE_BUILD_TYPE=Release", "-DKESTREL_BUILD_TESTS=OFF", "-DKESTREL_BUILD_BENCH=OFF",
                               "-DKESTREL_BUILD_PYTHON=ON", f"-DPython_EXECUTABLE={sys.executable}"])
        subprocess.check_call(["cmake", "--build", str(build_dir), "--target", "kestrel_python",
                               "-j", str(os.cpu_count() or 2)])
        built = sorted((build_dir / "python" / "kestrel").glob("_kestrel*.so"))
        if not built:
            raise RuntimeError(f"the CMake build produced no _kestrel extension in {build_dir}")
        shutil.copyfile(built[0], target)


setup(ext_modules=[Extension("kestrel._kestrel", sources=[])], cmdclass={"build_ext": CMakeBuild})
