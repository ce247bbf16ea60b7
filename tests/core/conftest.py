"""Fixtures of the core tests that train: one torch thread, and the tiny teacher the
distillation tests share (tests/core/distill_setup.py)."""

import pytest
import torch

from tests.core.distill_setup import train_tiny_teacher


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models train fastest on one thread, above all on a shared CPU where
    torch's second thread waits on other processes (measured 3 s against 43 s for
    a tiny teacher at load 9 on 2 cores). Modules that train take it with
    ``pytestmark = pytest.mark.usefixtures("one_thread")``."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def trained(tmp_path_factory, one_thread):
    """A tiny teacher fine-tuned on the tiny corpus, in a registry of its own: (registry,
    corpus file). Built once per module; tests copy it with ``fresh_registry``."""
    return train_tiny_teacher(tmp_path_factory.mktemp("registry"), tmp_path_factory.mktemp("data"))
