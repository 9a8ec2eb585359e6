"""The search for a gateway's loss-free rates (docs/ndr.md): the no-drop rate (NDR, no datagram
lost) and the partial-drop rate (PDR, at most pdr_loss of them lost) found together, in phases
of growing trial duration, as FD.io CSIT's MLRsearch does. Short trials first find the bounds
roughly; each later phase measures the bounds it inherits again at its longer duration and
narrows them to its width, until the last phase leaves each loss target between two trials of
the full duration whose rates lie within the goal width of each other.

Pure: the trial itself is measure(rate, duration), injected, so that the unit tests run the
search against a simulated gateway. A trial is a dict with at least sent, received and valid
(whether the generator offered the rate and counted exactly: a trial that is not valid says
nothing of the gateway, and only bounds the search from above)."""

import dataclasses
import math


@dataclasses.dataclass
class Params:
    min_rate: float            # datagrams a second: below it, a target counts as not found
    max_rate: float            # the highest rate offered: the generator's ceiling
    final_s: float = 5.0       # the last phase's trial duration
    initial_s: float = 1.0     # the first phase's
    width: float = 0.02        # the goal: (upper - lower) / upper at the final duration
    pdr_loss: float = 0.005    # the loss ratio PDR may have (MLRsearch's and CSIT's 0.5%)
    retries: int = 2           # a trial that is not valid is run again this many times

    def check(self):
        """Raises ValueError with one line for what cannot be searched."""
        if not 1 <= self.min_rate < self.max_rate:
            raise ValueError(f"the lowest rate ({self.min_rate:g}) must be at least 1 and below "
                             f"the highest ({self.max_rate:g})")
        if not 0 < self.initial_s <= self.final_s:
            raise ValueError(f"the first trials ({self.initial_s:g} s) must be no longer than "
                             f"the final ones ({self.final_s:g} s)")
        if not 0 < self.width < 1:
            raise ValueError(f"bad width {self.width:g}: expected above 0 and below 1")
        if not 0 <= self.retries <= 10:
            raise ValueError(f"bad retries {self.retries}: expected 0 to 10")
        if not 0 <= self.pdr_loss < 1:
            raise ValueError(f"bad loss ratio {self.pdr_loss:g} for PDR: expected 0 to below 1")


# Each phase's trials are at most this many times longer than the last phase's.
PHASE_RATIO = 3.0


def phases(p):
    """[(duration, width)] of the phases: durations from initial_s to final_s in steps of at
    most PHASE_RATIO, widths from the goal at the last phase doubling towards the first (at
    most 0.5), so that each phase halves what the one before left."""
    if p.final_s <= p.initial_s:
        return [(p.final_s, p.width)]
    n = max(2, math.ceil(math.log(p.final_s / p.initial_s) / math.log(PHASE_RATIO) - 1e-9) + 1)
    out = []
    for i in range(n):
        d = p.initial_s * (p.final_s / p.initial_s) ** (i / (n - 1))
        out.append((round(d, 3) if i < n - 1 else p.final_s, min(0.5, p.width * 2 ** (n - 1 - i))))
    return out


def loss_ratio(trial):
    sent = trial["sent"]
    return (sent - trial["received"]) / sent if sent else 1.0


def passes(trial, target):
    """Whether a trial shows the gateway meeting a loss target at its rate."""
    return bool(trial["valid"]) and trial["sent"] > 0 and loss_ratio(trial) <= target


def forwarded(trial):
    """Datagrams a second the gateway delivered in a trial."""
    return trial["received"] / trial["duration"] if trial["duration"] else 0.0


class Search:
    """One search: call run(); then trials holds every trial in order, and result() the NDR
    and PDR with the trials that bound them."""

    def __init__(self, measure, params):
        params.check()
        self.measure, self.p = measure, params
        self.trials = []
        self.targets = (("ndr", 0.0), ("pdr", params.pdr_loss))

    def trial(self, rate, duration, phase):
        """The trial at rate (rounded, within the limits) and duration: measured now, or the
        one already measured. A trial that is not valid (the generator fell short: on a busy
        machine, often for a moment) is run again, up to retries times; every attempt is kept,
        those run again marked `retried` and left out of the bounds. Returns (trial, whether
        it is new)."""
        rate = int(round(min(max(rate, self.p.min_rate), self.p.max_rate)))
        for t in self.counted():
            if t["rate"] == rate and t["duration"] == duration:
                return t, False
        for attempt in range(1 + self.p.retries):
            t = dict(self.measure(rate, duration))
            t.update(rate=rate, duration=duration, phase=phase, index=len(self.trials),
                     attempt=attempt)
            t["loss_ratio"] = loss_ratio(t)
            self.trials.append(t)
            if t["valid"]:
                break
            if attempt < self.p.retries:
                t["retried"] = True
        return t, True

    def counted(self):
        """The trials that count: all but the attempts run again."""
        return [t for t in self.trials if not t.get("retried")]

    def bounds(self, duration, target):
        """(lower, upper) rates for a loss target from the trials of a duration: upper the
        lowest rate that failed it, lower the highest below that which met it (a noisy pass
        above a failure does not count)."""
        at = [t for t in self.counted() if t["duration"] == duration]
        fails = [t["rate"] for t in at if not passes(t, target)]
        upper = min(fails) if fails else None
        ok = [t["rate"] for t in at if passes(t, target) and (upper is None or t["rate"] < upper)]
        return (max(ok) if ok else None), upper

    def narrow(self, duration, width, phase, target, hint):
        lo, hi = self.bounds(duration, target)
        hint_lo, hint_hi = hint
        # The bounds a shorter phase found are measured again at this duration: a rate that
        # passed for a second may lose datagrams over ten.
        if lo is None and hint_lo is not None and (hi is None or hint_lo < hi):
            self.trial(hint_lo, duration, phase)
            lo, hi = self.bounds(duration, target)
        if hi is None and hint_hi is not None and (lo is None or hint_hi > lo):
            self.trial(hint_hi, duration, phase)
            lo, hi = self.bounds(duration, target)
        if lo is None and hi is None:
            self.trial(self.p.max_rate, duration, phase)
            lo, hi = self.bounds(duration, target)
        # No lower bound: down from the upper one, first to what the gateway forwarded there
        # (MLRsearch's start from the maximum receive rate), then in steps that double.
        step = width
        while lo is None:
            upper_trial = self.at(hi, duration)
            guess = hi * (1 - step)
            if step == width and self.p.min_rate <= forwarded(upper_trial) < guess:
                guess = forwarded(upper_trial)
            if hi <= self.p.min_rate:
                break
            _, new = self.trial(guess, duration, phase)
            lo, hi = self.bounds(duration, target)
            if not new:
                break
            step *= 2
        # No upper bound: up from the lower one, in steps that double, to the highest rate.
        step = width
        while lo is not None and hi is None and lo < self.p.max_rate:
            _, new = self.trial(lo * (1 + step), duration, phase)
            lo, hi = self.bounds(duration, target)
            if not new:
                break
            step *= 2
        # Narrow the interval to this phase's width: up from the lower bound in steps that
        # double while they pass (a lower bound found from the forwarded rate is often close
        # below the answer), then by halving.
        step = width
        while lo is not None and hi is not None and hi - lo > width * hi:
            rate = min((lo + hi) / 2, lo * (1 + step)) if step else (lo + hi) / 2
            t, new = self.trial(rate, duration, phase)
            if not new:
                break
            step = 2 * step if step and passes(t, target) else 0
            lo, hi = self.bounds(duration, target)
        return lo, hi

    def at(self, rate, duration):
        return next(t for t in self.counted() if t["rate"] == rate and t["duration"] == duration)

    def run(self):
        hints = {name: (None, None) for name, _ in self.targets}
        for phase, (duration, width) in enumerate(phases(self.p)):
            for name, target in self.targets:
                hints[name] = self.narrow(duration, width, phase, target, hints[name])
        return self.result()

    def result(self):
        """{"ndr": bound, "pdr": bound}: each with its rate (the lower bound, None when even the
        lowest rate failed), the upper bound (None when the highest rate passed), the indexes
        of their trials, and whether the generator, not the gateway, set the upper bound (its
        trial was not valid) or the highest rate did (at_max)."""
        final = phases(self.p)[-1][0]
        out = {}
        for name, target in self.targets:
            lo, hi = self.bounds(final, target)
            up = self.at(hi, final) if hi is not None else None
            out[name] = {
                "loss_target": target,
                "rate": lo,
                "upper": hi,
                "lower_trial": self.at(lo, final)["index"] if lo is not None else None,
                "upper_trial": up["index"] if up else None,
                "width": (hi - lo) / hi if lo is not None and hi else None,
                "at_max": hi is None and lo is not None,
                "below_min": lo is None,
                "limited": hi is None or (up is not None and not up["valid"]),
            }
        return out
