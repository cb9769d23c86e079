"""This package's version: the one number the wheel's metadata is built from (pyproject reads
it), above the first implementation's last release (0.5.0) so that pip upgrades to it."""

__version__ = "0.6.0"
