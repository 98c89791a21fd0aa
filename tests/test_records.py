"""results/records.py: the one record shape, checked once on reading, and the readers the views share."""
import pytest

from harness.results import ledger
from harness.results import records

SPEC = {"batchsize": 4, "qseqlen": 1, "kvseqlen": 1024, "seed": 4217}
STATS = {"runs": 3, "mean": 20000.0, "std": 10.0, "err": 5.0, "best": 19990.0, "worst": 20010.0}


def fresh(number=1, path="submissions/001_x.py", requirements=("torch",), finished="2026-11-29T10:00:00"):
    return records.new_record(
        source="local", submission=records.SubmissionInfo(number=number, path=path, sha256="ab",
                                                          requirements=list(requirements), optional=[],
                                                          numbered=True),
        mode="benchmark", cases="official", flush="fast",
        device=records.Device(name="NVIDIA H200", arch="sm_90", backend="cuda"), versions={"torch": "2.11"},
        status="pass", reason="", results=[{"spec": SPEC, "status": "pass", "message": "", "stats": STATS, "notes": {}, "accuracy": None}],
        warnings=[], started=finished, finished=finished)


def test_a_new_record_survives_the_ledger_unchanged():
    record = fresh()
    assert record["schema"] == records.SCHEMA_VERSION and len(record["run_id"]) == 32
    ledger.append(record)
    (read,) = records.load()
    assert read == record
    assert records.case_means(read) == {(4, 1, 1024): 20000.0}
    assert records.label(read) == "001_x" and records.identity(read) == 1
    assert records.group_key(read) == ("NVIDIA H200", "benchmark", "official", None)


def test_older_records_get_their_requirements_from_the_file_and_defaults_for_the_rest(tmp_path):
    (tmp_path / "submissions").mkdir()
    (tmp_path / "submissions" / "013_hip.py").write_text("from torch.utils.cpp_extension import load_inline\n"
                                                          "src = '#include <hip/hip_runtime.h>'\n"
                                                          "try:\n    import aiter\nexcept ImportError:\n"
                                                          "    aiter = None\n")
    old = {"submission": {"number": 13, "path": "submissions/013_hip.py", "sha256": "cd"}, "mode": "test",
           "device": {"name": "cpu (x86_64)"}, "status": "skip", "results": [{"spec": SPEC, "status": "skip"}]}
    (read,) = records.usable([old], root=tmp_path)
    assert (read["submission"]["requirements"], read["submission"]["optional"]) == (["hip", "torch"], ["aiter"])
    assert read["results"][0] == {"spec": SPEC, "status": "skip", "message": "", "stats": None, "notes": {},
                                  "accuracy": None}
    assert (read["flush"], read["reason"], read["warnings"], read["remote"], read["source"]) == ("none", "", [], None,
                                                                                                "local")


def test_malformed_records_are_left_out_once_with_one_warning():
    bad_spec = fresh()
    bad_spec["results"][0]["spec"] = {"batchsize": "four", "kvseqlen": 1024}
    unknown_source = dict(fresh(), source="elsewhere")
    with pytest.warns(records.MalformedRecordWarning, match="left out 3 malformed"):
        kept = records.usable([fresh(), {"submission": "not a dict"}, bad_spec, unknown_source])
    assert len(kept) == 1
