"""A hand-in names the hand-in it follows (the student's last one of the assignment, or 0), once: two hand-ins of one
student that arrive at once, at two service processes, cannot both follow the same one, so the same notebook is
never kept twice.

Revision ID: 0003
Revises: 0002

May import: alembic, sqlalchemy.
"""
from alembic import op
import sqlalchemy as sa

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("handins", sa.Column("follows", sa.Integer, nullable=False, server_default="0"))
    h = sa.table("handins", sa.column("id", sa.Integer), sa.column("assignment", sa.String),
                 sa.column("student", sa.String), sa.column("follows", sa.Integer))
    conn = op.get_bind()
    last: dict[tuple[str, str], int] = {}
    for row in conn.execute(sa.select(h.c.id, h.c.assignment, h.c.student).order_by(h.c.id)).all():
        before = last.get((row.assignment, row.student), 0)
        if before:
            conn.execute(h.update().where(h.c.id == row.id).values(follows=before))
        last[(row.assignment, row.student)] = row.id
    op.create_index("one_handin_after_another", "handins", ["assignment", "student", "follows"], unique=True)


def downgrade() -> None:
    op.drop_index("one_handin_after_another", "handins")
    with op.batch_alter_table("handins") as batch:
        batch.drop_column("follows")
