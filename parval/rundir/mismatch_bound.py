"""How much a clean comparison rules out: the outputs produced while another request of the
model was executing (overlapped), how many of them differed from their reference, and the
exact binomial (Clopper-Pearson, one-sided) 95 % upper bound on the per-output mismatch
rate. With 0 differing in n the bound is 1 - 0.05^(1/n), about 3/n.

Overlap is read from the client's in-flight windows, which events.jsonl records for every
request (t_send, t_done): a request is overlapped when another request of the same attempt
of a start was in flight during it, and the start runs at two or more slots (at one slot
the server runs requests one at a time, however many the client has in flight). Requests
are compared with those judged beside them: a count's waves run one after another, each
drained before the next, so a wave's outputs overlap only each other."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import TypedDict

CONFIDENCE = 0.95


class MismatchBound(TypedDict):
    """The bound one verdict (or one count, summed over runs) states."""

    overlapped: int  # outputs produced while another request of the model was executing
    differed: int  # of those, how many differed from their reference
    rate_upper_95: float  # Clopper-Pearson one-sided 95 % upper bound on the per-output mismatch rate


def overlapped_events(requests: Iterable[Mapping[str, object]], slots: Mapping[str, int]) -> set[int]:
    """The requests (of these events, by `id`) another request of the same attempt of the
    same start was in flight beside, as the client saw it; `slots`: each start's slot count
    (starts at one slot, or not named, contribute none). Identity, not the request's name:
    a wave sends the same request more than once."""
    by_attempt: dict[tuple[str, object], list[tuple[float, float, int]]] = defaultdict(list)
    for e in requests:
        run = str(e.get("run"))
        if slots.get(run, 1) < 2:
            continue
        t0, t1 = e.get("t_send"), e.get("t_done")
        if not isinstance(t0, int | float) or not isinstance(t1, int | float):
            continue
        by_attempt[(run, e.get("attempt"))].append((float(t0), float(t1), id(e)))
    out: set[int] = set()
    for spans in by_attempt.values():
        spans.sort()
        # Sweep in send order: a request overlaps one sent before it that was still in
        # flight when it was sent (the latest end so far tells), and vice versa.
        end_so_far, holder = -math.inf, None
        for t0, t1, key in spans:
            if end_so_far > t0 and holder is not None:
                out.add(key)
                out.add(holder)
            if t1 > end_so_far:
                end_so_far, holder = t1, key
    return out


def _binom_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p)."""
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 1.0 if k >= n else 0.0
    lp, lq = math.log(p), math.log1p(-p)
    log_n = math.lgamma(n + 1)
    terms = [log_n - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp + (n - i) * lq for i in range(k + 1)]
    top = max(terms)
    return min(1.0, math.exp(top) * sum(math.exp(t - top) for t in terms))


def upper_bound(differed: int, n: int, confidence: float = CONFIDENCE) -> float:
    """The exact (Clopper-Pearson) one-sided upper confidence bound on a binomial rate, given
    `differed` of `n`: the rate p at which seeing `differed` or fewer has probability
    1 - confidence. 1.0 when nothing was observed or every output differed."""
    if n <= 0 or differed >= n:
        return 1.0
    alpha = 1.0 - confidence
    if differed == 0:
        return 1.0 - math.pow(alpha, 1.0 / n)
    lo, hi = differed / n, 1.0
    for _ in range(80):
        mid = (lo + hi) / 2
        if _binom_cdf(differed, n, mid) > alpha:
            lo = mid
        else:
            hi = mid
    return hi


def bound(overlapped: int, differed: int) -> MismatchBound:
    return {"overlapped": overlapped, "differed": differed, "rate_upper_95": upper_bound(differed, overlapped)}


def summed(bounds: Iterable[Mapping[str, object]]) -> MismatchBound | None:
    """One bound over several (every run of a tested identity at one count): the outputs and
    mismatches added, the bound taken again. None when none was given."""
    total = differed = 0
    seen = False
    for b in bounds:
        o, d = b.get("overlapped"), b.get("differed")
        if isinstance(o, int) and isinstance(d, int):
            total, differed, seen = total + o, differed + d, True
    return bound(total, differed) if seen else None


def percent(rate: float) -> str:
    """An upper bound as a percentage, two significant digits rounded up, never down (a
    bound shown lower than it is would claim more than the evidence: 0.088 %, 3 %, 100 %)."""
    value = rate * 100
    if value <= 0:
        return "0 %"
    step = 10 ** (math.floor(math.log10(value)) - 1)
    shown = math.ceil(round(value / step, 9)) * step
    return f"{float(f'{shown:.2g}'):g} %"


def words(b: Mapping[str, object]) -> str:
    """The bound in words, for reasons and tables: '84 overlapped outputs, 0 differed: mismatch
    rate < 3.5 % (95 %)'."""
    o, d, r = b.get("overlapped"), b.get("differed"), b.get("rate_upper_95")
    if not isinstance(o, int) or not isinstance(d, int) or not isinstance(r, int | float):
        return "no overlapped outputs counted"
    if o == 0:
        return "no overlapped outputs: no bound on the mismatch rate"
    return f"{o:,} overlapped output(s), {d} differed: mismatch rate < {percent(float(r))} (95 %)"


# The verdicts of a count whose evidence states its bound, widest first: Q5 adds to M2.exact
# the overlapped mismatches of attempts parval set aside.
BOUND_IDS = ("Q5", "M2.exact")


def count_bound(assertions: Iterable[Mapping[str, object]]) -> MismatchBound | None:
    """One count's bound as its evidence states it (None when no verdict of it does)."""
    found = {a.get("id"): a for a in assertions}
    for id_ in BOUND_IDS:
        evidence = (found.get(id_) or {}).get("evidence")
        b = evidence.get("bound") if isinstance(evidence, Mapping) else None
        if isinstance(b, Mapping):
            return summed([b])
    return None


def cell(b: Mapping[str, object] | None) -> str:
    """The bound in a table cell: '102, 0 differed, < 2.9 %'."""
    if b is None:
        return ""
    o, d, r = b.get("overlapped"), b.get("differed"), b.get("rate_upper_95")
    if not isinstance(o, int) or not isinstance(r, int | float):
        return ""
    if o == 0:
        return "0"
    return f"{o:,}, {d} differed, < {percent(float(r))}"


def summed_per_count(records: Iterable[Mapping[str, object]]) -> dict[str, MismatchBound]:
    """Each count's bound summed over several evidence records (every run of one tested
    identity: every run counts), keyed by count as the evidence keys it."""
    found: dict[str, list[MismatchBound]] = {}
    for ev in records:
        checks = ev.get("model_checks")
        per_count = checks.get("per_count") if isinstance(checks, Mapping) else None
        if not isinstance(per_count, Mapping):
            continue
        for key, block in per_count.items():
            assertions = block.get("assertions") if isinstance(block, Mapping) else None
            b = count_bound(assertions) if isinstance(assertions, list) else None
            if b is not None:
                found.setdefault(str(key), []).append(b)
    out = {key: summed(bs) for key, bs in found.items()}
    return {key: b for key, b in sorted(out.items(), key=lambda kv: int(kv[0])) if b is not None}


def per_count_words(bounds: Mapping[str, Mapping[str, object]]) -> str:
    """Bounds per count in one cell: 'count 2: 204, 0 differed, < 1.5 %; count 3: ...'."""
    return "; ".join(f"count {key}: {cell(b)}" for key, b in bounds.items())


def soak_line(e: Mapping[str, object]) -> str:
    """A soak_progress or soak_end event as its progress line: 'soak: 3,412 overlapped
    outputs, 0 mismatches, rate < 0.088 % (95 %), 41 min left'."""
    o, d, r = e.get("overlapped"), e.get("differed"), e.get("rate_upper_95")
    text = f"soak: {o:,} overlapped outputs" if isinstance(o, int) else "soak: overlapped outputs not counted"
    text += f", {d} mismatch{'es' if d != 1 else ''}"
    if isinstance(r, int | float) and isinstance(o, int) and o > 0:
        text += f", rate < {percent(float(r))} (95 %)"
    left = e.get("left_s")
    if e.get("kind") == "soak_end":
        text += f"; soak ended: {e.get('stopped')}"
    elif isinstance(left, int | float):
        text += f", {max(0, round(left / 60))} min left"
    return text
