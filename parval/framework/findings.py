"""The sub-checks of one framework run: each is a registered judge's verdict over what a
probe observed, recorded as an `observation` event (and the derived `check` event), so
`parval report --rejudge` can judge the observations again."""

from __future__ import annotations

import json
from collections.abc import Callable

from parval.framework.checks import Check
from parval.framework.judges import run_judge
from parval.framework.observed import Facts
from parval.jsontypes import JsonObject
from parval.procedure.catalogue import FRAMEWORK_GATE
from parval.rundir.files import dumps
from parval.status import Status

# (assertion, sub-check name, judge key, facts, evidence the check carries)
Observe = Callable[[str, str, str, Facts, JsonObject], object]


class Findings:
    """Every sub-check of one framework run, in the order the probes produced them.

    A probe hands over what it observed (`observe`: facts + the key of a pure judge); the
    sub-check is that judge's verdict over the facts. Both the observation and the derived
    check are events: `parval report --rejudge` re-runs the judges over the observations."""

    def __init__(self, record: Callable[[Check], object] | None = None, observe: Observe | None = None) -> None:
        self.checks: list[Check] = []
        self._record = record
        self._observe = observe

    def observe(self, assertion: str, name: str, judge: str, facts: Facts, **evidence: object) -> Check:
        """Record what one situation showed and judge it with the judge named `judge`."""
        if assertion not in FRAMEWORK_GATE:
            raise ValueError(f"unknown framework assertion {assertion}")
        # Judged as recorded: the judge reads the JSON the event holds, nothing more.
        facts = json.loads(dumps(facts))
        recorded: JsonObject = json.loads(dumps(evidence))
        if self._observe is not None:
            self._observe(assertion, name, judge, facts, recorded)
        verdict = run_judge(judge, facts)
        return self._add(assertion, name, verdict.status, verdict.detail(), {"judge": judge, **recorded})

    def add(self, assertion: str, name: str, status: Status, detail: str, **evidence: object) -> Check:
        """A sub-check that judges no server behaviour (skipped, not set up, a probe that
        could not finish): only PENDING or BLOCKED, recorded as a `given` observation."""
        if status not in (Status.PENDING, Status.BLOCKED, Status.NOT_APPLICABLE):
            raise ValueError(
                f"a given sub-check cannot be {status}: PASS, FAIL and UNSUPPORTED come from a judge "
                "over what was observed"
            )
        return self.observe(assertion, name, "given", {"status": str(status), "detail": detail}, **evidence)

    def _add(self, assertion: str, name: str, status: Status, detail: str, evidence: JsonObject) -> Check:
        check = Check(assertion, name, status, detail, evidence)
        self.checks.append(check)
        if self._record is not None:
            self._record(check)
        return check

    def of(self, assertion: str) -> list[Check]:
        return [c for c in self.checks if c.assertion == assertion]
