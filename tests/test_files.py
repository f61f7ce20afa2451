"""bertlab/files.py's path checks (`path_to_read`, `path_to_write`) behind ModelDiff's and SparseAutoencoder's
save and load: a path that cannot name a file is one clear line, never os.lstat's bare errno (STYLE 18)."""

from __future__ import annotations

import pytest

from bertlab.files import path_to_read, path_to_write
from bertlab.inside.sae import SparseAutoencoder


def test_a_nul_character_in_a_path_is_named():
    # os.lstat said only "embedded null byte"
    with pytest.raises(ValueError, match=r"NUL character .* an autoencoder file needs a path without one"):
        path_to_read("a\x00b.safetensors", "an autoencoder file", "`sae.save(path)`")
    with pytest.raises(ValueError, match="NUL character"):
        SparseAutoencoder(8, 16, 2, 0).save("sae\x00.safetensors")


def test_a_file_used_as_a_folder_reads_as_no_file_there(tmp_path):
    # was a raw NotADirectoryError: [Errno 20] from os.lstat
    (tmp_path / "plain").write_text("x")
    with pytest.raises(FileNotFoundError, match=r"no autoencoder file at .*plain/x: pass the path `sae.save\(path\)`"):
        SparseAutoencoder.load(tmp_path / "plain" / "x")


def test_a_name_too_long_says_which_file_and_what_to_do(tmp_path):
    # was OSError: [Errno 36] File name too long: '<300 characters>'
    long = tmp_path / ("x" * 300)
    for call in (lambda: path_to_read(long, "a model-diff file", "`ModelDiff.save`"),
                 lambda: path_to_write(long, "a model-diff file")):
        with pytest.raises(OSError, match=r"a model-diff file cannot be at .*….*characters\): File name too long; "
                                          "pass another path") as e:
            call()
        assert len(str(e.value)) < 250 and "\n" not in str(e.value)
