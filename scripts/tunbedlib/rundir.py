"""State on this machine that decides what root signals or removes (docs/security.md): a
failover run's pids, FRR's directories, a namespace run's generated topology file and each
namespace's undo commands. It lives under /run/tunbed, which only root may write,
never in /tmp, where any user can plant a directory for root to find. Every directory is made
by root with the mode it keeps, and its owner and mode are checked again before anything in it
is trusted: one that fails the check is skipped, never read.

/run/tunbed/KIND/PREFIX-XXXXXXXX: KIND (failover, frr, topo, netns) is a word without '-', so
it is never the state directory PREFIX-NAME that a run on hosts keeps on a host (hosts.py),
should this machine be one of them."""

import glob
import os
import re
import stat
import tempfile

from . import limits
from .common import Failure

ROOT = "/run/tunbed"
# What each directory may let others do: traverse at most (FRR's daemons, running as frr,
# pass through to their own directories), never write. /run/tunbed itself may be readable:
# `mkdir -p` on a host makes it 0755.
ROOT_FORBIDDEN = 0o022
PID = re.compile(r"[0-9]{1,7}")


def pid_of(text):
    """A PID as a state file holds it (here or on a host), or None: digits only, never 0 or 1,
    never negative (kill -1 signals every process)."""
    text = text.strip()
    if PID.fullmatch(text) and 1 < int(text) <= limits.PID_MAX:
        return int(text)
    return None


def untrusted(path, forbidden, owners=None):
    """Why path is not a directory root alone controls, in words, or None: a symbolic link,
    not a directory, another owner, a mode with a bit of forbidden."""
    try:
        st = os.lstat(path)
    except OSError as e:
        return e.strerror
    if stat.S_ISLNK(st.st_mode):
        return "a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "not a directory"
    if st.st_uid not in (owners or (os.geteuid(),)):
        return f"owned by uid {st.st_uid}"
    if st.st_mode & forbidden:
        return f"mode {stat.S_IMODE(st.st_mode):04o}"
    return None


def kind_dir(kind, mode):
    """/run/tunbed/KIND, made if missing; Failure if it or /run/tunbed is not root's alone."""
    path = os.path.join(ROOT, kind)
    for p, m, forbidden in ((ROOT, 0o711, ROOT_FORBIDDEN), (path, mode, 0o777 & ~mode)):
        try:
            os.mkdir(p, m)
            os.chmod(p, m)  # whatever the umask: FRR's user must pass through
        except FileExistsError:
            pass
        except OSError as e:
            raise Failure(f"{p}: {e.strerror}") from None
        why = untrusted(p, forbidden)
        if why:
            raise Failure(f"{p}: {why}: not trusted with the state of a run (only root may "
                          "write it)")
    return path


def make(kind, prefix, mode=0o700):
    """A new directory of a run of prefix, /run/tunbed/KIND/PREFIX-XXXXXXXX, of mode."""
    d = tempfile.mkdtemp(prefix=f"{prefix}-", dir=kind_dir(kind, mode | 0o700))
    os.chmod(d, mode)
    return d


def found(kind, prefix, mode=0o700):
    """The directories of runs of prefix that pass the checks (root's, of at most mode)."""
    path = os.path.join(ROOT, kind)
    if untrusted(ROOT, ROOT_FORBIDDEN) or untrusted(path, 0o777 & ~(mode | 0o700)):
        return []
    return [d for d in sorted(glob.glob(os.path.join(path, f"{glob.escape(prefix)}-*")))
            if not untrusted(d, 0o777 & ~mode)]


def read(path, owners=None):
    """A state file's text, or None: a regular file (no link followed), of an owner in owners
    (root), that no one else may write, of at most STATE_FILE_MAX bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid not in (owners or (os.geteuid(),)) or \
                st.st_mode & 0o022:
            return None
        data = os.read(fd, limits.STATE_FILE_MAX + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data.decode(errors="replace") if len(data) <= limits.STATE_FILE_MAX else None
