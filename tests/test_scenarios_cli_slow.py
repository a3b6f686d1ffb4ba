"""`moralsim scenarios check` on the core pack with the real sentence encoder."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from moralsim.cli import app

pytestmark = pytest.mark.slow


def test_core_pack_check_passes_with_embeddings() -> None:
    result = CliRunner().invoke(app, ["scenarios", "check", "core"], terminal_width=200)
    assert result.exit_code == 0, result.output[-3000:]
    assert "pack OK" in result.output
    for needle in (
        "questions by split",
        "questions by foundation",
        "questions by consensus",
        "safety RoTs",
    ):
        assert needle in result.output
    assert "embedding checks skipped" not in result.output
