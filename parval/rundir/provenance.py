"""Where the evidence was made: a developer's machine or a CI job (procedure E7: local and
remote CI results are distinct). Read from the CI environment when the run starts."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal, TypedDict

# (environment variable that marks the service, service name, variables worth keeping).
_SERVICES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("GITHUB_ACTIONS", "github-actions", ("GITHUB_REPOSITORY", "GITHUB_RUN_ID", "GITHUB_SHA", "GITHUB_REF")),
    ("GITLAB_CI", "gitlab-ci", ("CI_PROJECT_PATH", "CI_PIPELINE_ID", "CI_JOB_ID", "CI_COMMIT_SHA")),
    ("BUILDKITE", "buildkite", ("BUILDKITE_PIPELINE_SLUG", "BUILDKITE_BUILD_NUMBER", "BUILDKITE_COMMIT")),
    ("JENKINS_URL", "jenkins", ("JOB_NAME", "BUILD_NUMBER", "GIT_COMMIT")),
    ("TF_BUILD", "azure-pipelines", ("BUILD_REPOSITORY_NAME", "BUILD_BUILDID", "BUILD_SOURCEVERSION")),
    ("CIRCLECI", "circleci", ("CIRCLE_PROJECT_REPONAME", "CIRCLE_BUILD_NUM", "CIRCLE_SHA1")),
)
_FALSE = {"", "0", "false", "no", "off"}


class Provenance(TypedDict):
    """Where the evidence was made, as the manifest and the framework record keep it."""

    kind: Literal["ci", "local"]
    service: str | None  # the CI service, None when local or not recognised
    details: dict[str, str]  # the service's variables worth keeping


def _set(env: Mapping[str, str], name: str) -> bool:
    return env.get(name, "").strip().lower() not in _FALSE


def detect(env: Mapping[str, str] | None = None) -> Provenance:
    """{"kind": "ci" | "local", "service": name or None, "details": {var: value}}."""
    env = os.environ if env is None else env
    for marker, service, keep in _SERVICES:
        if _set(env, marker):
            return {"kind": "ci", "service": service, "details": {k: env[k] for k in keep if k in env}}
    if _set(env, "CI"):
        return {"kind": "ci", "service": None, "details": {}}
    return {"kind": "local", "service": None, "details": {}}


def label(provenance: object) -> str:
    """'local', 'CI (github-actions)', or 'unknown' for evidence recorded before provenance."""
    if not isinstance(provenance, dict) or provenance.get("kind") not in ("ci", "local"):
        return "unknown (not recorded)"
    if provenance["kind"] == "local":
        return "local"
    return f"CI ({provenance.get('service') or 'unnamed service'})"
