"""Every ctypes struct of qmm._lib against the C compiler: the same size and the same offset for every
field, from a program compiled against include/qmm.h, qmm_io.h and qmm_measure.h."""

import ctypes
import os
import shutil
import subprocess

import pytest

from qmm import _lib

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _compiler():
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        pytest.skip("no C compiler to compare the structs with")
    return cc


def test_struct_layouts_match_the_c_compiler(tmp_path):
    lines = ["#include <stddef.h>", "#include <stdio.h>", '#include "qmm.h"', '#include "qmm_io.h"',
             '#include "qmm_measure.h"', "int main(void) {"]
    expected = []
    for cname, struct in _lib.STRUCTS.items():
        lines.append(f'printf("%zu\\n", sizeof({cname}));')
        expected.append((f"sizeof({cname})", ctypes.sizeof(struct)))
        for field, _ in struct._fields_:
            lines.append(f'printf("%zu\\n", offsetof({cname}, {field}));')
            expected.append((f"offsetof({cname}, {field})", getattr(struct, field).offset))
    lines += ["return 0;", "}"]
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "layout"
    subprocess.run([_compiler(), "-std=c11", "-I", os.path.join(ROOT, "include"), str(src), "-o", str(exe)], check=True)
    got = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()
    assert len(got) == len(expected)
    wrong = [f"{what}: C {c}, ctypes {py}" for (what, py), c in zip(expected, map(int, got)) if py != c]
    assert not wrong, "\n".join(wrong)


def test_every_struct_of_the_headers_is_mirrored():
    """Each typedef struct with fields in the public headers has its mirror (opaque handles excepted)."""
    import re
    found = set()
    for h in ("qmm.h", "qmm_io.h", "qmm_measure.h"):
        text = open(os.path.join(ROOT, "include", h)).read()
        found |= set(re.findall(r"typedef struct (qmm_\w+) \{", text))
    assert found == set(_lib.STRUCTS), f"headers {sorted(found)}, mirrored {sorted(_lib.STRUCTS)}"
