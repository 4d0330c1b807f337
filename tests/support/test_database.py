"""support/database.py's own parts that need no database: where it is shown in a message."""

import pytest

from seq2seq.support.database import shown


@pytest.mark.parametrize(
    "where, said",
    [
        ("postgresql://u:secret@h:5432/db", "postgresql://u:***@h:5432/db"),
        ("postgresql://u:p%40ss%3A@h/db", "postgresql://u:***@h/db"),  # @ and : encoded
        ("postgres://:pw@h/db", "postgres://:***@h/db"),
        ("postgresql://h/db?user=u&password=sec&sslmode=require",
         "postgresql://h/db?user=u&password=***&sslmode=require"),
        ("postgresql://u@h/db", "postgresql://u@h/db"),  # no password: as it is
        ("runs/keys.db", "runs/keys.db"),
    ],
)  # fmt: skip
def test_a_urls_password_is_never_shown(where, said):
    assert shown(where) == said
