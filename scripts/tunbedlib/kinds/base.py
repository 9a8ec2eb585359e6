"""What a scenario kind is: the five parts every kind provides, which runloop.execute, `tunbed
report` and the command line use and nothing else (CONTRIBUTING.md, "Adding a kind").

1. Its plan: check(args) reads the command line (and the files it names) and refuses any mistake
   before anything is installed or started; prepare(plan) then says what this machine can run;
   items(plan) are the units of work, in order.
2. Its bed: bed(plan) gives an object with open(), close(), point(item) (a context manager
   around one item, or one group of items) and undone (what its closing undoes, in words).
3. Its measurement: measure(plan, bed, item) returns the item's raw record; a GatewayFailure
   fails that item alone (the run goes on), any other Failure the run.
4. Its records: kind and FORMAT (every record and meta.json carries both), the schema of each
   format it reads (record_schema, meta_schema), and one upgrade step per format.
5. Its report: report(meta, records, complete) builds the document (document.py).

A kind's numbers that other commands read stay in summary.json: per run a `key`, and where it
has one the run's throughput (`bits_per_second`), which `tunbed diff` compares; a point's
bottleneck verdict and its evidence belong with the point's numbers there, and CPU budgets with
the run's record (hosts[].budgets), where the verdict reads them."""

import dataclasses
import os

from .. import files, limits, pair, records, scenario, units
from ..common import INSTALLED, ROOT, ScenarioError

DEFAULT_PREFIX = "tb"
# Installed, the current directory's results/ (a checkout's otherwise).
RESULTS = "results" if INSTALLED else os.path.join(ROOT, "results")


@dataclasses.dataclass
class Item:
    """One unit of work: key names its record (RECORD_DIR/KEY.json), label is the progress
    line's; items of one group (not None) share one bed.point(); point is the kind's; weight
    is how long it takes against the others, for the time left (items of unlike parts: the
    datasheet's)."""
    key: str
    label: str
    point: object = None
    repeat: int = 1
    group: object = None
    weight: float = 1.0


@dataclasses.dataclass
class Command:
    """A subcommand a kind provides: its name, help and description, and what adds its
    options to its parser."""
    name: str
    help: str
    arguments: object
    description: str = None


class Kind:
    name = "?"
    commands = ()
    RECORD_DIR = "runs"
    FORMAT = 1
    OLDEST = 1
    # Words of a refusal of a newer format: "results written by a newer tunbed".
    WHAT = "results"
    # The format of a file without `format` (written before the field), or None: refused.
    UNNUMBERED = 1
    # Words of the line when a run left no record: "no run finished".
    UNIT = "run"

    # 1. The plan.
    def check(self, args):
        """Everything that can be refused before anything is installed or started
        (ScenarioError and the like: one line, exit status 2); returns the plan. A plan with an
        attribute `kind` is run by that kind (tunbed run of a file of another kind)."""
        raise NotImplementedError

    def needs(self, plan):
        """The sets of scripts/bootstrap's table that a run of plan in namespaces installs
        before prepare (the hosts mode's is runloop's): the main job's by default."""
        return ["ras"]

    def prepare(self, plan):
        """After bootstrap: what this machine cannot run is left out of plan (its notes, said
        on stderr and in the report); a Failure when nothing is left."""

    def items(self, plan):
        raise NotImplementedError

    def meta(self, plan):
        """The fields of meta.json that say what the run is (scenario, title, settings)."""
        raise NotImplementedError

    def results_name(self, plan):
        """The results directory's name after its time: the scenario's name."""
        return plan.name

    # 2. The bed.
    def bed(self, plan):
        raise NotImplementedError

    # 3. The measurement.
    def admit(self, plan, item):
        """Before an item: raises common.Refused when it must not be measured (default:
        never)."""

    def measure(self, plan, bed, item):
        raise NotImplementedError

    def measured(self, plan, item, record):
        """After an item's record is written (tunbed ndr learns the generator's ceiling)."""

    def figure(self, plan, item, record):
        """The words of an item's result on its progress line ('2.31 Gbit/s'), or None: by
        default the TCP throughput of a record with tunbed-traffic's document."""
        bps = (((record.get("traffic") or {}).get("tcp")) or {}).get("bits_per_second")
        return units.rate_text(bps) if isinstance(bps, (int, float)) else None

    def failed(self, item, started, error):
        """What meta.json keeps of an item whose gateway did not come up (GatewayFailure)."""
        return {"key": item.key, "repeat": item.repeat, "started": started, "error": error}

    # 4. The records.
    def record_schema(self, fmt):
        """The schema (schema.py) of a record of format fmt."""
        raise NotImplementedError

    def meta_schema(self, fmt):
        raise NotImplementedError

    # What a record has whatever its format (one without is no record of the kind at all).
    RECORD_NEEDS = ("point", "repeat")

    def is_record(self, doc, path):
        """Refuses, in one line, a file that is no record of this kind at all."""
        if any(k not in doc for k in self.RECORD_NEEDS):
            raise records.FormatError(f"{path}: not a run record (no "
                                      f"{' or '.join(self.RECORD_NEEDS)})")

    def upgrade_record(self, doc, fmt):
        """A record of format fmt as format fmt + 1 (its `format` is set by the caller)."""
        return doc

    def upgrade_meta(self, doc, fmt):
        return doc

    def check_records(self, recs, paths):
        """Refuses records that cannot stand together: two of one point's key but of two
        points, two of one repeat of a point."""
        records.one_key_each(recs, paths)

    # 5. The report.
    def report(self, meta, records, complete):
        """The document of a results directory (document.py)."""
        raise NotImplementedError


def gateway_sets(sc):
    """The bootstrap sets of a run of scenario sc in namespaces: the main job's, each
    gateway's (a cmd:PATH gateway brings its own program), and the failover's (FRR) when the
    topology is a gateway pair (ras-pair.topo), whose routing the bed starts."""
    sets = ["ras", *(g for g in sc.gateways if not g.startswith("cmd:"))]
    text = files.read_text(scenario.topology_path(sc.topology), limits.SCENARIO_BYTES,
                           ScenarioError, "topology file")
    if pair.is_pair(scenario.topology_hosts(text)):
        sets.append("failover")
    return sets


def bed_options(p, pin_help):
    """The options of where a run builds its hosts and writes its results."""
    p.add_argument("--topology", default="ras", help="built-in name or file (default ras)")
    p.add_argument("--pin", metavar="HOST=CPUS,...", help=pin_help)
    output_options(p)


def output_options(p):
    p.add_argument("--prefix", default=DEFAULT_PREFIX,
                   help=f"namespace prefix (default {DEFAULT_PREFIX})")
    p.add_argument("--results", default=RESULTS, metavar="DIR",
                   help="where result directories go (default results/)")
