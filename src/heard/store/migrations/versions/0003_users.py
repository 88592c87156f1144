"""users, tokens, and an owner for meetings and evidence

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None
NAMES = {"uq": "%(table_name)s_%(column_0_name)s_key"}


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("digest"),
    )
    op.create_index("ix_api_tokens_user_id", "api_tokens", ["user_id"])
    with op.batch_alter_table("meetings") as batch:
        batch.add_column(
            sa.Column("owner", sa.String(length=36), nullable=False, server_default="")
        )
        batch.create_index("ix_meetings_owner", ["owner"])
    # 0002's unique(ext_id) is unnamed on SQLite; name it as PostgreSQL does to drop it
    with op.batch_alter_table("evidence", naming_convention=NAMES) as batch:
        batch.add_column(
            sa.Column("owner", sa.String(length=36), nullable=False, server_default="")
        )
        batch.drop_constraint("evidence_ext_id_key", type_="unique")
        batch.create_unique_constraint("uq_evidence_owner_ext_id", ["owner", "ext_id"])
        batch.create_index("ix_evidence_owner", ["owner"])


def downgrade() -> None:
    with op.batch_alter_table("evidence") as batch:
        batch.drop_index("ix_evidence_owner")
        batch.drop_constraint("uq_evidence_owner_ext_id", type_="unique")
        batch.create_unique_constraint("evidence_ext_id_key", ["ext_id"])
        batch.drop_column("owner")
    with op.batch_alter_table("meetings") as batch:
        batch.drop_index("ix_meetings_owner")
        batch.drop_column("owner")
    op.drop_index("ix_api_tokens_user_id", table_name="api_tokens")
    op.drop_table("api_tokens")
    op.drop_table("users")
