"""The gateway's field allowlist: what goes on to an engine, what is dropped, what is refused,
and which media URLs an engine may be made to fetch."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from roundhouse.api.settings import GatewaySettings
from roundhouse.base.host_names import canonical_host
from roundhouse.core.gateway.fields import (
    CHAT,
    COMPLETIONS,
    EMBEDDINGS,
    EXTRAS,
    FORWARDED,
    OPENAI,
    REFUSED,
    FieldRefused,
    MediaRefused,
    dropped_header,
    screen,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "gateway-security.md"
ALLOWED = ("upload.wikimedia.org", "allowed.com")
APIS = (CHAT, COMPLETIONS, EMBEDDINGS)


def _chat(*parts: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": list(parts)}], **fields}


def _image(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


def _base(api: str) -> dict[str, Any]:
    if api == CHAT:
        return {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    if api == COMPLETIONS:
        return {"model": "m", "prompt": "Once"}
    return {"model": "m", "input": "hi"}


# -- top-level fields -----------------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_every_refused_field_is_refused_naming_it(api: str, name: str) -> None:
    body = _base(api) | {name: "anything"}
    before = copy.deepcopy(body)
    with pytest.raises(FieldRefused) as refused:
        screen(api, body, ALLOWED)
    assert refused.value.status == 400
    assert refused.value.param == name
    assert f"'{name}'" in refused.value.message and REFUSED[name] in refused.value.message
    assert body == before


def test_the_mlx_and_llama_cpp_fields_of_the_issue_are_refused() -> None:
    for name in ("draft_model", "adapters", "id_slot", "slot_id", "lora_path"):
        with pytest.raises(FieldRefused):
            screen(CHAT, _base(CHAT) | {name: "x"}, ())


def test_nothing_refused_is_also_forwarded() -> None:
    for api in APIS:
        assert not set(REFUSED) & FORWARDED[api]


@pytest.mark.parametrize("api", APIS)
def test_openai_fields_and_the_engine_extras_go_on_untouched(api: str) -> None:
    body = _base(api) | {name: 1 for name in (OPENAI[api] | set(EXTRAS[api])) - _base(api).keys()}
    before = copy.deepcopy(body)
    assert screen(api, body, ()) == []
    assert body == before


@pytest.mark.parametrize("api", APIS)
def test_unknown_fields_are_dropped_and_named(api: str) -> None:
    body = _base(api) | {"temperature": 0.5, "role_mapping": {}, "response_fields": ["x"]}
    if api == EMBEDDINGS:
        body.pop("temperature")
    dropped = screen(api, body, ())
    assert sorted(dropped) == ["response_fields", "role_mapping"]
    assert "role_mapping" not in body and "response_fields" not in body
    assert body["model"] == "m"


def test_each_api_forwards_only_its_own_fields() -> None:
    # A chat field means nothing to embeddings: dropped there, not forwarded.
    body = _base(EMBEDDINGS) | {"temperature": 0.2, "chat_template_kwargs": {}}
    assert sorted(screen(EMBEDDINGS, body, ())) == ["chat_template_kwargs", "temperature"]
    assert sorted(screen(COMPLETIONS, _base(COMPLETIONS) | {"tools": []}, ())) == ["tools"]


def test_the_dropped_header_carries_plain_names_only() -> None:
    names = ["b_field", "a-field", "evil\r\nset-cookie: x", "ü", "x" * 65]
    assert dropped_header(names) == "a-field, b_field, 3 more"


# -- media ----------------------------------------------------------------------------------

PNG = "data:image/png;base64,iVBORw0KGgo="


@pytest.mark.parametrize(
    "url",
    [
        PNG,
        "DATA:image/png;base64,iVBORw0KGgo=",  # schemes are case-insensitive
        "https://upload.wikimedia.org/a.png",
        "http://allowed.com/a.png",
        "HTTPS://ALLOWED.COM/a.png",
        "https://allowed.com:8443/a.png",
        "https://allowed.com/a.png?x=@evil.net#@evil.net",
    ],
)
def test_inline_media_and_allowed_hosts_pass(url: str) -> None:
    body = _chat({"type": "text", "text": "what is it?"}, _image(url))
    assert screen(CHAT, body, ALLOWED) == []
    assert body["messages"][0]["content"][1]["image_url"]["url"] == url


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254, which is not an allowed"),
        ("https://allowed.com.evil.net/a.png", "allowed.com.evil.net, which is not an allowed"),
        ("https://evilallowed.com/a.png", "evilallowed.com, which is not an allowed"),
        ("https://allowed.com@evil.net/a.png", "cannot read safely"),
        ("https://allowed.com:80@evil.net/", "cannot read safely"),
        ("https://allowed.com\\@evil.net/", "cannot read safely"),
        ("https://allowed.com\\.evil.net/", "cannot read safely"),
        ("https://allowed.com%2eevil.net/", "cannot read safely"),
        ("https://allo\nwed.com/", "cannot read safely"),
        ("https://allowed.com\t/", "cannot read safely"),
        (" https://allowed.com/", "cannot read safely"),
        ("https://allowed.com./a.png", "cannot read safely"),
        ("https://allowed.com:99999/", "cannot read safely"),
        ("https:allowed.com/a.png", "cannot read safely"),
        ("HTTP://EVIL.NET/a.png", "evil.net, which is not an allowed"),
        ("file:///etc/passwd", "a file: address"),
        ("FILE:///etc/passwd", "a file: address"),
        ("ftp://allowed.com/a.png", "a ftp: address"),
        ("/etc/passwd", "neither a data: URL"),
        ("//evil.net/a.png", "neither a data: URL"),
        ("C:\\Windows\\win.ini", "neither a data: URL"),
    ],
)
def test_other_media_urls_are_refused_naming_where_and_the_setting(url: str, words: str) -> None:
    body = _chat({"type": "text", "text": "look"}, _image(url))
    with pytest.raises(MediaRefused) as refused:
        screen(CHAT, body, ALLOWED)
    error = refused.value
    assert error.status == 400 and error.code == "media_url_not_allowed"
    assert error.param == "messages[0].content[1].image_url.url"
    assert words in error.message
    assert "gateway.media_domains" in error.message


def test_without_allowed_hosts_every_url_is_refused() -> None:
    with pytest.raises(MediaRefused, match=r"upload\.wikimedia\.org, which is not an allowed"):
        screen(CHAT, _chat(_image("https://upload.wikimedia.org/a.png")), ())


def test_international_and_ip_hosts_compare_in_one_spelling() -> None:
    allowed = GatewaySettings(media_domains=["Bücher.de", "[::1]", "10.0.0.7"]).media_domains
    assert allowed == ["xn--bcher-kva.de", "::1", "10.0.0.7"]
    for url in ("https://bücher.de/a.png", "https://XN--BCHER-KVA.DE/a.png", "http://[::1]:9/a"):
        screen(CHAT, _chat(_image(url)), allowed)
    with pytest.raises(MediaRefused):
        screen(CHAT, _chat(_image("http://[::2]/a")), allowed)


@pytest.mark.parametrize(
    ("part", "where"),
    [
        ({"type": "input_audio", "input_audio": {"data": "http://evil.net/a"}}, "input_audio.data"),
        ({"type": "input_audio", "input_audio": {"url": "file:///a.wav"}}, "input_audio.url"),
        ({"type": "input_video", "input_video": {"url": "http://evil.net/v"}}, "input_video.url"),
        ({"type": "video_url", "video_url": {"url": "http://evil.net/v"}}, "video_url.url"),
        ({"type": "audio_url", "audio_url": "http://evil.net/a"}, "audio_url"),
        ({"type": "image_url", "image_url": "http://evil.net/a"}, "image_url"),
        ({"type": "input_image", "image_url": "http://evil.net/a"}, "image_url"),
        ({"type": "file", "file": {"file_data": "http://evil.net/f.pdf"}}, "file.file_data"),
        # Whatever the type says: an engine may read the key anyway.
        ({"type": "text", "text": "x", "image_url": {"url": "http://evil.net/"}}, "image_url.url"),
    ],
)
def test_every_media_key_is_checked(part: dict[str, Any], where: str) -> None:
    with pytest.raises(MediaRefused) as refused:
        screen(CHAT, _chat(part), ALLOWED)
    assert refused.value.param == f"messages[0].content[0].{where}"


def test_base64_media_and_text_pass() -> None:
    body = _chat(
        {"type": "text", "text": "http://evil.net/ in text is just text"},
        {"type": "input_audio", "input_audio": {"data": "UklGRiQAAABXQVZF", "format": "wav"}},
        {"type": "file", "file": {"file_data": "JVBERi0xLjQK", "filename": "a.pdf"}},
        {"type": "refusal", "refusal": "no"},
    )
    body["messages"].append({"role": "assistant", "content": "http://evil.net/"})
    assert screen(CHAT, body, ()) == []


@pytest.mark.parametrize("kind", ["image_embeds", "audio_embeds", "prompt_embeds"])
def test_embedding_tensors_are_refused(kind: str) -> None:
    with pytest.raises(FieldRefused, match="CVE-2025-62164"):
        screen(CHAT, _chat({"type": kind, kind: "AAAA"}), ALLOWED)


def test_an_unknown_part_type_is_refused() -> None:
    with pytest.raises(FieldRefused) as refused:
        screen(CHAT, _chat({"type": "image_pil", "image_pil": "x"}), ALLOWED)
    assert refused.value.param == "messages[0].content[0].type"


def test_media_in_completions_and_embeddings_is_checked() -> None:
    prompt = {"prompt_string": "<__media__>", "multimodal_data": ["file:///etc/shadow"]}
    with pytest.raises(MediaRefused) as refused:
        screen(COMPLETIONS, {"model": "m", "prompt": ["a", prompt]}, ALLOWED)
    assert refused.value.param == "prompt[1].multimodal_data[0]"
    assert screen(COMPLETIONS, {"model": "m", "prompt": {"multimodal_data": ["AAAA"]}}, ()) == []
    embedded = {"content": [_image("http://evil.net/a.png")]}
    with pytest.raises(MediaRefused) as refused:
        screen(EMBEDDINGS, {"model": "m", "input": ["x", embedded]}, ALLOWED)
    assert refused.value.param == "input[1].content[0].image_url.url"
    messages = [{"role": "user", "content": [_image("http://evil.net/a.png")]}]
    with pytest.raises(MediaRefused):
        screen(EMBEDDINGS, {"model": "m", "messages": messages}, ALLOWED)


# -- the setting and the docs ---------------------------------------------------------------


def test_media_domains_are_host_names_in_one_spelling() -> None:
    settings = GatewaySettings(media_domains=[" Upload.Wikimedia.org ", "upload.wikimedia.org"])
    assert settings.media_domains == ["upload.wikimedia.org"]
    for wrong in ("https://a.com", "a.com/x", "a.com:443", "*.a.com", "user@a.com", "a b", ""):
        with pytest.raises(ValidationError, match="is not a host name"):
            GatewaySettings(media_domains=[wrong])
    assert canonical_host("a..com") is None and canonical_host("a.com.") is None


def test_the_docs_name_every_forwarded_extra_and_every_refused_field() -> None:
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("## What the gateway forwards", 1)[1].split("\n## ", 1)[0]
    for name in sorted(set(REFUSED) | {n for extras in EXTRAS.values() for n in extras}):
        assert f"`{name}`" in section, name
