"""A trial's final.json carries its sha256: edited, damaged or cut short, it is named and not used."""

import json
import logging

from yahtzee_lightning.study.records import final_text, read_final


def test_final_json_edited_or_truncated_is_named_and_not_used(tmp_path, caplog):
    path = tmp_path / "final.json"
    record = {"mean": 50.8, "games": 100, "optimal": {"mean": 254.5}}
    path.write_text(final_text(record))
    assert read_final(path) == record
    for damaged in (path.read_text().replace("50.8", "75.5"), path.read_text()[:20]):
        path.write_text(damaged)
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            assert read_final(path) is None
        assert str(path) in caplog.text and "runs again" in caplog.text and "\n" not in caplog.text.strip()
    path.write_text(json.dumps(record))  # written before digests: used, with a warning
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert read_final(path) == record
    assert "carries no sha256" in caplog.text
    assert read_final(tmp_path / "absent.json") is None
