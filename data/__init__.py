"""Data that ships with memlens: the demo dataset (``data.demo``). A store started from a clone lives in the
git-ignored ``data/store/`` beside it, which is not part of the package."""
