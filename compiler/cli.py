"""The `parc` command.

Exit status: 0 when every spec is clean (warnings allowed), 1 when a spec has errors, 2 for a
usage error (unknown option, unreadable path). Diagnostics go to stderr as text, or to stdout as
JSON with `--format json`. Colour is used only on a terminal and never when NO_COLOR is set.
Heavy modules are imported inside commands so that `parc --help` stays instant.
"""

from __future__ import annotations

import os
import sys

import click

from . import __version__
from .defaults import DEFAULT_TOP

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class ParcGroup(click.Group):
    def list_commands(self, ctx):
        return list(self.commands)  # definition order: the order a user meets them


class GuardedGroup(ParcGroup):
    """A bug in parc ends with a short report and status 70, never a traceback for the user."""

    def main(self, *args, **kwargs):
        try:
            return super().main(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the last line of defence
            if os.environ.get("PARC_DEBUG"):
                raise
            sys.stderr.write(f"error: internal error in parc: {type(exc).__name__}: {exc}\n"
                             "help: this is a bug in parc, not in your spec; set PARC_DEBUG=1 for a traceback "
                             "and please report it\n")
            sys.exit(70)


@click.group(cls=GuardedGroup, context_settings=CONTEXT, epilog="""\b
Examples:
  parc check specs/llama3-405b.par
  parc explain specs/llama3-405b.par
  parc search specs/llama3-70b-search.par --write
  parc compile specs/llama3-405b.par -o out/llama3-405b
  parc fmt --check specs/*.par
  parc codes E0201
""")
@click.version_option(__version__, "-V", "--version", prog_name="parc")
def main() -> None:
    """parc compiles distributed-training layouts: it checks a .par spec against the model and
    the hardware, predicts its memory and speed, and generates the PyTorch job that runs it."""


def _style(stream):
    from .diagnostics import Style

    return Style.for_stream(stream)


def _report(results, fmt: str) -> int:
    """Print diagnostics of several compilations; return the exit status."""
    from .diagnostics import dumps_json, has_errors, render_text, summary_line

    failed = any(has_errors(r.diagnostics) for r in results)
    if fmt == "json":
        files = []
        for r in results:
            files.append({
                "file": r.source.path,
                "ok": not has_errors(r.diagnostics),
                "holes": [h.name for h in (r.plan.holes if r.plan else ())],
                "diagnostics": [d.model_dump(mode="json") for d in _sorted(r.diagnostics)],
            })
        click.echo(dumps_json({"files": files}), nl=False)
        return 1 if failed else 0
    err_style = _style(sys.stderr)
    for r in results:
        if r.diagnostics:
            text = render_text(r.diagnostics, {r.source.path: r.source}, err_style, brief_allowed=True)
            click.echo(text, err=True, nl=False)
            click.echo(f"{r.source.path}: {summary_line(r.diagnostics, err_style)}", err=True)
        if not has_errors(r.diagnostics) and r.plan is not None:
            click.echo(_ok_line(r.plan))
    return 1 if failed else 0


def _sorted(diagnostics):
    from .diagnostics import sort_key

    return sorted(diagnostics, key=sort_key)


def _ok_line(plan) -> str:
    layout = " x ".join(f"{a.name} {a.degree if a.degree is not None else '?'}" for a in plan.layout.axes)
    ep = plan.layout.ep
    if ep.folded_over:
        layout += f", ep {ep.degree if ep.degree is not None else '?'} over {' x '.join(ep.folded_over)}"
    size = f"{plan.cluster.world_size:,} GPUs" if plan.cluster.world_size else "size open"
    line = f"{plan.source}: ok ({layout}; {size})"
    if plan.holes:
        names = ", ".join(h.name for h in plan.holes)
        line += f"\n  {len(plan.holes)} hole{'s' if len(plan.holes) != 1 else ''} open: {names} (`parc search` fills them)"
    return line


def _compile_all(paths):
    """Compile each path; unreadable paths are usage errors (exit 2) reported with the rest."""
    from .diagnostics import render_text
    from .pipeline import UnreadableSpec, compile_path

    results = []
    unreadable = False
    for path in paths:
        try:
            results.append(compile_path(path))
        except UnreadableSpec as exc:
            unreadable = True
            click.echo(render_text([exc.diagnostic], {}, _style(sys.stderr)), err=True, nl=False)
    return results, unreadable


_FORMAT = click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
                       help="text for people (stderr), json for tools (stdout)")


@main.command(context_settings=CONTEXT, epilog="""\b
Examples:
  parc check specs/llama3-405b.par
  parc check specs/*.par --format json
""")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@_FORMAT
def check(files, fmt):
    """Check specs and report every problem at once."""
    results, unreadable = _compile_all(files)
    status = _report(results, fmt)
    sys.exit(2 if unreadable else status)


@main.command(context_settings=CONTEXT, epilog="""\b
Examples:
  parc explain specs/llama3-405b.par
  parc explain specs/tiny.par specs/llama3-405b.par
  parc explain specs/llama3-405b.par --format json | jq .memory.peak_bytes
\b
With several files, text reports follow one another and JSON is {"files": [report, ...]}
(a file whose front end failed has its `parc check --format json` entry instead).
""")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text for people or json for tools, both on stdout")
def explain(files, fmt):
    """Show the predicted memory of every pipeline stage, the step time and the failing rules."""
    from .diagnostics import dumps_json, has_errors
    from .explain import build_report, render_report

    results, unreadable = _compile_all(files)
    status = 2 if unreadable else 0
    entries = []  # JSON: a report per file, or check's entry for a file without a plan
    shown = 0
    for result in results:
        if has_errors(result.diagnostics):
            status = max(status, 1)
        if result.plan is None:  # nothing to explain: its errors, as check prints them
            if fmt == "json":
                entries.append({"file": result.source.path, "ok": False, "holes": [],
                                "diagnostics": [d.model_dump(mode="json") for d in _sorted(result.diagnostics)]})
            else:
                _report([result], fmt)
            continue
        report = build_report(result)
        if fmt == "json":
            entries.append(report)
        else:
            click.echo(("\n" if shown else "") + render_report(report, result, _style(sys.stdout)), nl=False)
        shown += 1
    if fmt == "json" and entries:
        single = len(files) == 1 and results[0].plan is not None  # one file: its report, as always
        click.echo(dumps_json(entries[0] if single else {"files": entries}), nl=False)
    sys.exit(status)


@main.command(context_settings=CONTEXT, epilog="""\b
Examples:
  parc search specs/llama3-70b-search.par
  parc search specs/llama3-70b-search.par --top 20
  parc search specs/llama3-70b-search.par --write     # fill the `?` in place, for review as a diff
  parc search specs/llama3-70b-search.par --format json | jq '.candidates[0].values'
\b
Exit status: 0 a layout was found (and written with --write); 1 the spec has
errors, or no layout passes the checks and fits in memory; 2 usage error.
""")
@click.argument("file", metavar="FILE")
@click.option("--top", "top", type=click.IntRange(1, 100), default=DEFAULT_TOP, show_default=True, metavar="N",
              help="how many layouts to list")
@click.option("--write", "write", is_flag=True,
              help="put the best layout's values into FILE in place (atomically; comments and layout kept)")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text for people or json for tools, both on stdout")
def search(file, top, write, fmt):
    """Fill every `?` of a spec with the layouts predicted fastest that pass every check and fit in
    memory, and say why each runner-up lost."""
    from .search.command import run

    sys.exit(run(file, top, write, fmt))


@main.command("import", context_settings=CONTEXT, epilog="""\b
Examples:
  parc import job/torchtitan.args > llama.par        # a torchtitan 0.3 command line
  parc import launch_gpt.sh --dp 16 -o gpt.par       # a Megatron-LM launch script
  parc import config.json                            # a Hugging Face model: the model block
""")
@click.argument("file", metavar="FILE")
@click.option("-o", "--output", "output", default=None, metavar="PATH", help="write the spec here (default: stdout)")
@click.option("--gpu", default="h100-sxm", show_default=True, help="the GPU (no imported file says it)")
@click.option("--gpus-per-node", "gpus_per_node", type=click.IntRange(1, 1024), default=8, show_default=True)
@click.option("--dp", type=click.IntRange(1, 1 << 20), default=1, show_default=True,
              help="data-parallel degree of a Megatron-LM job (its arguments derive it from the world size)")
def import_(file, output, gpu, gpus_per_node, dp):
    """Write a spec from a torchtitan command line, a Megatron-LM launch script or a config.json;
    options parc has no setting for are reported (W0701), never dropped."""
    from .atomic import write_file
    from .diagnostics import has_errors, render_text
    from .fmt import format_document
    from .importer import Defaults, import_source
    from .pipeline import UnreadableSpec, read_source
    from .syntax import parse

    try:
        source, diagnostics = read_source(file)
    except UnreadableSpec as exc:
        click.echo(render_text([exc.diagnostic], {}, _style(sys.stderr)), err=True, nl=False)
        sys.exit(2)
    result = import_source(source, Defaults(gpu=gpu, gpus_per_node=gpus_per_node, dp=dp))
    diagnostics = diagnostics + result.diagnostics
    if diagnostics:
        sources = {file: source} | {other.path: other for other in result.sources}
        click.echo(render_text(diagnostics, sources, _style(sys.stderr)), err=True, nl=False)
    if result.text is None or has_errors(diagnostics):
        sys.exit(1)
    from .source import SourceFile

    document, _ = parse(SourceFile("<import>", result.text))
    text = format_document(document)
    if output:
        write_file(output, text)
    else:
        click.echo(text, nl=False)


@main.command(context_settings=CONTEXT, epilog="""\b
Examples:
  parc compile specs/llama3-405b.par                 # writes out/llama3-405b/
  parc compile specs/tiny.par -o /tmp/tiny-job
""")
@click.argument("file", metavar="FILE")
@click.option("-o", "--output", "output", type=click.Path(file_okay=False), default=None,
              help="job directory to write (default: out/<job name>); replaced atomically")
@_FORMAT
def compile(file, output, fmt):  # noqa: A001 - the command is called compile
    """Check a spec and write its job directory."""
    from .atomic import OutputError, write_tree
    from .diagnostics import has_errors

    results, unreadable = _compile_all([file])
    if unreadable:
        sys.exit(2)
    result = results[0]
    if has_errors(result.diagnostics) or result.plan is None:
        sys.exit(_report(results, fmt))
    if result.plan.holes:
        from .diagnostics import error

        names = ", ".join(h.name for h in result.plan.holes)
        result.diagnostics.append(error(
            "E0218", f"cannot compile a spec with open holes ({names})", result.plan.holes[0].span,
            label="still `?`", help=f"run `parc search {file} --write` to fill them, then compile"))
        sys.exit(_report(results, fmt))
    from parc.backends import job_diagnostics, job_files

    result.diagnostics.extend(job_diagnostics(result.plan))
    if has_errors(result.diagnostics):
        sys.exit(_report(results, fmt))
    directory = output or f"out/{result.plan.launch.job}"
    files = job_files(result.plan)
    try:
        write_tree(directory, files, executable=tuple(n for n in files if n.endswith(".sh")))
    except (OutputError, OSError) as exc:
        click.echo(f"error: cannot write `{directory}`: {exc}", err=True)
        sys.exit(2)
    if fmt == "text" and result.diagnostics:
        _report(results, fmt)  # warnings
    if fmt == "json":
        from .diagnostics import dumps_json

        click.echo(dumps_json({"output": directory, "files": sorted(files)}), nl=False)
    else:
        click.echo(f"wrote {directory.rstrip('/')}/ ({len(files)} file{'s' if len(files) != 1 else ''})")  # `-o job/`: job/


@main.command(context_settings=CONTEXT, epilog="""\b
Examples:
  parc fmt specs/*.par            # rewrite in place
  parc fmt --diff specs/*.par     # print what would change; write nothing
  parc fmt --check specs/*.par    # CI: exit 1 if any file would change
""")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option("--check", "check_only", is_flag=True, help="write nothing; exit 1 if a file is not formatted")
@click.option("--diff", "show_diff", is_flag=True, help="write nothing; print what would change as a unified diff")
def fmt(files, check_only, show_diff):
    """Rewrite specs in the canonical layout (comments kept)."""
    import difflib

    from .atomic import write_file
    from .diagnostics import has_errors, render_text
    from .fmt import format_document
    from .pipeline import UnreadableSpec, read_source
    from .syntax import parse

    status = 0
    for path in files:
        try:
            source, diagnostics = read_source(path)
        except UnreadableSpec as exc:
            click.echo(render_text([exc.diagnostic], {}, _style(sys.stderr)), err=True, nl=False)
            status = 2
            continue
        if not diagnostics:
            document, diagnostics = parse(source)
        if has_errors(diagnostics):
            click.echo(render_text(diagnostics, {path: source}, _style(sys.stderr)), err=True, nl=False)
            click.echo(f"{path}: not formatted: fix the syntax errors first", err=True)
            status = max(status, 1)
            continue
        formatted = format_document(document)
        if formatted == source.text and not _starts_with_bom(path):
            continue
        if show_diff:
            click.echo("".join(difflib.unified_diff(
                source.text.splitlines(keepends=True), formatted.splitlines(keepends=True),
                fromfile=path, tofile=f"{path} (formatted)")), nl=False)
        if check_only:
            click.echo(f"would reformat {path}", err=True)
            status = max(status, 1)
        elif not show_diff:  # --diff only shows; it never writes
            try:
                write_file(path, formatted)
            except OSError as exc:  # the spec is untouched: write_file renames only a complete file
                click.echo(f"error: cannot write `{path}`: {exc}", err=True)
                status = 2
                continue
            click.echo(f"reformatted {path}", err=True)
    sys.exit(status)


def _starts_with_bom(path: str) -> bool:
    """The canonical text has no byte-order mark (read_source drops it, so compare the bytes)."""
    with open(path, "rb") as handle:
        return handle.read(3) == b"\xef\xbb\xbf"


@main.command(context_settings=CONTEXT, epilog="""\b
Example:
  parc schema > plan.schema.json
""")
def schema():
    """Print the JSON Schema of the resolved plan (plan.json)."""
    from .diagnostics import dumps_json
    from .plan import plan_json_schema

    click.echo(dumps_json(plan_json_schema()), nl=False)


@main.command(context_settings=CONTEXT, epilog="""\b
Examples:
  parc codes            # every code with its title
  parc codes E0201      # the long explanation of one code
""")
@click.argument("code", required=False)
def codes(code):
    """List diagnostic codes, or explain one at length."""
    from .codes import CODES
    from .suggest import did_you_mean

    if code is None:
        for entry in CODES.values():
            click.echo(f"{entry.code}  {entry.severity:<7}  {entry.title}")
        return
    entry = CODES.get(code.upper())
    if entry is None:
        click.echo(f"error: no diagnostic code `{code}`; {did_you_mean(code.upper(), CODES)}", err=True)
        sys.exit(2)
    click.echo(f"{entry.code} ({entry.severity}): {entry.title}\n\n{entry.explanation}")


@main.command(context_settings=CONTEXT, epilog="""\b
Examples:
  parc lsp                 # speak LSP on stdin/stdout (what an editor starts)
  parc lsp --stdio         # the same; the flag editors' LSP clients pass
Editor set-up: editors/README.md.
""")
@click.option("--stdio", is_flag=True, help="use stdin/stdout (the default and only transport)")
def lsp(stdio):
    """Run the language server: parc's diagnostics in your editor as you type."""
    try:
        import pygls  # noqa: F401
    except ImportError:
        click.echo("error: `parc lsp` needs the pygls package, which is not installed\n"
                   "help: pip install 'parc[lsp]' (or pip install 'pygls>=1.3')", err=True)
        sys.exit(2)
    from .lsp import serve_stdio

    serve_stdio()


@main.command(context_settings=CONTEXT, epilog="""\b
Examples:
  parc report specs/llama3-405b.par -o report.html
  parc report specs/tiny.par                       # writes out/tiny-report.html
  parc report specs/tiny.par -o - > tiny.html
""")
@click.argument("file", metavar="FILE")
@click.option("-o", "--output", "output", default=None, metavar="PATH",
              help="HTML file to write (default: out/<job name>-report.html; - for stdout)")
def report(file, output):
    """Write one self-contained HTML page with pictures of the layout: the device grid, the
    pipeline schedule, memory per stage and where the step time goes."""
    from .atomic import write_file
    from .diagnostics import error, has_errors

    results, unreadable = _compile_all([file])
    if unreadable:
        sys.exit(2)
    result = results[0]
    cluster = None
    if result.spec is not None and result.spec.cluster is not None and not has_errors(result.diagnostics):
        from .report import answer_cluster  # the question's answer, drawn with its frontier

        result, cluster = answer_cluster(result)
    if result.plan is not None and result.plan.holes and not has_errors(result.diagnostics):
        names = ", ".join(h.name for h in result.plan.holes)
        result.diagnostics.append(error(
            "E0218", f"cannot draw a report for a spec with open holes ({names})", result.plan.holes[0].span,
            label="still `?`", help=f"run `parc search {file} --write` to fill them, then report"))
    if has_errors(result.diagnostics) or result.plan is None:
        sys.exit(_report(results, "text"))
    from .report import build_page

    page = build_page(result, cluster)
    if output == "-":
        click.echo(page, nl=False)
    else:
        path = output or f"out/{result.plan.launch.job}-report.html"
        try:
            if output is None:
                os.makedirs("out", exist_ok=True)
            write_file(path, page)
        except OSError as exc:
            click.echo(f"error: cannot write `{path}`: {exc.strerror or exc}", err=True)
            sys.exit(2)
        click.echo(f"wrote {path}", err=True)
    if result.diagnostics:
        _report_warnings(result)


@main.command(context_settings=CONTEXT, epilog="""\b
Examples:
  parc rehearse specs/tiny.par --rank 5
  parc rehearse specs/llama3-405b.par --rank 5000 --format json
  parc rehearse specs/tiny.par --ranks classes --tolerance 10
""")
@click.argument("file", metavar="SPEC")
@click.option("--rank", "rank", type=click.IntRange(min=0), default=None, metavar="R",
              help="the rank to rehearse (default 0)")
@click.option("--ranks", "ranks", type=click.Choice(["classes"]), default=None,
              help="one rank of every class (pipeline stage, tp, cp and ep position)")
@click.option("--steps", "steps", type=click.IntRange(min=1), default=None, metavar="N",
              help="optimizer steps (default 2)")
@click.option("--tolerance", "tolerance", type=click.FloatRange(min=0), default=5.0, show_default=True,
              metavar="PCT", help="exit 1 when a category differs from the prediction by more")
@click.option("--timeout", "timeout", type=click.FloatRange(min=1), default=3600.0, show_default=True,
              metavar="SECONDS", help="stop a rehearsal that runs longer")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text for people or json for tools, both on stdout")
def rehearse(file, rank, ranks, steps, tolerance, timeout, fmt):
    """Run one rank of the generated job at its real world size in one process (fake process
    group and tensors; needs torch) and compare its memory with the prediction; exit 1 past the
    tolerance or when the rank's allocator replay runs out of the part's memory."""
    from .diagnostics import dumps_json, has_errors
    from .rehearse import RehearsalError, compare, render, replay_limit, replay_policy, report, run

    if rank is not None and ranks is not None:
        click.echo("error: give --rank or --ranks, not both", err=True)
        sys.exit(2)
    results, unreadable = _compile_all([file])
    if unreadable:
        sys.exit(2)
    result = results[0]
    if has_errors(result.diagnostics) or result.plan is None:
        sys.exit(_report(results, "text") or 1)
    plan = result.plan
    from .rehearse import unrehearsable

    why = unrehearsable(plan, file)
    if why is not None:
        click.echo(f"error: {file}: {why}", err=True)
        sys.exit(2)
    from .memory import unpredictable

    why = unpredictable(plan)
    if why is not None:
        click.echo(f"error: parc cannot predict this plan's memory to compare with: {why}", err=True)
        sys.exit(2)
    if rank is not None and rank >= plan.cluster.world_size:
        click.echo(f"error: --rank {rank} is not a rank of this job (0..{plan.cluster.world_size - 1})", err=True)
        sys.exit(2)
    from parc.backends import job_files

    try:
        records = run(job_files(plan), rank, ranks == "classes", steps, timeout, replay_limit(plan),
                      replay_policy(plan))
    except RehearsalError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    rows = compare(plan, records)
    doc = report(plan, records, rows, tolerance)
    click.echo(dumps_json(doc) if fmt == "json" else render(plan, rows, tolerance, records), nl=fmt != "json")
    sys.exit(0 if doc["passed"] else 1)


def _report_warnings(result) -> None:
    """Warnings (never errors here) to stderr, as `parc check` prints them."""
    from .diagnostics import render_text, summary_line

    style = _style(sys.stderr)
    click.echo(render_text(result.diagnostics, {result.source.path: result.source}, style), err=True, nl=False)
    click.echo(f"{result.source.path}: {summary_line(result.diagnostics, style)}", err=True)


@main.command(context_settings=CONTEXT, epilog="""\b
Examples:
  parc diff specs/old.par specs/new.par
  parc diff specs/llama3-405b.par --against origin/main
  parc diff specs/llama3-405b.par --against HEAD~1 --format md > comment.md
  parc diff a.par b.par --format json --max-slowdown 5
\b
Exit status: 0 ok; 1 the new spec has errors or does not fit in memory;
2 usage error (unreadable file, unknown revision); 3 slower than --max-slowdown.
""")
@click.argument("files", nargs=-1, required=True, metavar="OLD NEW | SPEC --against REV")
@click.option("--against", "against", default=None, metavar="REV",
              help="compare SPEC with its version at a git revision (read with `git show REV:path`)")
@click.option("--format", "fmt", type=click.Choice(["text", "md", "json"]), default="text", show_default=True,
              help="text for people, md for a pull-request comment, json for tools")
@click.option("--max-slowdown", "max_slowdown", type=click.FloatRange(min=0), default=None, metavar="PCT",
              help="exit 3 when the predicted step time grows by more than PCT percent")
def diff(files, against, fmt, max_slowdown):
    """Compare two specs: the facts that changed and their predicted effect on memory and speed."""
    from .diagnostics import dumps_json, has_errors, render_text, summary_line
    from .diff import Side, build, render_markdown
    from .diff import render_text as diff_text
    from .pipeline import UnreadableSpec, compile_path, compile_text

    if against is not None and len(files) != 1:
        raise click.UsageError("with --against give one spec: parc diff SPEC --against REV")
    if against is None and len(files) != 2:
        raise click.UsageError("give two specs (parc diff OLD NEW) or one with --against REV")
    style = _style(sys.stderr)
    try:
        new = compile_path(files[-1])
        if against is None:
            old = compile_path(files[0])
            old_label = files[0]
        else:
            old_label = f"{against}:{files[0]}"
            text = _git_show(against, files[0])
            old = None if text is None else compile_text(text, path=old_label)
    except UnreadableSpec as exc:
        click.echo(render_text([exc.diagnostic], {}, style), err=True, nl=False)
        sys.exit(2)
    for result in (old, new):
        if result is not None and has_errors(result.diagnostics):
            click.echo(render_text(result.diagnostics, {result.source.path: result.source}, style), err=True, nl=False)
            click.echo(f"{result.source.path}: {summary_line(result.diagnostics, style)}", err=True)
    data = build(Side.of(old_label, old) if old is not None else None, Side.of(files[-1], new), max_slowdown)
    if fmt == "json":
        click.echo(dumps_json(data), nl=False)
    elif fmt == "md":
        click.echo(render_markdown(data), nl=False)
    else:
        click.echo(diff_text(data), nl=False)
    sys.exit(data["status"])


def _git_show(rev: str, path: str) -> str | None:
    """The spec's text at a git revision; None when the file did not exist there (a new spec)."""
    import subprocess

    directory, name = os.path.split(path)
    try:
        done = subprocess.run(["git", "show", f"{rev}:./{name}"], cwd=directory or ".", capture_output=True,
                              timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        click.echo(f"error: cannot run git: {exc}", err=True)
        sys.exit(2)
    if done.returncode == 0:
        try:
            return done.stdout.decode("utf-8")
        except UnicodeDecodeError:
            click.echo(f"error: `{rev}:{path}` is not UTF-8 text", err=True)
            sys.exit(2)
    message = done.stderr.decode("utf-8", "replace").strip()
    if "exists on disk, but not in" in message or "does not exist in" in message:
        return None
    click.echo(f"error: cannot read `{path}` at `{rev}`: {message.splitlines()[-1] if message else 'git failed'}\n"
               f"help: check the revision (`git log --oneline -1 {rev}`); in CI, fetch it first "
               "(`git fetch origin main`)", err=True)
    sys.exit(2)


if __name__ == "__main__":  # pragma: no cover
    main()
