"""Umbrella distribution ``ssvm``: no extensions, only the ``ssvm`` command.

Its dependencies are the subpackages in this repository; install them first,
in dependency order (see README.md and tools/install.sh).
"""

from setuptools import setup

setup()
