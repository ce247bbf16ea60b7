"""The research area's suite (run on its own: ``python -m pytest experiments/tests``):
the product suite's set-up (offscreen Qt, no network, a private FASTBIONER_HOME for
every test) and the tiny trained teacher of the core tests, reused rather than copied."""

from tests.conftest import private_user_data, shared_data  # noqa: F401 - fixtures, by name
from tests.core.conftest import one_thread, trained  # noqa: F401 - fixtures, by name
