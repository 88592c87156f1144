"""embeddings stored beside evidence, keyed by model

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "evidence_vectors",
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(length=100), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(["seq"], ["evidence.seq"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("seq", "model"),
    )


def downgrade() -> None:
    op.drop_table("evidence_vectors")
