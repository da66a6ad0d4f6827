"""Unwrapping anyio task-group exception groups to the error that actually happened."""

from __future__ import annotations

import anyio


def real_error(group: BaseExceptionGroup[BaseException], *, require_single: bool = True) -> BaseException:
    """The real error inside (possibly nested) groups, cancellations left out. With
    `require_single`, several real errors return the group itself so none is hidden."""
    leaves: list[BaseException] = []

    def walk(e: BaseException) -> None:
        if isinstance(e, BaseExceptionGroup):
            for sub in e.exceptions:
                walk(sub)
        elif not isinstance(e, anyio.get_cancelled_exc_class()):
            leaves.append(e)

    walk(group)
    if not leaves or (require_single and len(leaves) > 1):
        return group
    return leaves[0]
