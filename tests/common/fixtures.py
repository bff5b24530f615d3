# SPDX-License-Identifier: MIT
"""The committed fixture programs (tests/fixtures/manifest.tsv) for the
debugger test scripts."""

import os

FIXTURES = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures"))


def manifest(name="manifest.tsv"):
    """One dict per binary: path (relative to tests/fixtures), writer,
    version, arch, linkage, flags, runs (a list), notes."""
    rows = []
    with open(os.path.join(FIXTURES, name)) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            c = line.rstrip("\n").split("\t")
            rows.append({"path": c[0], "writer": c[1], "version": c[2], "arch": c[3], "linkage": c[4],
                         "flags": c[5], "runs": c[6].split(","), "notes": c[8] if len(c) > 8 else ""})
    return rows


def runs_here(entry, runs):
    """x86-64 programs that run here ("host" or "chroot"). Static builds run
    in the chroot too, though the manifest lists them for the host: they
    need no sid glibc."""
    if entry["arch"] != "x86-64" or entry["linkage"] == "shared":
        return False
    return runs in entry["runs"] or (runs == "chroot" and entry["linkage"] == "static")
