"""The runner's INI files (scenario files of `tunbed run`, `tunbed intranet --scenario`): one
reader and the typed values its setters take. A file is sections of `key = value` lines; a
line starting with `;` or `#` is a comment, and so is the rest of a line after ` ;`. Every
mistake is one line, FILE:LINE: what, raised as the caller's error class (a scenario's exit
status 2). What a section's keys mean is its owner's: a table of setters, each a function
(target, value) that raises ValueError with the words of the mistake."""


def entries(text, filename, error, section, outside):
    """Yields (line number, section, key, value) for every `key = value` line of text, and
    (line number, section, None, None) for every section's header. section(name, line number)
    gives the section of a header's name (its text between the brackets, blanks folded), or
    raises ValueError for one the file may not have; outside names what a line before any header is
    outside of. A key given twice in a section is refused here."""
    current, seen = None, {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in ";#":
            continue
        try:
            if line.startswith("["):
                if not line.endswith("]"):
                    raise ValueError(f"missing ']' in '{line}'")
                current = section(" ".join(line[1:-1].split()), n)
                yield n, current, None, None
                continue
            if current is None:
                raise ValueError(f"'{line}' outside {outside}")
            if "=" not in line:
                raise ValueError(f"expected 'key = value', got '{line}'")
            key, value = (x.strip() for x in line.split("=", 1))
            value = value.split(" ;")[0].strip()
            first = seen.setdefault((current, key), n)
            if first != n:
                raise ValueError(f"duplicate key '{key}' (first at line {first})")
        except ValueError as e:
            raise error(f"{filename}:{n}: {e}") from None
        yield n, current, key, value


def apply(setters, target, key, value, where, error, unknown):
    """setters[key](target, value); an error naming where (FILE:LINE) with the setter's words,
    or unknown (the words for a key the table has not)."""
    if key not in setters:
        raise error(f"{where}: {unknown}")
    try:
        setters[key](target, value)
    except ValueError as e:
        raise error(f"{where}: {e}") from None


def override(setters, target, args, keys, error):
    """The command line over a file: for each of keys that args gives (option --KEY, '_' as
    '-'), setters[key](target, its value); an error naming the option with the setter's words
    for a bad one."""
    for key in keys:
        v = getattr(args, key, None)
        if v is not None:
            try:
                setters[key](target, str(v))
            except ValueError as e:
                raise error(f"--{key.replace('_', '-')}: {e}") from None


# Typed values: each returns the value or raises ValueError with the words of the mistake.

def once_each(values, what):
    """values, each given once: two points of one value would have one key, and their records
    one file."""
    seen = set()
    for v in values:
        if v in seen:
            raise ValueError(f"{v} given twice in {what}")
        seen.add(v)
    return values


def words(v):
    """The words of a list: commas or blanks between them."""
    return v.replace(",", " ").split()


def ints(v, lo, hi, what):
    """A list of whole numbers from lo to hi, each once, at least one."""
    out = []
    for part in words(v):
        try:
            n = int(part)
        except ValueError:
            raise ValueError(f"bad value '{part}' for {what}: expected whole numbers") from None
        if not lo <= n <= hi:
            raise ValueError(f"bad value '{part}' for {what}: expected {lo} to {hi}")
        out.append(n)
    if not out:
        raise ValueError(f"{what} needs at least one value")
    return once_each(out, what)


def number(v, lo, hi, what, whole=False):
    """One number from lo to hi (a whole one with whole)."""
    try:
        x = int(v) if whole else float(v)
    except ValueError:
        raise ValueError(f"bad value '{v}' for {what}: expected "
                         f"{'a whole number' if whole else 'a number'}") from None
    if not lo <= x <= hi:
        raise ValueError(f"bad value '{v}' for {what}: expected {lo:g} to {hi:g}")
    return x


def flag(v, what):
    if v.lower() in ("yes", "on", "true", "1"):
        return True
    if v.lower() in ("no", "off", "false", "0"):
        return False
    raise ValueError(f"bad value '{v}' for {what}: expected yes or no")
