"""each phrase keeps its words, with their times, for the JSON transcript; each track the
warnings its transcription gave

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("phrases") as batch:
        batch.add_column(sa.Column("words", sa.JSON(), nullable=True))
    with op.batch_alter_table("audio_tracks") as batch:
        batch.add_column(sa.Column("warnings", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("audio_tracks") as batch:
        batch.drop_column("warnings")
    with op.batch_alter_table("phrases") as batch:
        batch.drop_column("words")
