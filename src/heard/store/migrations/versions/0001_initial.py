"""meetings, participants, audio tracks, phrases

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "meetings",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("title", sa.String(length=500), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "status",
            sa.Enum(
                "pending",
                "complete",
                "partial",
                "failed",
                name="meeting_status",
                native_enum=False,
                create_constraint=True,
                length=16,
            ),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "participants",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("meeting_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.ForeignKeyConstraint(["meeting_id"], ["meetings.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("meeting_id", "name", name="uq_participant_name"),
    )
    with op.batch_alter_table("participants", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_participants_meeting_id"), ["meeting_id"], unique=False
        )

    op.create_table(
        "audio_tracks",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("meeting_id", sa.Uuid(), nullable=False),
        sa.Column("participant_id", sa.Uuid(), nullable=False),
        sa.Column("location", sa.Text(), nullable=False),
        sa.Column("channel", sa.Integer(), nullable=True),
        sa.Column("offset_s", sa.Float(), nullable=False),
        sa.Column(
            "status",
            sa.Enum(
                "recording",
                "pending",
                "transcribing",
                "done",
                "failed",
                name="track_status",
                native_enum=False,
                create_constraint=True,
                length=16,
            ),
            nullable=False,
        ),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("segments", sa.JSON(), nullable=True),
        sa.Column("transcriber", sa.String(length=200), nullable=True),
        sa.ForeignKeyConstraint(["meeting_id"], ["meetings.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["participant_id"], ["participants.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("audio_tracks", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_audio_tracks_meeting_id"), ["meeting_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_audio_tracks_participant_id"), ["participant_id"], unique=False
        )

    op.create_table(
        "phrases",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("meeting_id", sa.Uuid(), nullable=False),
        sa.Column("participant_id", sa.Uuid(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("start_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("end_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["meeting_id"], ["meetings.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["participant_id"], ["participants.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("meeting_id", "position", name="uq_phrase_position"),
    )
    with op.batch_alter_table("phrases", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_phrases_meeting_id"), ["meeting_id"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_phrases_participant_id"), ["participant_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("phrases", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_phrases_participant_id"))
        batch_op.drop_index(batch_op.f("ix_phrases_meeting_id"))

    op.drop_table("phrases")
    with op.batch_alter_table("audio_tracks", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_audio_tracks_participant_id"))
        batch_op.drop_index(batch_op.f("ix_audio_tracks_meeting_id"))

    op.drop_table("audio_tracks")
    with op.batch_alter_table("participants", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_participants_meeting_id"))

    op.drop_table("participants")
    op.drop_table("meetings")
