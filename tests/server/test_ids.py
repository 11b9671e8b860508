"""Ids the server makes never begin with ``-``: an organizer types them on command lines."""

from __future__ import annotations

import string

from server.common.ids import new_id

URL_SAFE = set(string.ascii_letters + string.digits + "-_")


def test_ids_never_begin_with_a_dash_and_keep_their_length_and_alphabet() -> None:
    # One plain URL-safe id in 64 begins with "-": 20,000 of them would hold about 300.
    ids = [new_id(6) for _ in range(20_000)]
    assert not [i for i in ids if i.startswith("-")]
    assert {len(i) for i in ids} == {8}
    assert set("".join(ids)) == URL_SAFE  # "-" still appears, only never first
    assert len(set(ids)) > 19_990  # 48 random bits: a repeat among 20,000 is rare
    assert {len(new_id(8)) for _ in range(100)} == {11}
