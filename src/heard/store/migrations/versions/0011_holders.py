"""the leases of the processes that hold runs and claims: each renews its own, so a holder
on another host, or one that lived through a store outage, can be judged by the store alone

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "holders",
        sa.Column("holder", sa.String(length=300), primary_key=True),
        sa.Column("renewed_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("holders")
