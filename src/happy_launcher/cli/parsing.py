"""The CLI's parsing, on argparse: a verb is a function `(prog, argv) -> exit code` that builds its
own parser (its docstring is its help), and a group of verbs (`Group`) dispatches on its first
word. Only the verb that runs is imported and parsed for: `happy watch`'s first line waits for
nothing else (typer loaded ~90 ms of itself and pydantic before any verb ran)."""

from __future__ import annotations

import argparse
import importlib
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple, NoReturn

Verb = Callable[[str, list[str]], int]  # (prog, e.g. "happy watch"; its arguments) -> exit code
USAGE = 2  # a bad command line, as every usage error (README: errors, of every verb)


class Parser(argparse.ArgumentParser):
    """A verb's parser: a bad command line is one line on stderr and exit 2, like every error."""

    def error(self, message: str) -> NoReturn:
        bad(self.prog, message)


def bad(prog: str, message: str) -> NoReturn:
    sys.stderr.write(f"{prog}: {message} (see `{prog} --help`)\n")
    raise SystemExit(USAGE)


def parser(prog: str, verb: Callable[..., object]) -> Parser:
    """A parser for `verb`, its docstring as its help."""
    return Parser(
        prog=prog,
        description=doc(verb),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,  # `--from` must not quietly mean `--from-start`
    )


def optional(p: Parser, name: str, help: str) -> Parser:
    """`p` with an optional positional argument `name` (shown as NAME)."""
    p.add_argument(name, nargs="?", metavar=name.upper(), help=help)
    return p


def doc(verb: Callable[..., object]) -> str:
    """`verb`'s docstring, its indentation removed (as inspect.cleandoc, without loading inspect)."""
    return cleaned(verb.__doc__ or "")


def cleaned(text: str) -> str:
    first, _, rest = text.strip().partition("\n")
    return f"{first}\n{textwrap.dedent(rest)}".strip()


def summary(verb: Callable[..., object]) -> str:
    """The first sentence of a verb's docstring: its line in its group's help."""
    first = " ".join(doc(verb).partition("\n\n")[0].split())
    return first.partition(". ")[0].removesuffix(".")


def load(where: str) -> Verb:
    """The verb at "module:function", imported now (a verb loads when it runs)."""
    module, _, name = where.partition(":")
    verb: Verb = getattr(importlib.import_module(module), name)
    return verb


class Group(NamedTuple):
    """Verbs under one word (`happy`, `happy auth`): each section a title and its verbs, by name
    -> "module:function"."""

    prog: str
    doc: str
    sections: Sequence[tuple[str, Mapping[str, str]]]
    options: str = ""  # the group's own options, for its help

    def run(self, argv: Sequence[str]) -> int:
        """Run the verb `argv[0]`; with none, or with -h/--help, the help (exit 2 without a verb,
        as a bad command line)."""
        if not argv or argv[0] in ("-h", "--help"):
            sys.stdout.write(self.help())
            return 0 if argv else USAGE
        verbs = {name: where for _, section in self.sections for name, where in section.items()}
        name = argv[0]
        if name not in verbs:
            what = "option" if name.startswith("-") else "command"
            bad(self.prog, f"no such {what}: {name!r} (one of: {', '.join(verbs)})")
        return load(verbs[name])(f"{self.prog} {name}", list(argv[1:]))

    def help(self) -> str:
        width = max(len(name) for _, section in self.sections for name in section) + 2
        lines = [f"usage: {self.prog} COMMAND [ARGS]...", "", cleaned(self.doc)]
        for title, section in self.sections:
            lines += ["", f"{title}:"]
            lines += [f"  {name.ljust(width)}{summary(load(where))}" for name, where in section.items()]
        if self.options:
            lines += ["", "options:", self.options]
        lines += ["", f"`{self.prog} COMMAND --help` tells more of each."]
        return "\n".join(lines) + "\n"
