"""Packaging checks run apart from the main suite (``make test-wheel``)."""

# HOME, the XDG folders and MEMORYWIRE_HOME in the session's temporary folder; the real data
# directory unchanged at the end (memorywire/testing/home.py, as in tests/conftest.py).
from memorywire.testing.home import private_home_session  # noqa: F401
