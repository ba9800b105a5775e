"""Overrides: staff's score for one check of one student, with who, when, the score before and why (append-only).

Revision ID: 0005
Revises: 0004

May import: alembic, sqlalchemy.
"""
from alembic import op
import sqlalchemy as sa

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("overrides",
                    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
                    sa.Column("assignment", sa.String(100), nullable=False),
                    sa.Column("student", sa.String(100), nullable=False),
                    sa.Column("check_id", sa.String(200), nullable=False),
                    sa.Column("score", sa.Float, nullable=True),
                    sa.Column("before", sa.Float, nullable=True),
                    sa.Column("why", sa.Text, nullable=False),
                    sa.Column("who", sa.String(100), nullable=False),
                    sa.Column("made", sa.DateTime(timezone=True), nullable=False),
                    sa.Column("check_digest", sa.String(64), nullable=False),
                    sa.Column("handin", sa.Integer, nullable=True))
    op.create_index("overrides_of_assignment", "overrides", ["assignment", "student"])


def downgrade() -> None:
    op.drop_index("overrides_of_assignment", "overrides")
    op.drop_table("overrides")
