"""memory evidence

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "evidence",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("ext_id", sa.String(length=200), nullable=False),
        sa.Column("speaker", sa.String(length=200), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("conversation", sa.String(length=200), nullable=False),
        sa.Column("session", sa.String(length=200), nullable=False),
        sa.Column("t", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("seq"),
        sa.UniqueConstraint("ext_id"),
    )


def downgrade() -> None:
    op.drop_table("evidence")
