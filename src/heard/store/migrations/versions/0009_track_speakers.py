"""a track can be a recording of several people: how many speakers, their names, and the
diarization once made

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("audio_tracks") as batch:
        batch.add_column(sa.Column("speakers", sa.String(length=8), nullable=True))
        batch.add_column(sa.Column("speaker_names", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("diarization", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("audio_tracks") as batch:
        batch.drop_column("diarization")
        batch.drop_column("speaker_names")
        batch.drop_column("speakers")
