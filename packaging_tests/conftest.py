"""Packaging checks run apart from the main suite (``make test-wheel``)."""
