"""A labeled set as confirmed incidents: what `crashcart cases add --labels DIR` stores.

Each case is triaged through the public API and stored with its labeled class and action, so a team can
seed its incident memory from a set it has already labeled (and evals can measure recall on it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from crashcart.agent.cases import incident_from_report
from crashcart.api import Report, triage
from crashcart.evals.dataset import load_evalset
from crashcart.knowledge.incident_store import IncidentStore
from crashcart.knowledge.incidents import Incident


def add_from_evalset(
    store: IncidentStore, root: Path, triage_fn: Callable[[list[str]], Report] = triage
) -> list[Incident]:
    """Every case of DIR/labels.jsonl, triaged and stored with its labeled class and action."""
    incidents = []
    for case in load_evalset(root):
        report = triage_fn([str(case.resolve(root))])
        incidents.append(
            incident_from_report(
                report,
                failure_class=case.failure_class,
                action=case.action,
                job=case.id,
                source="evalset",
                resolution=case.why,
            )
        )
    return store.add_many(incidents)
