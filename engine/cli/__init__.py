"""The command-line interface ``python -m engine``: a thin layer that turns engine records into JSON or tables and
engine errors into one-line messages. The engine never imports it."""

from .main import build_parser, main

__all__ = ["main", "build_parser"]
