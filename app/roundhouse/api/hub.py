"""Schemas of Hugging Face search, a model's page (files grouped by quantization) and the token."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, SecretStr

# The problem titles of a Hub that takes no connection at all (HubUnreachableError): the
# app tells these apart from a slow or failing Hub, to say at once that search is offline.
NO_CONNECTION_TITLE = "No internet connection"
HUB_REFUSED_TITLE = "Hugging Face cannot be reached"
UNREACHABLE_TITLES = frozenset({NO_CONNECTION_TITLE, HUB_REFUSED_TITLE})


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class HubModelKind(StrEnum):
    """What a local engine can run from a Hub repository."""

    GGUF = "gguf"  # llama.cpp, Ollama
    MLX = "mlx"  # mlx-lm
    SAFETENSORS = "safetensors"  # vLLM, SGLang (text generation)


class HubSort(StrEnum):
    DOWNLOADS = "downloads"
    LIKES = "likes"
    UPDATED = "updated"  # the Hub's lastModified, newest first


class HubSearchRequest(_Frozen):
    query: str = Field(default="", max_length=200, description="words in the repository id")
    kinds: list[HubModelKind] = Field(
        default=[], description="keep only these kinds; empty means every kind local engines run"
    )
    author: str | None = Field(default=None, max_length=96, description="an org or user name")
    sort: HubSort = HubSort.DOWNLOADS
    limit: int = Field(default=30, ge=1, le=100)


class HubModelSummary(_Frozen):
    """One search result."""

    id: str = Field(description="'Qwen/Qwen3-0.6B-GGUF'")
    author: str | None = None
    downloads: int = 0
    likes: int = 0
    updated: datetime | None = Field(default=None, description="the Hub's lastModified")
    tags: list[str] = []
    pipeline_tag: str | None = None
    library_name: str | None = None
    gated: bool = Field(default=False, description="the license must be accepted on the Hub")
    private: bool = False
    kinds: list[HubModelKind] = Field(default=[], description="what local engines can run")
    parameter_count: int | None = Field(default=None, description="when the Hub knows it")


class HubSearchResult(_Frozen):
    request: HubSearchRequest
    models: list[HubModelSummary]


class HubFile(_Frozen):
    path: str = Field(description="the file's path in the repository")
    size: int = Field(ge=0)
    sha256: str | None = Field(default=None, description="the LFS sha256, when the Hub gives it")


class QuantGroup(_Frozen):
    """Files that are downloaded together: one quantization of a GGUF model (all shards of a
    split file), or every weight file of a safetensors or MLX repository."""

    name: str = Field(description="'Q4_K_M', 'UD-Q4_K_XL', 'BF16', 'MLX 4-bit', 'safetensors'")
    kind: HubModelKind
    quantization: str | None = Field(
        default=None, description="the quantization, when known ('Q4_K_M', '4bit', 'BF16')"
    )
    files: list[HubFile]
    size: int = Field(ge=0, description="bytes of all its files")
    shards: int = Field(default=1, ge=1, description="split GGUF parts, 1 for a single file")
    pattern: str | None = Field(
        default=None, description="a glob matching its files, for a download request"
    )


class HubModelDetails(_Frozen):
    """A model's page: what the card says and which files to choose from."""

    id: str
    revision: str = Field(description="the revision asked for ('main')")
    commit: str | None = Field(default=None, description="the commit it resolved to")
    author: str | None = None
    summary: str = Field(default="", description="the card's first paragraphs, plain text")
    license: str | None = None
    gated: bool = False
    private: bool = False
    base_models: list[str] = []
    tags: list[str] = []
    pipeline_tag: str | None = None
    library_name: str | None = None
    downloads: int = 0
    likes: int = 0
    updated: datetime | None = None
    kinds: list[HubModelKind] = []
    parameter_count: int | None = None
    architecture: str | None = Field(default=None, description="'qwen3', 'llama'")
    context_length: int | None = None
    groups: list[QuantGroup] = Field(default=[], description="smallest first")
    projectors: list[QuantGroup] = Field(
        default=[], description="multimodal projector files (mmproj), set apart from the models"
    )
    total_size: int = Field(default=0, ge=0, description="bytes of every file in the repository")


class HubTokenSource(StrEnum):
    KEYRING = "keyring"  # stored through Roundhouse
    ENVIRONMENT = "environment"  # HF_TOKEN, or the token `hf auth login` saved


class HubTokenStatus(_Frozen):
    """Whether a token is in use and whether the Hub accepts it; never the token itself."""

    present: bool
    source: HubTokenSource | None = None
    valid: bool | None = Field(default=None, description="None when not checked or unreachable")
    user: str | None = Field(default=None, description="the account the token belongs to")
    message: str = Field(description="in words, what the state is and what to do")


class HubTokenRequest(_Frozen):
    token: SecretStr = Field(description="a token from huggingface.co/settings/tokens")
