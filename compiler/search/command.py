"""`parc search FILE [--top N] [--write] [--format json]`: the command around `search()`.

Exit status: 0 a layout was found (and, with --write, written); 1 the spec has errors, or no
assignment passes the checks and fits in memory (E0501-E0503); 2 usage error (unreadable spec,
the spec cannot be written).
"""

from __future__ import annotations

import sys

import click


def run(path: str, top: int, write: bool, fmt: str) -> int:
    from .. import cli
    from ..diagnostics import dumps_json, has_errors, summary_line
    from . import search
    from .progress import ProgressBar
    from .render import render_diagnostics, render_json, render_text

    results, unreadable = cli._compile_all([path])
    if unreadable:
        return 2
    compilation = results[0]
    if compilation.spec is not None and compilation.spec.cluster is not None \
            and not has_errors(compilation.diagnostics):
        from .cluster_command import run_cluster

        return run_cluster(path, compilation, write, fmt)
    if compilation.plan is None or has_errors(compilation.diagnostics):
        return cli._report(results, fmt)
    bar = ProgressBar(sys.stderr)
    try:
        result = search(compilation, top=top, progress=bar)
    finally:
        bar.close()
    err_style = cli._style(sys.stderr)
    if result.diagnostics:
        if fmt == "json":
            click.echo(dumps_json(render_json(result)), nl=False)
        else:
            click.echo(render_text(result, cli._style(sys.stdout)), nl=False)
            click.echo(render_diagnostics(result, err_style), err=True, nl=False)
            click.echo(f"{path}: {summary_line(result.diagnostics, err_style)}", err=True)
        return 1
    written = False
    if write:
        status = _write(path, compilation, result)
        if status:
            return status
        written = bool(result.space.holes)
    if fmt == "json":
        click.echo(dumps_json(render_json(result, written=written)), nl=False)
    else:
        click.echo(render_text(result, cli._style(sys.stdout)), nl=False)
    if write:
        click.echo(f"wrote {path}" if written else f"{path}: no `?` to fill; nothing written", err=True)
    return 0


def _write(path: str, compilation, result) -> int:
    """Put the winner's text in place atomically, unless the spec changed while search ran."""
    if not result.space.holes:
        return 0
    return write_answer(path, compilation, result.winner.text)


def write_answer(path: str, compilation, text: str) -> int:
    """Write `text` over the spec atomically, unless the spec changed since it was compiled."""
    from ..atomic import write_file
    try:
        with open(path, "rb") as handle:
            current = handle.read().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        click.echo(f"error: cannot re-read `{path}` before writing it: {exc}", err=True)
        return 2
    if current.lstrip("\ufeff") != compilation.source.text:
        click.echo(f"error: `{path}` changed while search ran; nothing written\n"
                   f"help: run `parc search {path} --write` again", err=True)
        return 2
    if current.startswith("\ufeff"):
        text = "\ufeff" + text
    try:
        write_file(path, text)
    except OSError as exc:  # the spec is untouched: write_file renames only a complete file
        click.echo(f"error: cannot write `{path}`: {exc.strerror or exc}", err=True)
        return 2
    return 0
