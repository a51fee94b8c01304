"""Splitting a reply's Markdown into prose and fenced code, whole and while it streams."""

from __future__ import annotations

import random

from roundhouse.api.chat import ReplyStats
from roundhouse.gui.chat_reply import ReplyDraft, stats_line
from roundhouse.gui.markdown_segments import (
    Segment,
    SegmentedText,
    SegmentKind,
    split_markdown,
)

TEXT, CODE = SegmentKind.TEXT, SegmentKind.CODE

REPLY = """Here is a function:

```python
def add(a, b):
    return a + b
```

And a shell line:

~~~
$ echo "```not a fence```"
~~~

1. First
2. Second

   ```js
   console.log(1)
   ```
Done.
"""


def _kinds(segments: list[Segment]) -> list[tuple[SegmentKind, str]]:
    return [(s.kind, s.text) for s in segments]


def test_prose_and_fenced_blocks_with_their_language() -> None:
    segments = split_markdown(REPLY)
    assert _kinds(segments) == [
        (TEXT, "Here is a function:\n"),
        (CODE, "def add(a, b):\n    return a + b"),
        (TEXT, "\nAnd a shell line:\n"),
        (CODE, '$ echo "```not a fence```"'),
        (TEXT, "\n1. First\n2. Second\n"),
        (CODE, "console.log(1)"),
        (TEXT, "Done."),
    ]
    assert [s.language for s in segments if s.kind == CODE] == ["python", "", "js"]
    assert all(s.closed for s in segments)
    # Each segment knows where its source lies, fences included.
    assert REPLY[segments[1].start : segments[1].end].startswith("```python\n")
    assert REPLY[segments[1].start : segments[1].end].endswith("```\n")


def test_an_unclosed_block_runs_to_the_end_and_says_so() -> None:
    segments = split_markdown("Look:\n```rust\nfn main() {\n")
    assert segments[-1] == Segment(CODE, "fn main() {", 6, 26, "rust", closed=False)


def test_a_closing_fence_must_match_the_opening_one() -> None:
    segments = split_markdown("````md\n```\ninner\n```\n````\nafter")
    assert _kinds(segments) == [(CODE, "```\ninner\n```"), (TEXT, "after")]


def test_backticks_in_an_info_string_make_no_fence() -> None:
    assert _kinds(split_markdown("``` `x` ```\nplain")) == [(TEXT, "``` `x` ```\nplain")]


def test_while_streaming_an_unfinished_line_opens_no_fence() -> None:
    assert _kinds(split_markdown("Text\n```py", final=False)) == [(TEXT, "Text\n```py")]
    assert _kinds(split_markdown("Text\n```py", final=True)) == [(TEXT, "Text"), (CODE, "")]
    # Half of a closing fence is not shown as code while the rest is on its way.
    streaming = split_markdown("```\nx = 1\n``", final=False)
    assert _kinds(streaming) == [(CODE, "x = 1")]
    assert not streaming[0].closed


def test_long_prose_is_cut_at_a_paragraph_break() -> None:
    paragraphs = [f"Paragraph {i} " + "word " * 40 for i in range(12)]
    text = "\n\n".join(paragraphs)
    segments = split_markdown(text, max_text_chars=500)
    assert len(segments) > 3
    assert all(s.kind == TEXT for s in segments)
    assert "".join(text[s.start : s.end] for s in segments) == text
    assert all(len(s.text) < 500 + 260 for s in segments)


def test_streamed_in_pieces_the_segments_are_those_of_the_whole() -> None:
    rng = random.Random(7)
    whole = REPLY * 3 + "\n\n" + "\n\n".join("para " * 50 for _ in range(30))
    segmented = SegmentedText(max_text_chars=400)
    position = 0
    stable_before: list[Segment] = []
    while position < len(whole):
        position = min(len(whole), position + rng.randint(1, 12))
        changed = segmented.update(whole[:position], final=False)
        # What was stable stays stable and unchanged; only the tail is handed back.
        assert segmented.segments[: len(stable_before)] == stable_before
        assert len(changed) <= len(segmented.segments)
        stable_before = segmented.segments[: segmented.stable]
    segmented.update(whole, final=True)
    assert segmented.segments == split_markdown(whole, max_text_chars=400)
    assert segmented.stable == len(segmented.segments)


def test_a_text_that_is_not_a_continuation_starts_over() -> None:
    segmented = SegmentedText()
    segmented.update("```\na\n```\nmore", final=True)
    changed = segmented.update("Other text", final=True)
    assert _kinds(changed) == [(TEXT, "Other text")]
    assert segmented.segments == changed


def test_the_draft_joins_its_parts_when_asked() -> None:
    draft = ReplyDraft("tiny")
    for piece in ("Hel", "lo", " world"):
        draft.add(piece)
    draft.add("", "hmm")
    assert draft.content == "Hello world"
    draft.add("!")
    assert (draft.content, draft.reasoning, draft.deltas) == ("Hello world!", "hmm", 5)


def test_stats_line_says_engine_ttft_tokens_rate_and_stopped() -> None:
    stats = ReplyStats(
        engine="llama.cpp", ttft_ms=123.4, completion_tokens=1520, tokens_per_s=812.25
    )
    assert stats_line(stats) == "llama.cpp · TTFT 123 ms · 1,520 tokens · 812.2 tok/s"
    stopped = ReplyStats(completion_tokens=1, stopped=True)
    assert stats_line(stopped) == "1 token · stopped"
    assert stats_line(None) == ""
