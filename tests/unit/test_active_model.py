"""The daemon's rule for the active model: the setting while the gateway lists it, else the
one model Roundhouse runs; a started instance's listed id; the model a reply came from."""

from __future__ import annotations

from roundhouse.api.chat import NewMessage, ReplyStats, Role
from roundhouse.api.instances import InstanceInfo, InstanceOrigin, InstanceStatus
from roundhouse.core.gateway.active import answered_by, listed_name, resolve_active, served_by
from roundhouse.core.gateway.listing import Listed, list_models, with_aliases
from tests.unit.builders import ready_instance


def _listed(*instances: InstanceInfo, aliases: dict[str, str] | None = None) -> list[Listed]:
    found = list_models(list(instances), [], lambda _: False)
    return with_aliases(found, aliases or {})


def test_the_setting_wins_while_it_is_listed() -> None:
    listed = _listed(ready_instance("a", model="/m/alpha.gguf"))
    assert resolve_active("alpha", listed) == "alpha"


def test_with_none_set_the_only_running_model_is_active() -> None:
    listed = _listed(ready_instance("a", model="/m/alpha.gguf"))
    assert resolve_active(None, listed) == "alpha"
    # A setting naming what nothing lists any more gives way to it too.
    assert resolve_active("gone", listed) == "alpha"


def test_two_running_none_loading_or_external_make_no_choice() -> None:
    two = _listed(
        ready_instance("a", model="/m/alpha.gguf"),
        ready_instance("b", model="/m/beta.gguf", port=8001),
    )
    assert resolve_active(None, two) is None
    assert resolve_active("beta", two) == "beta"
    loading = _listed(
        ready_instance("a", model="/m/alpha.gguf").model_copy(
            update={"status": InstanceStatus.LOADING}
        )
    )
    assert resolve_active(None, loading) is None
    external = _listed(ready_instance("x", model="/m/alpha.gguf", origin=InstanceOrigin.EXTERNAL))
    assert resolve_active(None, external) is None
    # Nothing running and the setting names what nothing lists: the setting, to be shown so.
    assert resolve_active("gone", []) == "gone"


def test_an_alias_does_not_make_the_one_model_two() -> None:
    listed = _listed(ready_instance("a", model="/m/alpha.gguf"), aliases={"fast": "alpha"})
    assert resolve_active(None, listed) == "alpha"
    assert resolve_active("fast", listed) == "fast"


def test_the_id_a_started_instance_is_listed_under() -> None:
    listed = _listed(
        ready_instance("a", model="/m/alpha.gguf"),
        ready_instance("b", model="/m/beta.gguf", port=8001),
        aliases={"fast": "beta"},
    )
    assert served_by(listed, "b") == "beta"
    assert served_by(listed, "nope") is None
    # A reply asked for by path or file name counts under the listed id.
    assert listed_name(listed, "/m/beta.gguf") == "beta"
    assert listed_name(listed, "beta.gguf") == "beta"
    assert listed_name(listed, "fast") == "fast"
    assert listed_name(listed, "no-such-model") is None


def test_the_model_of_the_last_reply_that_did_not_fail() -> None:
    ok = NewMessage(role=Role.ASSISTANT, content="hi", stats=ReplyStats(model="alpha"))
    failed = NewMessage(
        role=Role.ASSISTANT, content="", stats=ReplyStats(model="beta", error="not found")
    )
    stopped = NewMessage(
        role=Role.ASSISTANT, content="h", stats=ReplyStats(model="gamma", stopped=True)
    )
    user = NewMessage(role=Role.USER, content="hello")
    assert answered_by([user, ok, user, failed]) == "alpha"
    assert answered_by([user, ok, user, stopped]) == "gamma"
    assert answered_by([user]) is None
