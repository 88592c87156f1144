"""who holds a track's claim (host, pid and start), so a dead holder is seen at once

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("audio_tracks") as batch:
        batch.add_column(sa.Column("claimed_by", sa.String(length=300), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("audio_tracks") as batch:
        batch.drop_column("claimed_by")
