"""pip install ./python: configures this repository with CMake (the library, an in-tree Kokkos
with OpenMP, the Python package; no tests, examples or drivers), builds the extension module
_ternarycounter and puts it in the wheel. CMAKE_ARGS (space-separated) adds CMake options, e.g.
CMAKE_ARGS="-DKokkos_ROOT=/opt/kokkos" for an installed Kokkos, CMAKE_BUILD_PARALLEL_LEVEL the
build's jobs."""

import glob
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        if not os.path.isfile(os.path.join(REPOSITORY, "src", "TernaryCounter.hpp")):
            sys.exit(f"ternarycounter: {REPOSITORY} is not the TernaryCounter repository; "
                     f"build from a clone (pip >= 21.3 builds ./python in place)")
        build = os.path.abspath(os.path.join(self.build_temp, "cmake"))
        args = ["-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_CXX_STANDARD=20",
                "-DKokkos_ENABLE_SERIAL=ON", "-DKokkos_ENABLE_OPENMP=ON",
                "-DTernaryCounter_ENABLE_TESTS=OFF", "-DTernaryCounter_ENABLE_EXAMPLES=OFF",
                "-DTernaryCounter_ENABLE_PERF_TESTS=OFF", "-DTernaryCounter_ENABLE_PYTHON=ON",
                f"-DPython3_EXECUTABLE={sys.executable}"]
        try:
            import pybind11
            args.append(f"-Dpybind11_DIR={pybind11.get_cmake_dir()}")
        except ImportError:
            pass  # CMake finds an installed pybind11 (Debian: pybind11-dev)
        args += os.environ.get("CMAKE_ARGS", "").split()
        subprocess.check_call(["cmake", "-S", REPOSITORY, "-B", build, *args])
        subprocess.check_call(["cmake", "--build", build, "--target", "_ternarycounter"])
        built = glob.glob(os.path.join(build, "python", "ternarycounter", "_ternarycounter*"))
        if len(built) != 1:
            sys.exit(f"ternarycounter: expected one built module in {build}, found {built}")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built[0], target)


setup(ext_modules=[Extension("ternarycounter._ternarycounter", sources=[])],
      cmdclass={"build_ext": CMakeBuild})
