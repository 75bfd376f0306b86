"""docs/postfix.md prints the files of deploy/postfix and deploy/rspamd that an operator
installs (docs/deploy.md) and the Postfix tests run: each block is its file, unchanged."""

from __future__ import annotations

import pytest

from tests.postfix import CONFIG_FILES, config_file, doc_block


@pytest.mark.parametrize("title", sorted(CONFIG_FILES))
def test_each_printed_block_is_its_file(title: str) -> None:
    assert doc_block(title) == config_file(title)
