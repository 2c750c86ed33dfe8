"""``python -m engine``: the command-line interface (see ``engine/cli``)."""

from .cli.main import run

if __name__ == "__main__":
    run()
