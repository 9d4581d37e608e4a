# SPDX-License-Identifier: Apache-2.0
"""Builds libspanprof_ctx (../spanprof_ctx.c, the writer library) into the package as
spanprof_context/_libspanprof_ctx<EXT_SUFFIX>: a plain shared library with no Python module
inside, loaded with ctypes. It carries an extension name only so that the wheel is tagged for
its platform. Compiled as writer/writer.mk does: -fPIC -mtls-dialect=gnu2 (TLSDESC).
The build's scratch files go to $SPANPROF_PY_BUILD (default: a directory under /tmp), not into
the source tree."""
import os
import shutil
import sys
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
WRITER = os.path.normpath(os.path.join(HERE, ".."))
SOURCES = ("spanprof_ctx.c", "spanprof_ctx.h")
SCRATCH = os.environ.get("SPANPROF_PY_BUILD") or os.path.join(
    tempfile.gettempdir(), f"spanprof-context-build-{os.getuid()}")
os.makedirs(SCRATCH, exist_ok=True)


class BuildWriter(build_ext):
    """Copies the writer's C sources next to the build's objects (setuptools keeps sources
    inside the project) and links them as a shared library without Python symbols."""

    def run(self):
        src = os.path.join(self.build_temp, "writer")
        os.makedirs(src, exist_ok=True)
        for name in SOURCES:
            path = os.path.join(WRITER, name)
            if not os.path.exists(path):
                sys.exit(f"spanprof-context: {path} is missing: build from a spanprof checkout "
                         "(writer/python), or install without it and set SPANPROF_CTX_LIB")
            shutil.copy(path, src)
        for ext in self.extensions:
            ext.sources = [os.path.join(src, "spanprof_ctx.c")]
        super().run()

    def get_export_symbols(self, ext):
        return []  # not a Python module: no PyInit_ symbol


setup(
    ext_modules=[Extension(
        "spanprof_context._libspanprof_ctx", sources=["spanprof_ctx.c"],
        extra_compile_args=["-O2", "-fPIC", "-mtls-dialect=gnu2", "-std=c11", "-D_GNU_SOURCE",
                            "-Wall", "-Wextra", "-Werror"],
        extra_link_args=["-Wl,-soname,libspanprof_ctx.so"])],
    cmdclass={"build_ext": BuildWriter},
    options={"build": {"build_base": os.path.join(SCRATCH, "build")},
             "egg_info": {"egg_base": SCRATCH}},
)
