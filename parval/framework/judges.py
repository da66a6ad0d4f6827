"""The registry of every framework observation judge, and how a recorded observation is
judged: the key an observation names -> the pure function that judges it (each group's
module lists its own in a `JUDGES` table; this module assembles them, so importing it is
what makes every key known), attempt by attempt, with missing evidence PENDING."""

from __future__ import annotations

from parval.framework import judges_f1, judges_f2, judges_f3, judges_f4, judges_f5
from parval.framework.checks import Verdict
from parval.framework.facts import Facts
from parval.framework.observed import Judge
from parval.framework.preconditions import Capabilities, first_missing
from parval.status import Status

# -- judges of situations that were not forced -----------------------------------------------


def given(facts: Facts) -> Verdict:
    """A sub-check that is not a judgement of server behaviour: skipped by the probes file,
    a probe that could not finish, a too-short request, a capacity the case needs, a
    platform reason."""
    v = Verdict()
    status = Status(facts["status"])
    text = str(facts["detail"])
    if status is Status.BLOCKED:
        v.block(text)
    elif status is Status.PENDING:
        v.pend(text)
    elif status is Status.NOT_APPLICABLE:
        v.not_applicable(text)
    else:
        raise ValueError(
            f"a given sub-check cannot be {status}: PASS, FAIL and UNSUPPORTED come from a judge over what was observed"
        )
    v.verbatim = text
    return v


def precondition(facts: Facts) -> Verdict:
    """What the calibration start found missing, from the recorded capabilities."""
    v = Verdict()
    if not facts["needs"]:
        raise KeyError("the observation names no precondition")
    gap = first_missing(Capabilities.from_json(facts["capabilities"]), tuple(facts["needs"]))
    if gap is None:
        v.require(True, "preconditions met: " + ", ".join(facts["needs"]))
    elif gap[0] is Status.UNSUPPORTED:
        v.unsupported(gap[1])
        v.verbatim = gap[1]
    else:
        v.pend(gap[1])
        v.verbatim = gap[1]
    return v


def assemble(*tables: dict[str, Judge]) -> dict[str, Judge]:
    """One registry from the groups' tables; a key listed twice is a programming error."""
    registry: dict[str, Judge] = {}
    for table in tables:
        for key, fn in table.items():
            if key in registry:
                raise ValueError(f"judge {key} registered twice")
            registry[key] = fn
    return registry


JUDGES: dict[str, Judge] = assemble(
    {"given": given, "precondition": precondition},
    judges_f1.JUDGES,
    judges_f2.JUDGES,
    judges_f3.JUDGES,
    judges_f4.JUDGES,
    judges_f5.JUDGES,
)


def run_judge(key: str, facts: Facts) -> Verdict:
    """The verdict of the judge `key` over one observation; an observation of several
    attempts (a probe that tried again) is judged attempt by attempt (`over_attempts`)."""
    fn = JUDGES.get(key)
    if fn is None:
        raise KeyError(f"no framework judge named {key!r} (recorded by another parval version?)")
    attempts = facts.get("attempts") if isinstance(facts, dict) else None
    if isinstance(attempts, list):
        return over_attempts([judged(fn, a) for a in attempts])
    return judged(fn, facts)


def judged(fn: Judge, facts: Facts) -> Verdict:
    """`fn(facts)`; facts without a field the judge reads are missing evidence: PENDING
    naming it, never a pass and never a violation."""
    try:
        return fn(facts)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        v = Verdict()
        v.pend(f"the observation lacks evidence this judge reads ({type(exc).__name__}: {exc})")
        return v


def over_attempts(verdicts: list[Verdict]) -> Verdict:
    """Several attempts at one situation: a violation seen in any attempt stands (it is not
    undone by a later attempt); else the first attempt that forced the situation and passed;
    else the last attempt, saying how many were made."""
    if not verdicts:
        v = Verdict()
        v.pend("no attempt was recorded")
        return v
    k = len(verdicts)
    for i, v in enumerate(verdicts, 1):
        if v.status is Status.FAIL:
            return v.labelled(f"attempt {i} of {k}")
    for i, v in enumerate(verdicts, 1):
        if v.status is Status.PASS:
            earlier = "; ".join(b for w in verdicts[: i - 1] for b in w.blockers)
            out = v.labelled(f"attempt {i} of {k}")
            if earlier:
                out.passed.append(f"earlier attempt(s) not forced: {earlier}")
            return out
    return verdicts[-1].labelled(f"after {k} attempt(s)")
