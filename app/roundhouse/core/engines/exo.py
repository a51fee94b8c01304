"""exo (Mac clusters, attached through its API): what it serves, and how to tell it is exo.

    if is_exo_model_list(body_of_v1_models): ...
    served = served_models(body_of_state_instances)

exo's `GET /v1/models` lists every model card it knows, placed on the cluster or not; a chat
for one without an instance answers 404 "No instance found for model ...". What it serves
are the models of the instances in its cluster state (`GET /state/instances`: instance id ->
`{"MlxRingInstance": {"shardAssignments": {"modelId": ...}}}`, one tag per kind, camelCase).
Roundhouse attaches to exo; it never installs, starts or stops it (words below).
"""

from __future__ import annotations

from typing import Any

# exo's ModelListModel says who owns each card (exo/api/types/api.py): its signature.
EXO_OWNER = "exo"
DEFAULT_URL = "http://127.0.0.1:52415"

NOT_STARTED_HERE = (
    "Roundhouse attaches to exo but does not install, start or stop it: run exo yourself "
    "(its app, or `exo` in a terminal), place a model on the cluster in exo's dashboard, and "
    f"attach it with `roundhouse engines attach {DEFAULT_URL}` (or Attach… on the Engines page)."
)
STOP_REFUSED = (
    "Roundhouse did not start this exo and does not stop it: it runs a cluster other machines "
    "share. Stop it in exo's own app or where `exo` runs; to free a model, delete its instance "
    "in exo's dashboard."
)
EXPOSED = (
    "it is exo, which listens on every address of this machine (it has no setting to listen "
    f"on loopback only). Attach it by address to use it: `roundhouse engines attach "
    f"{DEFAULT_URL}`, or Attach… on the Engines page"
)


def is_exo_model_list(body: Any) -> bool:
    """Whether `body` (a `/v1/models` answer) is exo's: every card owned by exo."""
    if not isinstance(body, dict):
        return False
    data = body.get("data")
    if not isinstance(data, list) or not data:
        return False
    return all(isinstance(e, dict) and e.get("owned_by") == EXO_OWNER for e in data)


def served_models(instances: Any) -> list[str]:
    """The model ids of exo's placed instances, each once, in order; [] for anything else."""
    if not isinstance(instances, dict):
        return []
    ids: list[str] = []
    for tagged in instances.values():
        # One key, the instance's kind (MlxRingInstance, MlxJacclInstance, ...).
        if not isinstance(tagged, dict) or len(tagged) != 1:
            continue
        body = next(iter(tagged.values()))
        shards = body.get("shardAssignments") if isinstance(body, dict) else None
        model = shards.get("modelId") if isinstance(shards, dict) else None
        if isinstance(model, str) and model:
            ids.append(model)
    return list(dict.fromkeys(ids))
