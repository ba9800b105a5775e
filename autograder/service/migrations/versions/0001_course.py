"""The course service's first schema: users, tokens, assignments, commits, predictions, reports.

Revision ID: 0001
Revises:

May import: alembic, sqlalchemy.
"""
from alembic import op
import sqlalchemy as sa

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("users",
                    sa.Column("name", sa.String(100), primary_key=True),
                    sa.Column("role", sa.String(10), nullable=False),
                    sa.Column("created", sa.DateTime(timezone=True), nullable=False))
    op.create_table("tokens",
                    sa.Column("digest", sa.String(64), primary_key=True),
                    sa.Column("name", sa.String(100), sa.ForeignKey("users.name"), nullable=False, index=True),
                    sa.Column("created", sa.DateTime(timezone=True), nullable=False))
    op.create_table("assignments",
                    sa.Column("id", sa.String(100), primary_key=True),
                    sa.Column("key", sa.Text, nullable=False),
                    sa.Column("digest", sa.String(16), nullable=False),
                    sa.Column("uploaded", sa.DateTime(timezone=True), nullable=False))
    op.create_table("commits",
                    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
                    sa.Column("assignment", sa.String(100), nullable=False),
                    sa.Column("student", sa.String(100), nullable=False),
                    sa.Column("exercise", sa.String(100), nullable=False),
                    sa.Column("record", sa.Text, nullable=False),
                    sa.Column("committed", sa.DateTime(timezone=True), nullable=False),
                    sa.UniqueConstraint("assignment", "student", "exercise", name="one_commit_per_exercise"))
    op.create_table("predictions",
                    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
                    sa.Column("assignment", sa.String(100), nullable=False),
                    sa.Column("student", sa.String(100), nullable=False, index=True),
                    sa.Column("exercise", sa.String(100), nullable=False),
                    sa.Column("values", sa.Text, nullable=False),
                    sa.Column("received", sa.DateTime(timezone=True), nullable=False),
                    sa.Column("kind", sa.String(12), nullable=False),
                    sa.Column("after_reveal", sa.Boolean, nullable=False))
    op.create_table("reports",
                    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
                    sa.Column("assignment", sa.String(100), nullable=False),
                    sa.Column("student", sa.String(100), nullable=False, index=True),
                    sa.Column("exercise", sa.String(100), nullable=False),
                    sa.Column("report", sa.Text, nullable=False),
                    sa.Column("made", sa.DateTime(timezone=True), nullable=False),
                    sa.Column("revealed", sa.Boolean, nullable=False))


def downgrade() -> None:
    for table in ("reports", "predictions", "commits", "assignments", "tokens", "users"):
        op.drop_table(table)
