"""The reviewer web UI (server-rendered, mounted at ``/ui``); see :mod:`.app`."""

from memorywire.server.ui.app import review_app

__all__ = ["review_app"]
