"""A database URL as `history --db` and `tune --storage` take it: read once
(a URL SQLAlchemy cannot read is one line naming the flag), a bare
`postgresql://` given the PostgreSQL driver that is installed, and never
echoed with its secrets (the password of its user part, every query
parameter that looks like one) in a message or a report.

SQLAlchemy 2.0 opens a bare `postgresql://` with psycopg2, 2.1 with psycopg
(3); the extras install psycopg, and either works where it is the one there.
"""
from __future__ import annotations

import re
from urllib.parse import unquote

from .errors import UsageError

# SQLAlchemy's PostgreSQL drivers that a bare postgresql:// may mean, preferred first.
POSTGRES_DRIVERS = ("psycopg", "psycopg2")
# What pip installs for a driver module (the module's own name otherwise).
_PIP_NAMES = {"psycopg": "'psycopg[binary]'", "psycopg2": "psycopg2-binary",
              "MySQLdb": "mysqlclient", "pymysql": "PyMySQL", "cx_Oracle": "oracledb",
              "oracledb": "oracledb", "pyodbc": "pyodbc", "pymssql": "pymssql"}

# `scheme://user:PASSWORD@`, to the authority's last @ (SQLAlchemy ends the password
# at the first: an @ typed unencoded in a password is hidden whole all the same).
_USERINFO = re.compile(r"^([A-Za-z][\w+.-]*://[^:/@?#]*:)([^/?#]*)(@)")
# A query parameter whose name says it holds a secret (password, sslpassword, token...).
_SECRET_PARAMETER = re.compile(
    r"([?&][^=&#]*(?:pass|pwd|secret|token|key|auth|cred)[^=&#]*=)([^&#]*)", re.IGNORECASE)


def shown(url: str) -> str:
    """The URL as given, each secret in it replaced by ***."""
    url = _USERINFO.sub(lambda m: m[1] + ("***" if m[2] else "") + m[3], url)
    return _SECRET_PARAMETER.sub(lambda m: m[1] + ("***" if m[2] else ""), url)


def hide_secrets(text: str, url: str) -> str:
    """`text` (a driver's message, say) with the URL's secrets replaced by ***,
    wherever they appear in it, as typed or decoded."""
    found = [m[2] for m in [_USERINFO.match(url)] if m] + \
        [m[2] for m in _SECRET_PARAMETER.finditer(url)]
    secrets = {s for value in found for s in (value, unquote(value)) if s}
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def first_line(exc: BaseException, url: str) -> str:
    """An error's first line (the driver's own where SQLAlchemy wraps one), no secret in it."""
    text = str(getattr(exc, "orig", None) or exc).strip()
    return hide_secrets(text.splitlines()[0] if text else type(exc).__name__, url)


def resolved(url: str, flag: str) -> str:
    """The URL SQLAlchemy is to open: as given, but a bare `postgresql://`
    names the PostgreSQL driver that is installed. UsageError naming `flag`
    for a URL SQLAlchemy cannot read (a port that is not a number) or a
    PostgreSQL URL without any driver."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError) as exc:
        raise UsageError(f"{flag} {shown(url)}: not a database URL "
                         f"({first_line(exc, url)})") from None
    if parsed.drivername != "postgresql":
        return url
    for driver in POSTGRES_DRIVERS:
        try:
            __import__(driver)
        except ImportError:
            continue
        return re.sub(r"^postgresql(?=://)", f"postgresql+{driver}", url, flags=re.IGNORECASE)
    raise UsageError(f"{flag} {shown(url)}: PostgreSQL needs a driver and none is installed: "
                     f"pip install {_PIP_NAMES['psycopg']}")


def driver_missing(url: str, flag: str, exc: ImportError) -> UsageError:
    """The error for a URL whose driver (`postgresql+psycopg2://`) is not installed."""
    module = (exc.name or str(exc)).split(".")[0]
    return UsageError(f"{flag} {shown(url)}: its database driver is missing ({module}): "
                      f"pip install {_PIP_NAMES.get(module, module)}")
