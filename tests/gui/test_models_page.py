"""The Models page against a real daemon whose Hugging Face is the local Hub stand-in: search
with fit badges, a model's files by quantization with their fit, a download followed live
(paused and resumed on a throttled file), the library listing it, Start preset with its path,
and a deletion that frees it; the token dialog opens a gated model. Then the wording of fit
badges and download lines, without a daemon."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
import qasync
from PySide6.QtWidgets import QLineEdit

from roundhouse.api.downloads import DownloadItem, DownloadState
from roundhouse.api.engines import EngineId
from roundhouse.api.fit import (
    AdviceKind,
    DeviceFit,
    DeviceKind,
    FitAdvice,
    FitEngine,
    FitReport,
    FitVerdict,
)
from roundhouse.api.hub import HubModelKind
from roundhouse.api.library import LibraryModel
from roundhouse.gui.app import Ui
from roundhouse.gui.daemon_bridge import ConnectionState
from roundhouse.gui.pages.models_page import DOWNLOADS_TAB, LIBRARY_TAB, ModelsPage
from roundhouse.gui.widgets.models_words import Tone, fit_badge, item_line
from tests.daemon_process import DaemonProcess, path_with, running_daemon, start_daemon
from tests.fakes.hub import HubStandin, hub_env
from tests.fakes.hub.build import ACCESS_TOKEN, GATED_REPO, GGUF_REPO
from tests.gui.conftest import close_bridge, wait_until
from tests.processes import free_port
from tests.support.standins import keyring_env

Q8_FILE = "tiny-llama-Q8_0.gguf"


@pytest.fixture
def hf_home(tmp_path: Path) -> Path:
    return tmp_path / "hf"


@pytest.fixture
def daemon_env(
    fake_hub: HubStandin, llama_server_binary: Path, hf_home: Path, tmp_path: Path
) -> dict[str, str]:
    return {
        **hub_env(fake_hub),
        **keyring_env(tmp_path),
        **path_with(llama_server_binary),
        "HF_HOME": str(hf_home),
        # No Ollama answers there: the library lists the Hugging Face cache only.
        "OLLAMA_HOST": f"127.0.0.1:{free_port()}",
    }


@pytest.fixture
def hub_daemon(home_root: Path, daemon_env: dict[str, str]) -> Iterator[DaemonProcess]:
    with running_daemon(home_root, env=daemon_env) as process:
        yield process


def _blob(path: str) -> Path:
    """The file a snapshot's link points to, in the cache's blobs."""
    return Path(path).resolve()


def _badge_settled(page: ModelsPage, repo: str) -> bool:
    badge = page.search.results.badge(repo)
    return badge is not None and badge.text != "estimating…"


def test_search_pick_download_pause_resume_library_start_delete(
    ui: Ui,
    qloop: qasync.QEventLoop,
    hub_daemon: DaemonProcess,
    daemon_env: dict[str, str],
    home_root: Path,
    fake_hub: HubStandin,
    hf_home: Path,
    tiny_gguf: Path,
) -> None:
    async def scenario() -> None:
        ui.bridge.start()
        await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
        page = ui.window.show_page("Models")
        assert isinstance(page, ModelsPage)
        search = page.search
        # Shown for the first time: the most downloaded models, without asking.
        await wait_until(
            lambda: search.results.row_of(GGUF_REPO) is not None, 20, "the first search"
        )

        # A search by words and kind; each visible row gets a fit badge that resolves.
        search.query_edit.setText("tiny")
        search.kind_combo.setCurrentIndex(search.kind_combo.findText("GGUF"))
        search.search_button.click()
        await wait_until(lambda: not search.busy, 20, "the search")
        assert search.result is not None
        assert all(HubModelKind.GGUF in m.kinds for m in search.result.models)
        row = next(r for r in search.results.texts() if r["Model"] == GGUF_REPO)
        assert row["Kinds"] == "GGUF" and row["Downloads"] == "5.0k" and row["Likes"] == "40"
        await wait_until(lambda: _badge_settled(page, GGUF_REPO), 30, "the fit badge")
        badge = search.results.badge(GGUF_REPO)
        assert badge is not None and badge.tone != Tone.UNKNOWN, badge
        assert badge.text in ("fits on GPU", "CPU only", "runs on CPU") or badge.text.startswith(
            "partial "
        )

        # The model's page: its groups, each with its own estimate and the breakdown.
        assert search.select_repo(GGUF_REPO)
        details = page.details
        await wait_until(lambda: details.details is not None, 20, "the model's page")
        assert {"Q4_K_M", "Q8_0", "F16"} <= set(details.groups.keys())
        assert "apache-2.0" in details.meta.text() and details.gated_box.isHidden()
        f16 = next(r for r in details.groups.texts() if r["Quantization"] == "F16")
        assert f16["Files"] == "2 parts"

        def groups_estimated() -> bool:
            return all(t not in ("", "estimating…") for t in details.groups.badge_texts().values())

        await wait_until(groups_estimated, 30, "the groups' estimates")
        assert details.select_group("Q8_0")
        assert details.fit_label.isVisible() and "KV cache" in details.fit_label.text()
        assert details.download_button.text().startswith("Download Q8_0 (")

        # A throttled download: progress shows, Pause keeps the bytes, Resume finishes it.
        fake_hub.set_faults({"repo": "*", "path": "*.gguf", "throttle_bps": 100_000})
        details.download_button.click()
        await wait_until(lambda: "Queued Q8_0" in details.message_label.text(), 20, "queued")
        page.show_tab(DOWNLOADS_TAB)
        panel = page.downloads

        def transferring() -> bool:
            row = panel.row_for(Q8_FILE)
            return row is not None and 0 < row.bar.value() < row.bar.maximum()

        await wait_until(transferring, 20, "progress")
        row = panel.row_for(Q8_FILE)
        assert row is not None
        assert page.tabs.tabText(DOWNLOADS_TAB) == "Downloads (1)"
        assert " of " in row.line_label.text() and row.pause_button.isEnabled()
        assert not row.resume_button.isEnabled()
        row.pause_button.click()
        await wait_until(lambda: row.item.state == DownloadState.PAUSED, 15, "the pause")
        kept = row.item.bytes_done
        assert 0 < kept < row.item.size and row.resume_button.isEnabled()
        assert not row.pause_button.isEnabled() and "paused" in row.line_label.text()
        row.resume_button.click()
        await wait_until(lambda: row.item.state == DownloadState.DONE, 30, "the download")
        assert row.bar.value() == row.bar.maximum() and row.pause_button.isHidden()
        assert page.tabs.tabText(DOWNLOADS_TAB) == "Downloads"
        resumed = [
            r for r in fake_hub.requests() if Q8_FILE in r["path"] and "Range" in r["headers"]
        ]
        assert resumed, "the resume asked for the rest only"
        fake_hub.clear_faults()

        # The library lists the file (a finished download marks it stale).
        page.show_tab(LIBRARY_TAB)
        library = page.library

        def downloaded() -> LibraryModel | None:
            return library.find_model(
                lambda m: m.repo == GGUF_REPO and m.path is not None and m.path.endswith(Q8_FILE)
            )

        await wait_until(lambda: downloaded() is not None, 20, "the library entry")
        model = downloaded()
        assert model is not None and model.path is not None
        assert Path(model.path).is_relative_to(hf_home)
        texts = next(t for t in library.models.texts() if t["Name"] == model.name)
        assert texts["Format"] == "gguf" and texts["Architecture"] == "llama"
        assert "llama.cpp" in texts["Engines"]

        # Start opens the start dialog with llama.cpp and the file filled in.
        assert library.select_model(model.id)
        await wait_until(lambda: ui.bridge.engines is not None, 20, "the engines")
        dialog = library.start_selected()
        assert dialog is not None
        assert dialog.engine() == EngineId.LLAMA_CPP and dialog.model() == model.path
        dialog.reject()
        await wait_until(lambda: library.start_dialog is None, 5, "the dialog to close")

        # Delete: the confirmation says what it frees; then the file is gone.
        blob = _blob(model.path)
        assert blob.exists()
        library.delete_button.click()
        await wait_until(lambda: library.confirm_box is not None, 15, "the confirmation")
        box = library.confirm_box
        assert box is not None and "This frees 447.2 KiB" in box.text()
        [delete] = [b for b in box.buttons() if b.text() == "Delete"]
        delete.click()
        await wait_until(lambda: library.models.row_of(model.id) is None, 20, "the deletion")
        assert library.last_deleted is not None
        assert library.last_deleted.freed_bytes >= row.item.size
        assert "freed 447.2 KiB" in library.message_label.text()
        assert not blob.exists()

        # Import a GGUF file through the file dialog: listed from Roundhouse's folder.
        library.import_button.click()
        chooser = library.file_dialog
        assert chooser is not None
        chooser.selectFile(str(tiny_gguf))
        chooser.accept()
        await wait_until(lambda: "Imported" in library.message_label.text(), 20, "the import")
        await wait_until(lambda: library.models.rowCount() == 1, 20, "the imported model")
        [imported] = library.models.texts()
        assert imported["Source"] == "folder" and imported["Format"] == "gguf"

        # A gated model: the notice offers a token; the dialog's input is hidden.
        page.show_tab(0)
        search.query_edit.setText("gated")
        search.search_button.click()
        await wait_until(
            lambda: search.results.row_of(GATED_REPO) is not None, 20, "the gated repo"
        )
        assert search.select_repo(GATED_REPO)
        await wait_until(
            lambda: details.repo == GATED_REPO and not details.gated_box.isHidden(),
            20,
            "the gated notice",
        )
        details.token_button.click()
        token = page.token_dialog
        assert token is not None
        assert token.token_edit.echoMode() == QLineEdit.EchoMode.Password
        token.token_edit.setText(ACCESS_TOKEN)
        token.save_button.click()
        await wait_until(lambda: page.token_dialog is None, 20, "the token saved")
        assert page.token_status is not None and page.token_status.present
        assert page.token_label.text().startswith("Hugging Face token set")
        await wait_until(
            lambda: details.details is not None and details.details.id == GATED_REPO,
            20,
            "the page again",
        )
        assert details.groups.row_of("Q4_K_M") is not None

        # The daemon restarts: the download list follows the new one, with what it kept.
        hub_daemon.stop()
        await wait_until(lambda: not panel.following, 20, "the stream to end")
        restarted.append(await asyncio.to_thread(start_daemon, home_root, env=daemon_env))
        await wait_until(lambda: panel.following, 30, "the list followed again")
        await wait_until(lambda: panel.row_for(Q8_FILE) is not None, 10, "the queue again")

    restarted: list[DaemonProcess] = []
    try:
        qloop.run_until_complete(scenario())
    finally:
        try:
            close_bridge(qloop, ui.bridge)
        finally:
            # Started by the test, not by a fixture: a failure above must not leave it running.
            for process in restarted:
                process.stop(timeout=60)


# A GPU the estimate looked at (too small, say): the CPU is then a fallback, not the best.
_GPU = DeviceFit(
    label="GPU 0", kind=DeviceKind.GPU, index=0, weights_bytes=0, kv_bytes=0,
    compute_bytes=0, footprint_bytes=0, total_bytes=0, free_bytes=1, fits=True,
)  # fmt: skip


def _report(verdict: FitVerdict, gpu_layers: int, *, gpu: bool = True) -> FitReport:
    return FitReport(
        verdict=verdict,
        engine=FitEngine.LLAMA_CPP,
        summary="In words.",
        context_length=4096,
        n_parallel=1,
        gpu_layers=gpu_layers,
        total_layers=33,
        devices=[_GPU] if gpu else [],
        weights_bytes=1,
        kv_bytes=1,
        kv_bytes_per_token=1,
        compute_bytes=1,
        total_bytes=3,
        advice=[FitAdvice(kind=AdviceKind.KV_Q8_0, text="Use a q8_0 KV cache.", value="q8_0")],
    )


@pytest.mark.parametrize(
    ("verdict", "layers", "text", "tone"),
    [
        (FitVerdict.FULL_GPU, 33, "fits on GPU", Tone.GOOD),
        (FitVerdict.PARTIAL_OFFLOAD, 20, "partial 20/33 layers", Tone.WARN),
        (FitVerdict.CPU_ONLY, 0, "CPU only", Tone.WARN),
        (FitVerdict.DOES_NOT_FIT, 0, "does not fit", Tone.BAD),
    ],
)
def test_fit_badges_say_the_verdict(
    verdict: FitVerdict, layers: int, text: str, tone: Tone
) -> None:
    badge = fit_badge(_report(verdict, layers))
    assert (badge.text, badge.tone) == (text, tone)
    assert badge.tooltip.startswith("In words.") and "• Use a q8_0 KV cache." in badge.tooltip


def test_the_cpu_of_a_machine_without_a_gpu_is_no_warning() -> None:
    badge = fit_badge(_report(FitVerdict.CPU_ONLY, 0, gpu=False))
    assert (badge.text, badge.tone) == ("runs on CPU", Tone.NEUTRAL)


def test_a_download_line_says_stalled_instead_of_an_eta() -> None:
    item = DownloadItem(
        id="1", repo="o/r", revision="main", commit="c" * 40, path="m.gguf", size=4 * 1024**2,
        bytes_done=1024**2, speed_bps=512 * 1024, eta_s=6.0, state=DownloadState.DOWNLOADING,
        etag="e", created_at=0.0, updated_at=0.0,
    )  # fmt: skip
    assert item_line(item) == "downloading · 1.0 MiB of 4.0 MiB (25%) · 512.0 KiB/s, 6.0s left"
    stalled = item.model_copy(update={"stalled": True, "eta_s": None})
    assert item_line(stalled) == "downloading · 1.0 MiB of 4.0 MiB (25%) · stalled, retrying"
    paused = item.model_copy(update={"state": DownloadState.PAUSED})
    assert item_line(paused) == "paused · 1.0 MiB of 4.0 MiB (25%)"
