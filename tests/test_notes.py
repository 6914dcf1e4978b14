"""specnb.notes: one note type for every layer, a stable ``code`` beside its message."""

import dataclasses

import pytest

from specnb.notes import Note, codes, messages


def test_a_note_prints_its_message_and_is_matched_by_code():
    n = Note("kv-does-not-fit", "the KV cache does not fit at batch 64")
    assert str(n) == "the KV cache does not fit at batch 64"
    assert n == Note("kv-does-not-fit", "the KV cache does not fit at batch 64")
    with pytest.raises(dataclasses.FrozenInstanceError):
        n.code = "other"


def test_codes_and_messages_keep_the_order():
    notes = [Note("b-code", "second thing"), Note("a-code", "first thing")]
    assert codes(notes) == ["b-code", "a-code"]
    assert messages(notes) == ["second thing", "first thing"]
    assert codes([]) == messages([]) == []
