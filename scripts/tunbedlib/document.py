"""A report as data, the same for every scenario kind: a title, whether the run completed, the
headline in words, notes, paragraphs, sections (a heading, paragraphs, a table of text cells,
paragraphs and a list after it), plots, a footer, and the numbers (summary.json, CSV tables).
A kind's report module builds one from its records (analysis and words); render.py writes it as
report.md, report.html, summary.json and summary.csv. Nothing here reads or writes a file."""

import dataclasses


@dataclasses.dataclass
class Table:
    """Rows of text cells under a header; id names the HTML table (tests find it by it)."""
    header: tuple
    rows: list
    id: str = ""


@dataclasses.dataclass
class Section:
    """A part of the report: its heading (none for the report's main table) and its id (the
    heading's in HTML is section-ID), paragraphs, a table, then paragraphs and a list of lines
    about the table."""
    heading: str = ""
    id: str = ""
    paragraphs: list = dataclasses.field(default_factory=list)
    table: Table = None
    after: list = dataclasses.field(default_factory=list)
    items: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Plot:
    """A plot: its title, its file name in plots/ (without .svg or .png), and either its SVG
    or how to draw it (draw(outdir): writes plots/NAME.png and .svg, returns the SVG, or None
    where the results give nothing to draw)."""
    title: str
    name: str
    svg: str = None
    draw: object = None


@dataclasses.dataclass
class Csv:
    """A table of numbers for other programs: NAME.csv."""
    name: str
    header: list
    rows: list


@dataclasses.dataclass
class Document:
    title: str
    complete: bool = True
    headline: list = dataclasses.field(default_factory=list)
    notes: list = dataclasses.field(default_factory=list)
    paragraphs: list = dataclasses.field(default_factory=list)
    sections: list = dataclasses.field(default_factory=list)
    plots: list = dataclasses.field(default_factory=list)
    footer: str = ""
    summary: dict = dataclasses.field(default_factory=dict)
    csv: list = dataclasses.field(default_factory=list)


PARTIAL = ("PARTIAL: the run was interrupted or failed; these are the points measured before "
           "it stopped.")


def title(meta):
    """A results directory's title: tunbed SCENARIO: TITLE."""
    return f"tunbed {meta.get('scenario', '')}: {meta.get('title', '')}"


def provenance(meta):
    """The line every report has on how its run was made (meta.json's started_utc and
    provenance, runloop.py): when (UTC), the command, the commit and build, the machine;
    None for a run from before provenance was kept."""
    prov = meta.get("provenance")
    if not isinstance(prov, dict):
        return None
    cmd = prov.get("command")
    cmd = " ".join(str(a) for a in cmd).replace("`", "'") if isinstance(cmd, list) else None
    commit = prov.get("commit")
    where = (f"commit {str(commit)[:12]}" + (" with uncommitted changes" if prov.get("changed")
                                             else "")) if commit else "no git checkout"
    m = prov.get("machine") if isinstance(prov.get("machine"), dict) else {}
    mem = m.get("memory_bytes")
    mem = f"{mem / 2**30:.1f} GiB" if isinstance(mem, (int, float)) else "memory unknown"
    return (f"Run started {meta.get('started_utc') or 'at an unrecorded time'} (UTC): "
            f"`{cmd or 'command not recorded'}`, {where}, build "
            f"{prov.get('build_id') or 'unknown'}; machine: {m.get('cpus') or '?'} CPUs "
            f"({m.get('cpu_model') or 'model unknown'}), {mem}, Linux "
            f"{m.get('kernel') or 'unknown'}.")


def footer(records="`runs/*.json`",
           numbers="every number above is in `summary.json` and `summary.csv`"):
    """The report's last line: where its raw records and numbers are, and how to rebuild it."""
    return (f"Raw records: {records}; {numbers}. Rebuild this report with `scripts/tunbed "
            "report DIR`.")
