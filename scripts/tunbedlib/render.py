"""A report document (document.py) written as the files of a results directory, the same for
every scenario kind: summary.json and the CSV tables (the numbers), the plots (drawn here, as
their document says how), report.md, and report.html: report.md's content in one page that any
browser opens with nothing else, the headline first and every plot inline as SVG, loading
nothing (its content security policy forbids every load) and every text escaped. Each file is
written beside its name and renamed over it (files.py)."""

import csv
import html
import json
import re

from . import files
from .document import PARTIAL, provenance


def write_all(outdir, doc):
    """Writes every file of doc into outdir; returns its headline lines."""
    with files.output(outdir, "summary.json") as f:
        json.dump(doc.summary, f, indent=2)
        f.write("\n")
    for table in doc.csv:
        with files.output(outdir, f"{table.name}.csv") as f:
            w = csv.writer(f)
            w.writerow(table.header)
            w.writerows(table.rows)
    doc.plots = drawn(outdir, doc.plots)
    files.write(outdir, "report.md", markdown(doc))
    files.write(outdir, "report.html", page(doc))
    return doc.headline


def drawn(outdir, plots):
    """The plots with their SVG, each drawn now that has not been; those with nothing to draw
    left out."""
    out = []
    for p in plots:
        if p.svg is None and p.draw is not None:
            p.svg = p.draw(outdir)
        if p.svg:
            out.append(p)
    return out


# report.md

def md_cell(text):
    """A table cell of report.md: a record's text (a gateway's path, a host's name) cannot end
    the cell or the row."""
    return " ".join(text.splitlines()).replace("|", "\\|")


def md_table(table):
    out = ["| " + " | ".join(table.header) + " |\n", "|" + " --- |" * len(table.header) + "\n"]
    out += ["| " + " | ".join(md_cell(c) for c in cells) + " |\n" for cells in table.rows]
    return "".join(out) + "\n"


def md_section(s):
    out = [f"## {s.heading}\n\n"] if s.heading else []
    out += [f"{p}\n\n" for p in s.paragraphs]
    if s.table:
        out.append(md_table(s.table))
    out += [f"{p}\n\n" for p in s.after]
    if s.items:
        out += [f"- {line}\n" for line in s.items] + ["\n"]
    return "".join(out)


def markdown(doc):
    out = [f"# {doc.title}\n\n"]
    if not doc.complete:
        out.append(f"**{PARTIAL}**\n\n")
    out += [f"- {line}\n" for line in doc.headline] + ["\n"]
    out += [f"> {note}\n" for note in doc.notes] + (["\n"] if doc.notes else [])
    out += [f"{p}\n\n" for p in doc.paragraphs]
    out += [md_section(s) for s in doc.sections]
    out += [f"## {p.title}\n\n![{p.title}](plots/{p.name}.svg)\n\n"
            f"(PNG: [plots/{p.name}.png](plots/{p.name}.png))\n\n" for p in doc.plots]
    prov = provenance(doc.summary.get("meta") or {})
    out += [f"{prov}\n\n"] if prov else []
    return "".join(out) + f"{doc.footer}\n"


# report.html

def words(text):
    """Text for HTML: escaped, with `code` as <code>."""
    return re.sub(r"`([^`]*)`", r"<code>\1</code>", html.escape(text))


def inline_svg(svg, prefix):
    """A plot's SVG document as an element of an HTML page: without the XML prolog and the
    metadata (links to vocabularies, never loaded, but links all the same), and with every id
    and reference to one prefixed, since the page's plots share one space of ids."""
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    svg = re.sub(r'\bid="([^"]*)"', lambda m: f'id="{prefix}{m[1]}"', svg)
    return re.sub(r'(href="#|url\(#)', lambda m: m[1] + prefix, svg)


STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 80em; padding: 0 1em;
       line-height: 1.4; color: #222; }
.partial { color: #b00; font-weight: bold; }
.headline li { font-weight: bold; margin: 0.3em 0; }
blockquote { border-left: 3px solid #ccc; margin: 1em 0; padding: 0 1em; color: #555; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: left; }
th { background: #f3f3f3; }
figure { margin: 1em 0; }
figure svg { max-width: 100%; height: auto; }
code { background: #f3f3f3; padding: 0 0.2em; }
"""


def html_table(table):
    out = [f'<table id="{table.id}">\n<thead><tr>'
           + "".join(f"<th>{html.escape(h)}</th>" for h in table.header)
           + "</tr></thead>\n<tbody>\n"]
    out += ["<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>\n"
            for cells in table.rows]
    return "".join(out) + "</tbody>\n</table>\n"


def html_section(s):
    # The heading's id is the section's, apart from its table's: an id names one element.
    out = [f'<h2 id="section-{s.id}">{html.escape(s.heading)}</h2>\n'] if s.heading else []
    out += [f"<p>{words(p)}</p>\n" for p in s.paragraphs]
    if s.table:
        out.append(html_table(s.table))
    out += [f"<p>{words(p)}</p>\n" for p in s.after]
    if s.items:
        out.append("<ul>\n" + "".join(f"<li>{html.escape(line)}</li>\n" for line in s.items)
                   + "</ul>\n")
    return "".join(out)


def page(doc):
    """report.html: the document in one file that needs nothing else, every plot inline as
    SVG. Its policy forbids the page to load anything at all."""
    t = html.escape(doc.title)
    out = ['<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
           '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
           'style-src \'unsafe-inline\'">\n'
           f"<title>{t}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{t}</h1>\n"]
    if not doc.complete:
        out.append(f'<p class="partial">{html.escape(PARTIAL)}</p>\n')
    out.append('<ul class="headline" id="headline">\n'
               + "".join(f"<li>{html.escape(line)}</li>\n" for line in doc.headline)
               + "</ul>\n")
    if doc.notes:
        out.append("<blockquote>\n" + "".join(f"<p>{html.escape(n)}</p>\n" for n in doc.notes)
                   + "</blockquote>\n")
    out += [f"<p>{words(p)}</p>\n" for p in doc.paragraphs]
    out += [html_section(s) for s in doc.sections]
    for i, p in enumerate(doc.plots):
        out.append(f'<h2>{html.escape(p.title)}</h2>\n<figure class="plot" '
                   f'id="plot-{html.escape(p.name)}">\n{inline_svg(p.svg, f"plot{i}-")}\n'
                   f"<figcaption>{html.escape(p.title)} (also plots/{html.escape(p.name)}.svg "
                   f"and .png)</figcaption>\n</figure>\n")
    prov = provenance(doc.summary.get("meta") or {})
    out += [f'<p id="provenance">{words(prov)}</p>\n'] if prov else []
    out.append(f"<p>{words(doc.footer)}</p>\n</body>\n</html>\n")
    return "".join(out)
