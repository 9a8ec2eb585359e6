"""The scenario kinds, each a module with the same five parts (base.py): the gateway matrix
(ras, run, compare), the cloud same-zone benchmark (intranet), packet rates (ndr), the gateway
pair's failover (failover), the datasheet that composes them (datasheet), the tunnel-count
scaling (tunnels) and the smallest kind (smoke). KINDS is the registry: the command
line's measuring subcommands and their --help come from it (COMMANDS, in its order), and so does
`tunbed report`'s choice of the kind that reads a results directory (for_dir)."""

import os

from .. import records
from ..common import Failure
from . import datasheet, failover, intranet, matrix, ndr, smoke, tunnels

KINDS = {k.name: k for k in (matrix.KIND, intranet.KIND, ndr.KIND, failover.KIND, datasheet.KIND,
                              tunnels.KIND, smoke.KIND)}
# Each subcommand with its kind.
COMMANDS = [(c, k) for k in KINDS.values() for c in k.commands]


def for_dir(outdir):
    """The kind that reads the results directory outdir: meta.json's `kind`; before the field,
    ndr by its searches/, failover by its scenario and settings, else the matrix. A Failure when outdir is
    no results directory, a FormatError for a kind this runner does not know."""
    if os.path.isdir(os.path.join(outdir, "searches")):
        return KINDS["ndr"]
    if not os.path.isdir(os.path.join(outdir, "runs")):
        raise Failure(f"{outdir}: not a results directory (no runs/)")
    path = os.path.join(outdir, "meta.json")
    meta = records.read_object(path) if os.path.lexists(path) else {}
    name = meta.get("kind")
    if name is None:
        # A failover run's meta.json of format 1 has its settings; a scenario file may be
        # named failover.
        legacy = meta.get("scenario") == "failover" and "settings" in meta
        return KINDS["failover" if legacy else "matrix"]
    if not isinstance(name, str) or name not in KINDS:
        raise records.FormatError(f"{path}: kind: expected {', '.join(KINDS)}")
    return KINDS[name]
