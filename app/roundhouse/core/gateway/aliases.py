"""Checks on the aliases a user saves that need the gateway's listing, beside the schema's."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from roundhouse.core.errors import InvalidInputError


def check_aliases(
    new: Mapping[str, str], current: Mapping[str, str], served: Collection[str]
) -> None:
    """Refuse an alias added or changed now that has the name of a model the gateway lists:
    a request for that model would silently go elsewhere. One saved earlier, before such a
    model appeared, does not block saving other settings."""
    for alias, target in new.items():
        if current.get(alias) == target:
            continue
        if alias in served:
            raise InvalidInputError(
                f"gateway.aliases: {alias!r} is the id of a model the gateway serves, so an "
                f"alias by that name would send its requests to {target!r} instead. Choose "
                "another name for the alias."
            )
