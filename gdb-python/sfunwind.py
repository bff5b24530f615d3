# SPDX-License-Identifier: MIT
# Loads sfunwind into GDB: `source /path/to/gdb-python/sfunwind.py`.
# The library (libsfunwind_gdb.so) is taken from $SFUNWIND_GDB_LIBRARY, else
# from next to this file (an installed copy), else from a build directory of
# this checkout (build/*/gdb-python/, the newest).
import glob
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))


def _find_library():
    if os.environ.get("SFUNWIND_GDB_LIBRARY"):
        return os.environ["SFUNWIND_GDB_LIBRARY"]
    beside = os.path.join(_here, "libsfunwind_gdb.so")
    if os.path.exists(beside):
        return beside
    built = glob.glob(os.path.join(os.path.dirname(_here), "build", "*", "gdb-python", "libsfunwind_gdb.so"))
    if built:
        return max(built, key=os.path.getmtime)
    raise RuntimeError("sfunwind: libsfunwind_gdb.so not found: build it (cmake --build --preset default) "
                       "or set SFUNWIND_GDB_LIBRARY")


if _here not in sys.path:
    sys.path.insert(0, _here)
import sfunwind_gdb  # noqa: E402

sfunwind_gdb.install(_find_library())
