"""Pending patches: ``benchmarks/evidence/<page>/pending/*.patch``.

A change to files the GPU verification records cover (an example, its tests) that was written in
a session where no GPU could be started is kept as a patch, cited on its Benchmarks page, until a
GPU session applies it and verifies it. It must keep applying to the tree: a later edit of the
same lines fails here, and whoever made it updates the patch.
"""

import subprocess

import pytest
from support import ROOT

PATCHES = sorted((ROOT / "benchmarks" / "evidence").glob("*/pending/*.patch"))


@pytest.mark.parametrize("patch", PATCHES, ids=[p.name for p in PATCHES])
def test_a_pending_patch_still_applies(patch):
    done = subprocess.run(["git", "apply", "--check", str(patch)], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, f"{patch.relative_to(ROOT)} no longer applies:\n{done.stderr}"
