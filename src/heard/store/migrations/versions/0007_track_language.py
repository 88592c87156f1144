"""each track's language: asked for by the user, and given or detected with its probability

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("audio_tracks") as batch:
        batch.add_column(sa.Column("language_asked", sa.String(length=16), nullable=True))
        batch.add_column(sa.Column("language", sa.String(length=16), nullable=True))
        batch.add_column(sa.Column("language_probability", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("audio_tracks") as batch:
        batch.drop_column("language_probability")
        batch.drop_column("language")
        batch.drop_column("language_asked")
