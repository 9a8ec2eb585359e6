"""Unit tests of the one rate and size parser (scripts/tunbedlib/units.py) and of the INI reader
(inifile.py): the cases of the three rate parsers it replaced (tunbed intranet's bit rates,
tunbed ndr's packet rates, tunbed failover's --udp-rate), each still read as it was, and the
forms on which they disagreed, each read one way now (units.py says which)."""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))

from tunbedlib import inifile, units  # noqa: E402


class Rates(unittest.TestCase):
    def test_bit_rates(self):
        # tunbed intranet's (rate =, udp_rate =, tunbed_nominal) and tunbed failover's.
        for text, want in (("1gbit", 1e9), ("2.5g", 2.5e9), ("100mbit", 1e8), ("1000000", 1e6),
                           ("1.5G", 1.5e9), ("8kbit", 8000), ("1t", 1e12), (".5g", 5e8),
                           ("100mbit", 1e8), ("64k", 64e3), ("20mbit", 2e7), (" 1g ", 1e9),
                           ("0", 0), ("1.", 1)):
            self.assertEqual(units.rate(text, "rate"), want, text)

    def test_packet_rates(self):
        # tunbed ndr's (--min-rate, --max-rate, min_rate =, max_rate =).
        for text, want in (("1.5m", 1.5e6), ("800k", 8e5), ("1000", 1000), ("1.5M", 1.5e6),
                           ("2G", 2e9), (".5m", 5e5)):
            self.assertEqual(units.rate(text, "max_rate", "pps"), want, text)
        with self.assertRaises(ValueError) as e:
            units.rate("lots", "max_rate", "pps")
        self.assertEqual(str(e.exception), "bad value 'lots' for max_rate: expected datagrams a "
                                           "second, e.g. 500k or 1.5m")
        # A packet rate has no unit of bits.
        with self.assertRaises(ValueError):
            units.rate("1mbit", "max_rate", "pps")

    def test_refused(self):
        for text in ("", "-1", "1gbitt", "1 g", "fast", "1.5q", "1e9", "1gbps", "20mbps", "1e6",
                     "1_000", "inf", "nan", "0x10", "\u00b2"):
            with self.subTest(text=text), self.assertRaises(ValueError) as e:
                units.rate(text, "rate")
            self.assertEqual(str(e.exception), f"bad value '{text}' for rate: expected a bit "
                                               "rate such as 1gbit, 2.5g or 100mbit")

    def test_sizes(self):
        for text, want in (("125000", 125000), ("64k", 65536), ("1m", 1 << 20),
                           ("1MiB", 1 << 20), ("2kb", 2048), ("1g", 1 << 30)):
            self.assertEqual(units.size(text, "burst"), want, text)
        for text in ("", "1.5m", "-1", "1x", "1t"):
            with self.subTest(text=text), self.assertRaises(ValueError):
                units.size(text, "burst")

    def test_rate_text(self):
        self.assertEqual([units.rate_text(x) for x in (1.5e9, 2e9, 5e8, 64e3, 12)],
                         ["1.5 Gbit/s", "2 Gbit/s", "500 Mbit/s", "64 kbit/s", "12 bit/s"])


class Ini(unittest.TestCase):
    def read(self, text):
        def section(name, n):
            if name not in ("a", "b c"):
                raise ValueError(f"unknown section [{name}]")
            return name
        return list(inifile.entries(text, "f", KeyError, section, "a section"))

    def test_entries(self):
        self.assertEqual(self.read("; c\n[a]\nx = 1 ; note\n# c\n[ b   c ]\nx=2\ny =\n"),
                         [(2, "a", None, None), (3, "a", "x", "1"), (5, "b c", None, None),
                          (6, "b c", "x", "2"), (7, "b c", "y", "")])

    def test_mistakes(self):
        for text, want in (("x = 1", "f:1: 'x = 1' outside a section"),
                           ("[a", "f:1: missing ']' in '[a'"),
                           ("[z]", "f:1: unknown section [z]"),
                           ("[a]\njunk", "f:2: expected 'key = value', got 'junk'"),
                           ("[a]\nx = 1\n[b c]\nx = 1\n[a]\nx = 2",
                            "f:6: duplicate key 'x' (first at line 2)")):
            with self.subTest(text=text), self.assertRaises(KeyError) as e:
                self.read(text)
            self.assertEqual(e.exception.args[0], want)

    def test_values(self):
        self.assertEqual(inifile.ints("1, 8 64", 1, 64, "sessions"), [1, 8, 64])
        self.assertEqual(inifile.number("2.5", 0, 3, "time"), 2.5)
        self.assertEqual(inifile.number("7", 1, 9, "n", whole=True), 7)
        self.assertIs(inifile.flag("On", "rr"), True)
        for call, want in (
                (lambda: inifile.ints("1 1", 1, 9, "sessions"), "1 given twice in sessions"),
                (lambda: inifile.ints("x", 1, 9, "sessions"),
                 "bad value 'x' for sessions: expected whole numbers"),
                (lambda: inifile.ints("", 1, 9, "sessions"), "sessions needs at least one value"),
                (lambda: inifile.number("0", 1, 3600, "time"),
                 "bad value '0' for time: expected 1 to 3600"),
                (lambda: inifile.number("1.5", 1, 9, "n", whole=True),
                 "bad value '1.5' for n: expected a whole number"),
                (lambda: inifile.flag("maybe", "rr"), "bad value 'maybe' for rr: expected yes "
                                                      "or no")):
            with self.subTest(want=want), self.assertRaises(ValueError) as e:
                call()
            self.assertEqual(str(e.exception), want)


if __name__ == "__main__":
    unittest.main()
