from pathlib import Path

import pytest

# Autouse, session-wide: HOME, the XDG folders and MEMORYWIRE_HOME point into the session's
# temporary folder, deployment settings are cleared, and the real data directory must be
# unchanged at the end (see memorywire/testing/home.py).
from memorywire.testing.home import private_home_session  # noqa: F401

_INTEGRATIONS = Path(__file__).resolve().parent / "integrations"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """``tests/integrations`` runs in its own process (``make test-integrations``) unless it
    is named on the command line: framework threads, event loops and warnings never share a
    process with the main suite, and ``make test`` does not pay for framework imports."""
    if collection_path != _INTEGRATIONS:
        return None
    here = config.invocation_params.dir
    named = (Path(here, a.split("::", 1)[0]).resolve() for a in config.args)
    return None if any(p.is_relative_to(_INTEGRATIONS) for p in named) else True
