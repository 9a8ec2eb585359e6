"""Rates and sizes as people write them and tunbed's tools read them: one parser of rates (bit
rates such as 2.5g or 100mbit, packet rates such as 500k), one of byte sizes (64k, 1m), and
rates for people (1.5 Gbit/s).

A rate is a decimal number (digits with an optional fraction, or a fraction alone: .5) and an
optional multiplier k, m, g or t (1000-based, either case), then for a bit rate an optional
`bit`, blanks around it ignored: no exponent, no sign, no blank inside, no other unit. Before
this module three parsers disagreed: tunbed ndr's took no `t`, no `.5` and no `bit`; tunbed
failover's took exponents (1e6) and `bps`, which are refused now, each in the line of the
option or key that was given."""

import re

RATE = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)([kmgt]?)")
SCALE = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
EXPECTED = {"bit": "a bit rate such as 1gbit, 2.5g or 100mbit",
            "pps": "datagrams a second, e.g. 500k or 1.5m"}
SIZE = re.compile(r"([0-9]+)(?:([kmg])(?:ib)?)?b?")
SHIFT = {None: 0, "k": 10, "m": 20, "g": 30}


def rate(text, what, unit="bit"):
    """The rate text gives, a float (bit/s for unit "bit", datagrams a second for "pps"); a
    ValueError `bad value 'TEXT' for WHAT: expected ...` otherwise."""
    t = text.strip().lower()
    if unit == "bit":
        t = t.removesuffix("bit")
    m = RATE.fullmatch(t)
    if not m:
        raise ValueError(f"bad value '{text}' for {what}: expected {EXPECTED[unit]}")
    return float(m[1]) * SCALE[m[2]]


def size(text, what):
    """Bytes as tunbed's tools read them: '64k', '1m', '1MiB' (1024-based), '125000'; a
    ValueError otherwise."""
    m = SIZE.fullmatch(text.strip().lower())
    if not m:
        raise ValueError(f"bad value '{text}' for {what}: expected bytes such as 125k or 1m")
    return int(m.group(1)) << SHIFT[m.group(2)]


def rate_text(bps):
    """'1.5 Gbit/s', '500 Mbit/s', '64 kbit/s': a rate for people."""
    for unit, scale in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if bps >= scale:
            return f"{bps / scale:.3g} {unit}"
    return f"{bps:.0f} bit/s"
