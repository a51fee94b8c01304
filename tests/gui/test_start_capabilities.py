"""The start dialog's Capabilities group against a real daemon and the real llama-server: the
rows each engine takes with their sentences, the proposed --n-cpu-moe and its "Use N", a
preset that keeps them, and a start with a LoRA adapter that llama-server loads (ADR 48)."""

from __future__ import annotations

from pathlib import Path

import qasync

from roundhouse.api.engines import EngineId
from roundhouse.api.fit import FitOptions, ModelFit
from roundhouse.core.knowledge.fit import estimate_fit
from roundhouse.gui.app import Ui
from roundhouse.gui.widgets.start_capability_words import WHEN
from tests.daemon_process import DaemonProcess
from tests.fixtures.models.tiny_adapters import write_tiny_lora_gguf
from tests.gui.conftest import wait_until
from tests.gui.test_instances import READY_S, _connected, _open_dialog, _run
from tests.unit.knowledge.test_fit_capabilities import qwen3_30b_a3b
from tests.unit.knowledge.test_fit_cases import rtx_3070

CAPABILITIES = (
    "flash_attn", "cache_type_k", "cache_type_v", "n_cpu_moe", "draft_model",
    "num_draft_tokens", "draft_min", "draft_gpu_layers", "thinking", "reasoning_budget",
    "reasoning_effort", "lora",
)  # fmt: skip


def test_the_group_the_proposed_n_and_a_start_with_a_lora(
    ui: Ui, qloop: qasync.QEventLoop, llama_daemon: DaemonProcess, tiny_gguf: Path, tmp_path: Path
) -> None:
    lora = write_tiny_lora_gguf(tmp_path / "стиль lora.gguf")

    async def scenario() -> None:
        page = await _connected(ui)
        dialog = _open_dialog(page, tiny_gguf)
        caps = dialog.capabilities
        assert not caps.box.isHidden() and caps.box.title() == "Capabilities"
        for name in CAPABILITIES:
            assert dialog.field_visible(name), name
        # Each control says when to use it, in a sentence beneath it.
        shown = {label.text() for label in caps.box.findChildren(type(dialog.problem_label))}
        for name in CAPABILITIES:
            assert WHEN[name] in shown, name

        # vLLM (not installed here: its rows as the catalog offers them) takes drafts,
        # thinking and LoRA, not experts in RAM nor a budget.
        assert ui.bridge.engines is not None
        vllm = ui.bridge.engines.catalog.spec(EngineId.VLLM)
        dialog.params.offer(EngineId.VLLM, frozenset(vllm.options))
        for name in ("draft_model", "num_draft_tokens", "thinking", "lora"):
            assert dialog.field_visible(name), name
        for name in ("n_cpu_moe", "draft_min", "reasoning_budget", "flash_attn"):
            assert not dialog.field_visible(name), name
        llama = ui.bridge.engines.catalog.spec(EngineId.LLAMA_CPP)
        dialog.params.offer(EngineId.LLAMA_CPP, frozenset(llama.options))

        # The estimate's proposal for a mixture of experts too big for an 8 GB GPU.
        report = estimate_fit(qwen3_30b_a3b(), rtx_3070(), FitOptions(context_length=8192))
        caps.show_fit(ModelFit(target="Qwen3-30B-A3B", report=report))
        n = caps.proposed_moe
        assert n is not None and n > 0
        assert caps.moe_proposal.isVisible() and f"--n-cpu-moe {n}" in caps.moe_proposal.text()
        assert caps.use_moe_button.text() == f"Use {n}"
        caps.use_moe_button.click()
        assert dialog.options().n_cpu_moe == n and dialog.options().n_gpu_layers == "all"
        # The tiny model's own estimate has no experts: the proposal goes.
        await wait_until(lambda: dialog.fit_line.isVisible(), 30, "the fit estimate")
        await wait_until(lambda: caps.proposed_moe is None, 30, "the tiny model's estimate")
        assert not caps.moe_proposal.isVisible()

        # Capabilities go into a preset and come back from it.
        caps.thinking.setCurrentIndex(caps.thinking.findData(False))
        caps.lora.setText(f"{lora}@0.5")
        await wait_until(lambda: dialog.save_preset_button.isEnabled(), 30, "presets")
        dialog.save_preset_as("lora half")
        await wait_until(lambda: dialog.preset_names() == ["lora half"], 30, "the preset")
        caps.lora.clear()
        caps.thinking.setCurrentIndex(0)
        dialog.choose_preset("lora half")
        options = dialog.options()
        assert [(a.path, a.scale) for a in options.lora] == [(str(lora), 0.5)]
        assert options.thinking is False and options.n_cpu_moe == n

        # Start it without the proposal (the tiny model has no experts), with the LoRA.
        caps.moe_choice.setCurrentIndex(0)
        caps.thinking.setCurrentIndex(0)
        dialog.gpu_layers_choice.setCurrentIndex(0)
        assert dialog.start_button.isEnabled(), dialog.problem_label.text()
        dialog.start_button.click()
        await wait_until(lambda: page.start_dialog is None, 30, "the dialog to close")
        section = page.instances
        await wait_until(
            lambda: section.model.rowCount() == 1 and section.row_texts()[0]["Status"] == "ready",
            READY_S,
            "ready",
        )
        argv = list(section.model.instance(0).argv)
        assert argv[argv.index("--lora-scaled") + 1] == f"{lora}:0.5"

    _run(ui, qloop, scenario())
