"""metrics.csv holds no cell a spreadsheet would run as a formula: metric keys come from
member names and, on a resume, from the league database (which a crafted file controls)."""

import csv

import pytest

from populations.loggers import CSVLogger, LoggerConfig, csv_cell, csv_key

CRAFTED = ['=HYPERLINK("http://evil.example","x")', "+cmd|' /C calc'!A0", "-2+3",
           "@SUM(A1:A9)", "\t=1+1", "\r=1+1", "'=already quoted"]
PLAIN = ["charts/return", "nash_conv/main", "-5", "+1.5e3", ".5", "it's"]


def _rows(path):
    with path.open(newline="") as fh:
        return list(csv.reader(fh))[1:]


@pytest.mark.parametrize("key", CRAFTED)
def test_formula_cells_are_quoted_and_read_back(key):
    assert csv_cell(key) == "'" + key
    assert csv_key(csv_cell(key)) == key


@pytest.mark.parametrize("key", PLAIN)
def test_plain_cells_and_numbers_stay_as_they_are(key):
    assert csv_cell(key) == key and csv_key(key) == key


def test_metrics_csv_quotes_crafted_keys_keeps_numbers_and_resumes(tmp_path):
    log = CSVLogger(tmp_path, LoggerConfig(), {})
    log.log(1, {k: -1.5 for k in CRAFTED + PLAIN})
    log.log(2, {CRAFTED[0]: 2.0})
    log.close()
    rows = _rows(tmp_path / "metrics.csv")
    keys = [r[1] for r in rows]
    assert keys[:len(CRAFTED)] == ["'" + k for k in CRAFTED]
    assert keys[len(CRAFTED):len(CRAFTED) + len(PLAIN)] == PLAIN
    assert all(r[2] in ("-1.5", "2.0") for r in rows)  # a negative value is a number
    # a resumed run replaying step 1 writes nothing twice; dropping step 2 keeps step 1
    again = CSVLogger(tmp_path, LoggerConfig(), {})
    again.log(1, {k: -1.5 for k in CRAFTED})
    again.drop_after(1)
    again.log(2, {CRAFTED[1]: 3.0})
    again.close()
    rows = _rows(tmp_path / "metrics.csv")
    assert len(rows) == len(CRAFTED) + len(PLAIN) + 1
    assert rows[-1] == ["2", "'" + CRAFTED[1], "3.0"]


def test_an_older_files_unquoted_keys_are_quoted_when_rewritten(tmp_path):
    (tmp_path / "metrics.csv").write_text('step,key,value\r\n1,=1+1,0.5\r\n2,x,1.0\r\n')
    log = CSVLogger(tmp_path, LoggerConfig(), {})
    log.log(1, {"=1+1": 0.5})  # already there (unquoted): not written again
    log.drop_after(1)
    log.close()
    assert _rows(tmp_path / "metrics.csv") == [["1", "'=1+1", "0.5"]]


def test_a_kill_inside_a_quoted_key_holding_a_newline_is_repaired(tmp_path):
    """The cut falls inside a quoted field: the record is dropped, not left open to swallow
    every row appended after it."""
    (tmp_path / "metrics.csv").write_text('step,key,value\r\n1,a,1.0\r\n2,"member\n',
                                          newline="")
    log = CSVLogger(tmp_path, LoggerConfig(), {})
    log.log(2, {"b": 3.0, "member\nx": 4.0})
    log.close()
    assert _rows(tmp_path / "metrics.csv") == [["1", "a", "1.0"], ["2", "b", "3.0"],
                                               ["2", "member\nx", "4.0"]]
    again = CSVLogger(tmp_path, LoggerConfig(), {})  # complete: nothing cut, nothing twice
    again.log(2, {"member\nx": 4.0})
    again.close()
    assert len(_rows(tmp_path / "metrics.csv")) == 3


def test_a_stray_quote_early_in_the_file_keeps_every_row(tmp_path):
    """An unbalanced quote far from the end is no cut record: nothing after it is dropped
    (and the walk back is bounded, not one count per line)."""
    rows = "".join(f"{s},k{s},1.0\r\n" for s in range(2, 3000))
    (tmp_path / "metrics.csv").write_text('step,key,value\r\n1,a"b,1.0\r\n' + rows,
                                          newline="")
    CSVLogger(tmp_path, LoggerConfig(), {}).close()
    text = (tmp_path / "metrics.csv").read_text()
    assert text.endswith("2999,k2999,1.0\n") and text.count("\n") == 3000
