"""What counts as a scratch file does not depend on where Python is installed (issue 29): a venv under
/tmp maps its libraries and PySpark's jars from /tmp, and those are installed files, not scratch."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.integration.load import files_outside


def test_files_mapped_from_the_python_installation_are_not_scratch_files(tmp_path: Path) -> None:
    install = f"{os.path.realpath(sys.base_prefix)}/"  # as if the installation lived under a scratch root
    assert files_outside(os.getpid(), tmp_path, roots=(install,)) == []


def test_a_file_opened_outside_the_folder_is_still_found(tmp_path: Path) -> None:
    scratch = tmp_path / "elsewhere.bin"
    with scratch.open("w"):
        found = files_outside(os.getpid(), tmp_path / "data", roots=(f"{os.path.realpath(tmp_path)}/",))
    assert found == [os.path.realpath(scratch)]
