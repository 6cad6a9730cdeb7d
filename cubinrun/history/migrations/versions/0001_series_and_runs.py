"""The first schema: series and their runs. A migration is frozen as written:
schema.py says what the tables are now and changes with the next migration;
this file keeps saying what version 0001 made.

Revision ID: 0001
Revises:
"""
import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "series",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("key", sa.String(64), nullable=False, unique=True),
        sa.Column("spec", sa.Text),
        sa.Column("kernel", sa.Text),
        sa.Column("point", sa.Text, nullable=False),
        sa.Column("device", sa.Text, nullable=False),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("digest", sa.String(64), nullable=False, unique=True),
        sa.Column("series_id", sa.Integer, sa.ForeignKey("series.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("commit", sa.String(64), nullable=False),
        sa.Column("branch", sa.Text, nullable=False),
        sa.Column("commit_date", sa.DateTime, nullable=False),
        sa.Column("added_at", sa.DateTime, nullable=False),
        sa.Column("source", sa.Text, nullable=False),
        sa.Column("status", sa.Text),
        sa.Column("exit_code", sa.Integer, nullable=False),
        sa.Column("check_passed", sa.Boolean),
        sa.Column("median_us", sa.Float),
        sa.Column("min_us", sa.Float),
        sa.Column("max_us", sa.Float),
        sa.Column("p10_us", sa.Float),
        sa.Column("p90_us", sa.Float),
        sa.Column("noise", sa.Float),
        sa.Column("processes", sa.Integer, nullable=False),
        sa.Column("values_us", sa.Text),
        sa.Column("sm_clock_mhz", sa.Float),
        sa.Column("energy_j", sa.Float),
        sa.Column("watts", sa.Float),
    )
    op.create_index("ix_runs_series_id", "runs", ["series_id"])
    op.create_index("runs_by_branch_date", "runs", ["branch", "commit_date"])


def downgrade() -> None:
    op.drop_table("runs")
    op.drop_table("series")
