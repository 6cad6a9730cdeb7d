"""The history's tables (SQLAlchemy Core), as the newest migration leaves
them (migrations/versions/): the code reads and writes through these, the
migrations make them.

A series is one (spec, kernel, point, device), named by `key`, a digest of
the four (a unique index on nullable columns would let NULLs repeat). A run
is one result of one commit; `digest` names its content with its commit and
branch, so adding the same results twice adds nothing.
"""
from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

series = sa.Table(
    "series", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("key", sa.String(64), nullable=False, unique=True),
    sa.Column("spec", sa.Text),
    sa.Column("kernel", sa.Text),
    sa.Column("point", sa.Text, nullable=False),        # JSON, keys sorted
    sa.Column("device", sa.Text, nullable=False),
)

runs = sa.Table(
    "runs", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("digest", sa.String(64), nullable=False, unique=True),
    sa.Column("series_id", sa.Integer, sa.ForeignKey("series.id", ondelete="CASCADE"),
              nullable=False, index=True),
    sa.Column("commit", sa.String(64), nullable=False),
    sa.Column("branch", sa.Text, nullable=False),
    sa.Column("commit_date", sa.DateTime, nullable=False),     # UTC
    sa.Column("added_at", sa.DateTime, nullable=False),        # UTC
    sa.Column("source", sa.Text, nullable=False),              # the results file's name
    sa.Column("status", sa.Text),
    sa.Column("exit_code", sa.Integer, nullable=False),
    sa.Column("check_passed", sa.Boolean),
    sa.Column("median_us", sa.Float),
    sa.Column("min_us", sa.Float),
    sa.Column("max_us", sa.Float),
    sa.Column("p10_us", sa.Float),
    sa.Column("p90_us", sa.Float),
    sa.Column("noise", sa.Float),               # relative standard error of the median
    sa.Column("processes", sa.Integer, nullable=False),
    sa.Column("values_us", sa.Text),            # JSON: process medians, else samples
    sa.Column("sm_clock_mhz", sa.Float),
    sa.Column("energy_j", sa.Float),            # joules per launch
    sa.Column("watts", sa.Float),
    sa.Index("runs_by_branch_date", "branch", "commit_date"),
)
