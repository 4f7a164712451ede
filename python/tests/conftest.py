"""Fixtures of the package tests. Random inputs are fresh on every run: the seed comes from os.urandom,
or from QMM_TEST_SEED (decimal or 0x-hex), and each test derives its generator from the seed and its
node id, so `QMM_TEST_SEED=<seed> pytest <nodeid>` reproduces one failing test."""

import os
import zlib

import numpy as np
import pytest

_env = os.environ.get("QMM_TEST_SEED", "").strip()
SEED = int(_env, 0) if _env else int.from_bytes(os.urandom(8), "little")


def pytest_report_header(config):
    import qmm
    return f"qmm package tests: QMM_TEST_SEED={SEED}; libqmm {qmm.library_path()}"


@pytest.fixture
def rng(request):
    return np.random.default_rng([SEED, zlib.crc32(request.node.nodeid.encode())])


@pytest.fixture
def seedtag(request):
    return f"[QMM_TEST_SEED={SEED} {request.node.nodeid}]"
