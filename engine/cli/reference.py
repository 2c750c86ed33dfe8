"""The CLI reference (docs/cli.md), generated from the argparse parser itself, so it cannot drift from the code:

    python -m engine.cli.reference                      # print it
    python -m engine.cli.reference --write docs/cli.md  # rewrite the file

tests/test_docs.py fails when docs/cli.md differs from what this prints.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .main import PROG, _common, build_parser

# What every command shares, which no single argument's help says.
BEHAVIOUR = (
    "The store is `--store`, else `$MEMLENS_STORE`, else `data/store/` in the current folder. Without `--json`",
    "listings print as tables; with it, JSON on stdout. `retrieve`, `trace` and `replay` always print the trace as",
    "JSON (`--summary` for a table), `export` prints JSON lines. Errors are one line on stderr (`error: ...`) with",
    "exit status 2; `--debug` shows the traceback of an unexpected error (exit 1); `eval` exits with 3 when a",
    "`--fail-under` or `--max-drop` check fails. Commands that only read never create a store.",
)

# Usage lines are laid out for this width, not the terminal's, so the file is the same on every machine.
USAGE_WIDTH = 10_000


def _cell(text: str) -> str:
    """Text fit for one Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def _usage(parser: argparse.ArgumentParser, hidden: set[str]) -> str:
    formatter = argparse.HelpFormatter(parser.prog, width=USAGE_WIDTH)
    shown = [a for a in parser._actions if a.dest not in hidden]
    formatter.add_usage(parser.usage, shown, parser._mutually_exclusive_groups, prefix="")
    return formatter.format_help().strip()


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """An action's help with argparse's own %(default)s-style expansions applied."""
    if not action.help or action.help == argparse.SUPPRESS:
        return ""
    return argparse.HelpFormatter(parser.prog)._expand_help(action)


def _name(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    names = ", ".join(action.option_strings)
    if action.nargs == 0:
        return f"`{names}`"
    metavar = action.metavar or action.dest.upper()
    if isinstance(metavar, tuple):
        metavar = " ".join(metavar)
    repeat = " ..." if action.nargs in ("+", "*") or isinstance(action, argparse._AppendAction) else ""
    return f"`{names} {metavar}{repeat}`"


def _arguments_table(parser: argparse.ArgumentParser, hidden: set[str]) -> list[str]:
    rows = []
    for action in parser._actions:
        if action.dest in hidden or isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        what = _help(parser, action)
        if action.choices is not None and not isinstance(action.choices, dict):
            what += f" (one of: {', '.join(str(c) for c in action.choices)})"
        required = "yes" if action.required or not action.option_strings else ""
        rows.append(f"| {_cell(_name(action))} | {required} | {_cell(what)} |")
    if not rows:
        return ["No arguments beyond the global options."]
    return ["| argument | required | what it does |", "|---|---|---|", *rows]


def _commands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of every command, in the order ``memlens --help`` lists them."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help or "" for c in sub._choices_actions}
    return [(name, helps.get(name, ""), p) for name, p in sub.choices.items()]


def cli_markdown() -> str:
    """docs/cli.md: the global options, a table of the commands, and per command its usage and arguments."""
    parser = build_parser()
    common = _common()
    global_dests = {a.dest for a in common._actions} | {"help"}
    commands = _commands(parser)
    lines = [
        "# CLI reference",
        "",
        "<!-- generated from the argparse parser (engine/cli/) by python -m engine.cli.reference --write docs/cli.md;"
        " tests/test_docs.py fails when this file is out of date -->",
        "",
        f"`{PROG}` (installed by `pip install -e .`; `python -m engine` is the same program). "
        + _cell(parser.description or ""),
        _cell(parser.epilog or ""),
        "",
        *BEHAVIOUR,
        "",
        "## Global options",
        "",
        "Accepted before or after the command.",
        "",
        *_arguments_table(common, {"help"}),
        "",
        "## Commands",
        "",
        "| command | what it does |",
        "|---|---|",
        *(f"| [`{name}`](#{PROG}-{name}) | {_cell(help)} |" for name, help, _ in commands),
    ]
    for name, _help_line, sub in commands:
        lines += [
            "",
            f"### {PROG} {name}",
            "",
            _cell(sub.description or _help_line),
            "",
            "```",
            _usage(sub, global_dests - {"help"}),
            "```",
            "",
            *_arguments_table(sub, global_dests),
        ]
        if any(isinstance(a, argparse._SubParsersAction) for a in sub._actions):  # a group: `memlens graph ...`
            for inner, inner_help, parser_of in _commands(sub):
                lines += [
                    "",
                    f"#### {PROG} {name} {inner}",
                    "",
                    _cell(parser_of.description or inner_help),
                    "",
                    "```",
                    _usage(parser_of, global_dests - {"help"}),
                    "```",
                    "",
                    *_arguments_table(parser_of, global_dests),
                ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="Print the CLI reference (Markdown), or write it to a file.")
    ap.add_argument("--write", type=Path, metavar="PATH", help="write the reference to this file (docs/cli.md)")
    args = ap.parse_args()
    if args.write:
        args.write.write_text(cli_markdown(), encoding="utf-8")
    else:
        print(cli_markdown(), end="")
