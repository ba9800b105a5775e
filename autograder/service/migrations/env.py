"""Alembic's environment for the course service's database (autograder.service.db.migrate runs it).

May import: alembic, autograder.service.db.
"""
from alembic import context

from autograder.service import db

config = context.config
url = config.get_main_option("sqlalchemy.url")
if context.is_offline_mode():
    context.configure(url=url, target_metadata=db.metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    with db.engine(url).connect() as connection:
        context.configure(connection=connection, target_metadata=db.metadata)
        with context.begin_transaction():
            context.run_migrations()
