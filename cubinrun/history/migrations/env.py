"""Alembic's entry: migrations run on the connection history/database.py
hands over (inside its transaction, under its lock), never on one of their own."""
from alembic import context

from cubinrun.history.database import VERSION_TABLE
from cubinrun.history.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, version_table=VERSION_TABLE,
                  render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
