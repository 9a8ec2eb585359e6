"""The runner's own files across a trust boundary. Input files (scenario and topology files,
records) are read only when they are regular files, and never past a size of limits.py: a
device (/dev/zero) or a FIFO named by mistake or on purpose is refused in one line instead of
filling memory or blocking forever. Outputs (records, meta.json, summaries, reports, plots)
are written into a file beside their name, created anew, then renamed over it: a link planted
under the name (or under plots/) is replaced, never followed, and an interrupted write leaves
the old file or none, never one cut short (docs/security.md, "Result directories")."""

import contextlib
import errno
import io
import os
import re
import secrets
import stat

from .common import Failure

# A name the runner writes: one component, no leading dot (its temporary files' names have
# one), nothing a shell or a browser would read as more than a name.
NAME = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9_.+-]{0,254}")


def read_text(path, limit, error, what="file", follow=True):
    """The text of path, a regular file of at most limit bytes (with follow false, not a link
    either); error (an exception class) with one line naming path otherwise. A FIFO or device
    is refused before any read (opened without blocking, then checked)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        if e.errno == errno.ELOOP and not follow:
            raise error(f"{path}: a link (a {what} must be a regular file)") from None
        raise error(f"{path}: cannot read: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise error(f"{path}: not a regular file (a {what} must be one)")
        if st.st_size > limit:
            raise error(f"{path}: {st.st_size} bytes: a {what} has at most {limit}")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise error(f"{path}: cannot read: {e.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > limit:  # it grew since fstat
        raise error(f"{path}: over {limit} bytes: a {what} has at most {limit}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(f"{path}: not UTF-8 text (byte {e.start})") from None


def _open_dir(parent_fd, name, path):
    """The directory name under parent_fd (path: its name for people), made if missing, never
    through a link: one that is a link (or no directory) is a Failure."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, 0o777, dir_fd=parent_fd)
    try:
        return os.open(name, flags, dir_fd=parent_fd)
    except OSError as e:
        if e.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
    raise Failure(f"{path}: not a directory of its own (a link?): the runner writes only into "
                  "one")


def write(outdir, name, data):
    """Writes data (bytes or str, as UTF-8) to outdir/name, name a file's name or SUBDIR/NAME
    (made when missing: plots/): into a new file beside it, then renamed over it. No link
    is followed below outdir. A failure is one line (Failure) naming the file and why."""
    parts = name.split("/")
    if len(parts) > 2 or not all(NAME.fullmatch(p) for p in parts):
        raise Failure(f"{outdir}: '{name}' is not a name the runner writes")
    if isinstance(data, str):
        data = data.encode("utf-8")
    dfd = tmp = None
    try:
        dfd = os.open(outdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        if len(parts) == 2:
            sub = _open_dir(dfd, parts[0], os.path.join(outdir, parts[0]))
            os.close(dfd)
            dfd = sub
        # O_EXCL: a name that exists (a planted link among them) is never opened.
        new = f".{parts[-1]}.{secrets.token_hex(6)}.tmp"
        fd = os.open(new, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o666, dir_fd=dfd)
        tmp = new
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, parts[-1], src_dir_fd=dfd, dst_dir_fd=dfd)
        tmp = None
    except OSError as e:
        raise Failure(f"{os.path.join(outdir, name)}: cannot write: {e.strerror}") from None
    finally:
        if dfd is not None:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=dfd)
            os.close(dfd)


@contextlib.contextmanager
def output(outdir, name):
    """A text file to write outdir/name through: what is written goes to the file (write())
    once the block ends without an exception."""
    buf = io.StringIO()
    yield buf
    write(outdir, name, buf.getvalue())


def figure(fig, outdir, name, **kw):
    """A matplotlib figure as outdir/plots/NAME (its format by NAME's suffix), through
    write()."""
    buf = io.BytesIO()
    fig.savefig(buf, format=name.rsplit(".", 1)[-1], **kw)
    write(outdir, f"plots/{name}", buf.getvalue())


def new_dir(path, sub):
    """Makes the new results directory path (its parents as needed) and path/SUB in it: path
    must not exist, so that a link or a directory planted under its name is never written
    into; a Failure in one line otherwise."""
    parent = os.path.dirname(path) or "."
    try:
        os.makedirs(parent, exist_ok=True)
        os.mkdir(path)
        os.mkdir(os.path.join(path, sub))
    except OSError as e:
        raise Failure(f"{path}: cannot make the results directory: {e.strerror}") from None
