from __future__ import annotations

import pytest

# HOME, the XDG folders and MEMORYWIRE_HOME in the session's temporary folder; the real data
# directory unchanged at the end (memorywire/testing/home.py, as in tests/conftest.py).
from memorywire.testing.home import private_home_session  # noqa: F401


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
