"""Hand-ins, their graded reports, and feedback releases.

Revision ID: 0002
Revises: 0001

May import: alembic, sqlalchemy.
"""
from alembic import op
import sqlalchemy as sa

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("handins",
                    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
                    sa.Column("assignment", sa.String(100), nullable=False),
                    sa.Column("student", sa.String(100), nullable=False, index=True),
                    sa.Column("received", sa.DateTime(timezone=True), nullable=False),
                    sa.Column("size", sa.Integer, nullable=False),
                    sa.Column("digest", sa.String(64), nullable=False),
                    sa.Column("notebook", sa.LargeBinary, nullable=False))
    op.create_table("graded",
                    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
                    sa.Column("handin", sa.Integer, sa.ForeignKey("handins.id"), nullable=False, index=True),
                    sa.Column("assignment", sa.String(100), nullable=False),
                    sa.Column("student", sa.String(100), nullable=False),
                    sa.Column("report", sa.Text, nullable=False),
                    sa.Column("made", sa.DateTime(timezone=True), nullable=False))
    op.create_table("feedback",
                    sa.Column("assignment", sa.String(100), primary_key=True),
                    sa.Column("released", sa.DateTime(timezone=True), nullable=False))


def downgrade() -> None:
    for table in ("feedback", "graded", "handins"):
        op.drop_table(table)
