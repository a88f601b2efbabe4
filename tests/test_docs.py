"""The generated documentation is what the catalogs say now."""

import importlib.util

from conftest import ROOT


def test_generated_docs_are_current():
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    gen_docs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen_docs)
    for name, text in gen_docs.pages().items():
        committed = (ROOT / "docs" / name).read_text(encoding="utf-8")
        assert committed == text, f"docs/{name} is stale: run python scripts/gen_docs.py"
