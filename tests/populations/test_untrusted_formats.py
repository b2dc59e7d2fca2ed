"""Containers a run reads are untrusted too: a torch file is a zip a crafted file may
compress (or overlap), a league database is a SQLite file that may carry code (views,
triggers, generated columns) run by every read. Each test crafts one and expects a
one-line refusal before anything is unpacked or run."""

import hashlib
import io
import sqlite3
import struct
import zipfile

import pytest
import torch

from marl.core import CheckpointError, PolicyLoadError, safe_torch_load
from marl.fileio import check_torch_zip
from populations.checkpoint import read_checkpoint
from populations.dashboard.data import DashboardData
from populations.db import LeagueDB, LeagueDBError


def _one_line(err: pytest.ExceptionInfo) -> str:
    text = str(err.value)
    assert "\n" not in text
    return text


def _deflated(state: dict) -> bytes:
    """``torch.save(state)`` with its tensor data deflated: 1 MiB of zeros takes ~1 KB,
    and ``torch.load`` inflates it (a 10 MB file claimed 10 GB the same way)."""
    buf = io.BytesIO()
    torch.save(state, buf)
    src = zipfile.ZipFile(buf)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for info in src.infolist():
            packed = "/data/" in info.filename
            z.writestr(info, src.read(info.filename),
                       compress_type=zipfile.ZIP_DEFLATED if packed else zipfile.ZIP_STORED)
    return out.getvalue()


def _refused_as_policy_and_checkpoint(tmp_path, data: bytes, match: str) -> None:
    """``data`` as a policy file and as a checkpoint with its hash recorded (the crafter
    writes that too): each refused in one line naming the file."""
    policy = tmp_path / "policy.pt"
    policy.write_bytes(data)
    with pytest.raises(PolicyLoadError, match=match) as err:
        safe_torch_load(policy, "policy", PolicyLoadError)
    assert str(policy) in _one_line(err)
    ckpt = tmp_path / "ckpt_000001.pt"
    ckpt.write_bytes(data)
    (tmp_path / "ckpt_000001.pt.sha256").write_text(
        f"{hashlib.sha256(data).hexdigest()}  {ckpt.name}\n")
    with pytest.raises(CheckpointError, match=match) as err:
        read_checkpoint(ckpt)
    assert str(ckpt) in _one_line(err)


def test_compressed_torch_files_are_refused_before_they_inflate(tmp_path):
    data = _deflated({"w": torch.zeros(2**20, dtype=torch.uint8)})
    assert len(data) < 2**20 // 100
    _refused_as_policy_and_checkpoint(tmp_path, data, "is compressed")


def test_overlapping_zip_entries_cannot_claim_more_than_the_file(tmp_path):
    """Entries of a zip may all point at the same stored bytes (an overlapping zip bomb):
    what they claim together is checked against the file's size."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("archive/data/0", b"\0" * 4096)
        first = z.filelist[0]
        for i in range(1, 64):  # 63 more directory entries naming the same bytes
            clone = zipfile.ZipInfo(f"archive/data/{i}", first.date_time)
            clone.header_offset, clone.file_size = first.header_offset, first.file_size
            clone.compress_size, clone.CRC = first.compress_size, first.CRC
            z.filelist.append(clone)
    with pytest.raises(ValueError, match="claim 262144 bytes, more than"):
        check_torch_zip(out.getvalue(), "crafted.pt")
    buf = io.BytesIO()
    torch.save({"w": torch.zeros(1000)}, buf)
    check_torch_zip(buf.getvalue(), "good.pt")  # what torch.save writes passes
    check_torch_zip(b"not a zip", "legacy.pt")  # left to torch.load to judge


def _with_decoy_directory(data: bytes) -> bytes:
    """``data`` (a zip) with a second copy of its central directory placed right before
    the end record, every entry in the copy "stored" at its compressed size. Python's
    zipfile reads the copy; torch's reader seeks to the offset the end record gives and
    reads the real one."""
    end = data.rfind(b"PK\x05\x06")
    offset, = struct.unpack_from("<L", data, end + 16)
    decoy = bytearray(data[offset:end])
    pos = 0
    while pos < len(decoy):
        packed, = struct.unpack_from("<L", decoy, pos + 20)
        struct.pack_into("<H", decoy, pos + 10, zipfile.ZIP_STORED)
        struct.pack_into("<L", decoy, pos + 24, packed)
        pos += 46 + sum(struct.unpack_from("<3H", decoy, pos + 28))
    return data[:end] + bytes(decoy) + data[end:]


def test_a_decoy_directory_cannot_hide_a_compressed_entry(tmp_path):
    """Review S2: a 205 KB file passed the check and allocated 200 MB in torch.load."""
    data = _with_decoy_directory(_deflated({"w": torch.zeros(2**20, dtype=torch.uint8)}))
    with zipfile.ZipFile(io.BytesIO(data)) as z:  # what Python's zipfile sees: harmless
        assert all(e.compress_type == zipfile.ZIP_STORED for e in z.infolist())
    assert torch.load(io.BytesIO(data), weights_only=True)["w"].numel() == 2**20  # inflated
    _refused_as_policy_and_checkpoint(tmp_path, data, "zip directory is malformed")


def test_zip_ness_is_decided_as_torch_decides(tmp_path):
    """Review S4: a zip64 locator claiming two disks made zipfile.is_zipfile raise
    BadZipFile past every handler (a traceback from the CLI); a legacy-format file whose
    tensor bytes held an end-record signature was refused though torch.load reads it."""
    locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, 0, 2)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 0, 0, 0, 0, 0)
    crafted = tmp_path / "policy.pt"
    crafted.write_bytes(b"PK\x03\x04" + bytes(100) + locator + end)
    with pytest.raises(PolicyLoadError, match="zip directory is malformed") as err:
        safe_torch_load(crafted, "policy", PolicyLoadError)
    _one_line(err)
    legacy = tmp_path / "legacy.pt"
    w = torch.tensor(list(b"PK\x05\x06" + bytes(range(1, 19))) + [7] * 40, dtype=torch.uint8)
    torch.save({"w": w}, legacy, _use_new_zipfile_serialization=False)
    assert torch.equal(safe_torch_load(legacy, "policy", PolicyLoadError)["w"], w)
    for new_format in (True, False):  # what torch.save writes, both formats, passes
        buf = io.BytesIO()
        torch.save({"w": torch.arange(5)}, buf, _use_new_zipfile_serialization=new_format)
        check_torch_zip(buf.getvalue(), "good.pt")


def _league_db(path):
    db = LeagueDB(path)
    run = db.create_run("r", "e", "g")
    db.add_member(run, "main", "mappo", ["player_0"])
    db.close()
    return path


CRAFTED = {
    "view": "ALTER TABLE members RENAME TO m; CREATE VIEW members AS "
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 9) "
            "SELECT m.* FROM m, c",  # the same with no bound hung every reader for good
    "trigger": "CREATE TRIGGER t AFTER INSERT ON metrics BEGIN "
               "UPDATE snapshots SET path = '/etc/passwd'; END",
    "generated column": "ALTER TABLE runs ADD COLUMN pad TEXT GENERATED ALWAYS AS "
                        "(printf('%.*c', 1000, 'x')) VIRTUAL",  # 10^9: a gigabyte per row
    "index": "CREATE INDEX by_name ON runs (name)",
}


@pytest.mark.parametrize("what", sorted(CRAFTED))
def test_league_databases_carrying_their_own_schema_are_refused(tmp_path, what):
    path = _league_db(tmp_path / "league.db")
    with sqlite3.connect(path) as conn:
        conn.executescript(CRAFTED[what])
    conn.close()
    for readonly in (True, False):  # the dashboard and a resumed run
        with pytest.raises(LeagueDBError, match="which selfplay does not create") as err:
            LeagueDB(path, readonly=readonly)
        assert str(path) in _one_line(err)
    (error,) = DashboardData([tmp_path]).runs()["errors"]
    assert "which selfplay does not create" in error["error"]


def _rewrite_schema(path, sql: str) -> None:
    """Run ``sql`` with sqlite_master writable: what a crafter can put in a file."""
    with sqlite3.connect(path) as conn:
        version = conn.execute("PRAGMA schema_version").fetchone()[0]
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute(sql)
        conn.execute(f"PRAGMA schema_version = {version + 1}")
    conn.close()


def test_only_analyze_statistics_tables_pass_as_statistics(tmp_path):
    """Review S1: every object named sqlite_stat* was skipped by the schema check, so a
    trigger so named ran on the next insert, and a sqlite_stat1 redefined with a generated
    column was evaluated as SQLite loaded the statistics (300 MB per row)."""
    trigger = _league_db(tmp_path / "trigger.db")
    _rewrite_schema(trigger, "INSERT INTO sqlite_master (type, name, tbl_name, rootpage, sql) "
                             "VALUES ('trigger', 'sqlite_stat_x', 'members', 0, 'CREATE TRIGGER "
                             "sqlite_stat_x BEFORE INSERT ON members BEGIN SELECT RAISE(ABORT, "
                             "''trigger ran''); END')")
    with pytest.raises(LeagueDBError, match="trigger 'sqlite_stat_x'.*does not create") as err:
        LeagueDB(trigger)
    _one_line(err)
    generated = _league_db(tmp_path / "generated.db")
    with sqlite3.connect(generated) as conn:
        conn.execute("ANALYZE")
    conn.close()
    _rewrite_schema(generated, "UPDATE sqlite_master SET sql = 'CREATE TABLE sqlite_stat1(tbl, "
                               "idx, stat2, stat AS (printf(''%.*c'', 2097152, ''x'')))' "
                               "WHERE name = 'sqlite_stat1'")
    with sqlite3.connect(generated) as conn:
        conn.execute("INSERT INTO sqlite_stat1 (tbl, idx, stat2) VALUES ('runs', NULL, '1')")
    conn.close()
    for readonly in (True, False):  # 2 MiB stands for 1 GB: over the cap until checked
        with pytest.raises(LeagueDBError, match="too big .*over 16 KiB: a crafted file") as err:
            LeagueDB(generated, readonly=readonly)
        assert str(generated) in _one_line(err)


def test_reading_a_schema_has_a_budget(tmp_path):
    """Review S6: under the length cap, a crafted sqlite_stat1's rows were still unbounded
    (20,000 rows of 1 MiB: 11 s CPU on every open, and the dashboard opens every request).
    Reading the schema, statistics included, may now take 100,000 SQLite steps (a league
    database's takes ~354): here 50,000 objects (views, stand-ins for any rows) exceed it."""
    path = _league_db(tmp_path / "league.db")
    _rewrite_schema(path, "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k "
                          "WHERE i < 50000) INSERT INTO sqlite_master (type, name, tbl_name, "
                          "rootpage, sql) SELECT 'view', 'v' || i, 'v' || i, 0, "
                          "'CREATE VIEW v' || i || ' AS SELECT 1' FROM k")
    for readonly in (True, False):
        with pytest.raises(LeagueDBError, match="interrupted .*over 100,000 steps") as err:
            LeagueDB(path, readonly=readonly)
        assert str(path) in _one_line(err)


def test_a_negative_schema_version_is_refused(tmp_path):
    """user_version -1 made the writer run the newest migration first, on a file without
    the tables it extends."""
    path = _league_db(tmp_path / "league.db")
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = -1")
    conn.close()
    with pytest.raises(LeagueDBError, match="schema version -1") as err:
        LeagueDB(path)
    _one_line(err)


def test_league_databases_selfplay_writes_still_open(tmp_path):
    """What a user may do to a good file keeps it readable: ANALYZE adds statistics tables."""
    path = _league_db(tmp_path / "league.db")
    with sqlite3.connect(path) as conn:
        conn.execute("ANALYZE")
    conn.close()
    db = LeagueDB(path, readonly=True)
    assert [m["name"] for m in db.members(1)] == ["main"]
    db.close()
    assert LeagueDB(tmp_path / "fresh.db").run_id("r") is None
