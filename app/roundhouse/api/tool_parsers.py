"""Schemas of the tool-call and reasoning parser table, and of the parsers an instance got."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ParserRule(_Frozen):
    """One model family: how to recognise it and the parsers each engine needs for it."""

    family: str
    why: str = Field(description="in words, what the family writes that the parsers read")
    model_types: list[str] = Field(default=[], description="config.json model_type values")
    architectures: list[str] = Field(default=[], description="config.json architectures")
    template_has: list[str] = Field(default=[], description="all in the chat template")
    vllm_tool: str | None = None
    vllm_reasoning: str | None = None
    sglang_tool: str | None = None
    sglang_reasoning: str | None = None


class ParserTable(_Frozen):
    rules: list[ParserRule]


class ParserChoice(_Frozen):
    """The parsers an instance is started with; None: no flag (the engine's default)."""

    tool: str | None = None
    reasoning: str | None = None
    family: str | None = Field(default=None, description="the rule that matched, if any")
    notes: list[str] = Field(default=[], description="what was chosen and why, in words")
