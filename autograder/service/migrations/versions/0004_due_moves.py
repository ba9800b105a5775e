"""A due time moved earlier: the due times the service last saw (to tell a change from a restart), and a note in the
history of each hand-in the change made late or later.

Revision ID: 0004
Revises: 0003

May import: alembic, sqlalchemy.
"""
from alembic import op
import sqlalchemy as sa

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("deadlines_seen",
                    sa.Column("assignment", sa.String(100), primary_key=True),
                    sa.Column("student", sa.String(100), primary_key=True),
                    sa.Column("due", sa.DateTime(timezone=True), nullable=False))
    op.create_table("handin_notes",
                    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
                    sa.Column("handin", sa.Integer, sa.ForeignKey("handins.id"), nullable=False, index=True),
                    sa.Column("made", sa.DateTime(timezone=True), nullable=False),
                    sa.Column("change", sa.String(120), nullable=False),
                    sa.Column("text", sa.Text, nullable=False),
                    sa.UniqueConstraint("handin", "change", name="one_note_per_change"))


def downgrade() -> None:
    op.drop_table("handin_notes")
    op.drop_table("deadlines_seen")
