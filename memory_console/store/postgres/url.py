"""PostgreSQL stores' URLs: which locations name one, how every message shows one (without its
passwords), and the form libpq reads."""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from memory_console.store.errors import StoreError

URL_SCHEMES = ("postgresql", "postgres")

# A location that starts as a URL does: a scheme, ':' and, as a URL has them, '//'.
URL_START = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):(//)?")
# A password among a URL's parameters (password=, sslpassword=, in any case): it is left out
# with everything after it, since an unencoded '&' in it would make its tail look like
# another parameter.
PASSWORD_PARAMETER = re.compile(r"[?&][^?&=#]*password=", re.IGNORECASE)
# A password in a connection string of keywords (host=... password=...).
PASSWORD_KEYWORD = re.compile(r"\bpassword\s*=", re.IGNORECASE)
HIDDEN = "***"  # what a hidden password is shown as
URL_FORM = "postgresql://[user@]host[:port]/database[?parameter=value&...]"


def is_url(location: object) -> bool:
    """Whether --db (or a setting) names a PostgreSQL database rather than a file: its scheme
    is postgresql or postgres, in any case, with or without a driver (postgresql+psycopg)."""
    if not isinstance(location, str):
        return False
    start = URL_START.match(location)
    return start is not None and start.group(1).lower().split("+", 1)[0] in URL_SCHEMES


def shown_url(location: object) -> str:
    """The store as every message, file and banner names it: a file's path as it is; a URL
    (of any scheme, however malformed) without its password, whether given as
    user:password@ or as a password parameter, so that the URL shown still opens the store
    with the password given as PostgreSQL clients take it (PGPASSWORD, ~/.pgpass). When the
    URL cannot be read for sure, more is left out rather than less."""
    text = str(location)
    start = URL_START.match(text)
    if start is None or not (start.group(2) or is_url(text)):
        keyword = PASSWORD_KEYWORD.search(text)
        return text if keyword is None else text[: keyword.end()] + HIDDEN
    rest = text[start.end() :]
    parameter = PASSWORD_PARAMETER.search(rest)
    if parameter is not None:
        rest = rest[: parameter.start()]
    # user:password@host: a password may hold an unencoded '@', so the last '@' ends it.
    at = rest.rfind("@")
    colon = rest.find(":", 0, at) if at > 0 else -1
    if colon >= 0:
        rest = rest[:colon] + rest[at:]
    return text[: start.end()] + rest


def url_secrets(url: str) -> list[str]:
    """Every password `url` holds (user:password@, password parameters), as written and
    percent-decoded, longest first: what a client library's message must not repeat."""
    start = URL_START.match(url)
    if start is None:
        return []
    rest = url[start.end() :]
    found: list[str] = []
    parameters = list(PASSWORD_PARAMETER.finditer(rest))
    for parameter in parameters:
        value = rest[parameter.end() :]
        found += [value, value.split("&", 1)[0]]
    if parameters:
        rest = rest[: parameters[0].start()]
    at = rest.rfind("@")
    colon = rest.find(":", 0, at) if at > 0 else -1
    if colon >= 0:
        found.append(rest[colon + 1 : at])
    secrets = {text for value in found for text in (value, unquote(value)) if text}
    return sorted(secrets, key=len, reverse=True)


def without_secrets(message: str, url: str) -> str:
    """A client library's message about `url` with the URL as shown and its passwords hidden
    (libpq repeats a URL, or a part of it, when it cannot read it)."""
    message = message.replace(url, shown_url(url))
    for secret in url_secrets(url):
        message = message.replace(secret, HIDDEN)
    return message


def foreign_location(location: str) -> str | None:
    """Why `location` (--db, a setting, a copy's destination) names no store although it
    looks like a database's address: another scheme's URL, or a connection string of
    keywords. It is told without the location, which may hold a password."""
    start = URL_START.match(location)
    if start is not None and start.group(2) and not is_url(location):
        return (
            f"{start.group(1)}:// names no store: a store is a file or a PostgreSQL database "
            f"({URL_FORM})"
        )
    if not is_url(location) and PASSWORD_KEYWORD.search(location):
        return (
            "a connection string of keywords names no store: give a file or a PostgreSQL URL "
            f"({URL_FORM}), its password in PGPASSWORD or ~/.pgpass"
        )
    return None


def client_url(url: str) -> str:
    """The URL as libpq reads it: the scheme in lower case and without a driver's name.
    StoreError, naming the URL as shown, when it is no URL a client can read, or when libpq
    would read it otherwise than `shown_url` does (a password's unencoded '@' or '/'
    would make part of it the host, the port or the database, and print it)."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    shown = shown_url(url)
    start = URL_START.match(url)
    if start is None or not start.group(2):
        raise StoreError(f"{shown}: not a PostgreSQL URL ({URL_FORM})")
    rest = url[start.end() :]
    # libpq's user information ends at the first '@' or '/'; what follows, up to the
    # parameters, is the host, the port and the database, which hold no '@'.
    ends = [index for index in (rest.find("@"), rest.find("/")) if index >= 0]
    after = rest[min(ends) + 1 :] if ends and rest[min(ends)] == "@" else rest
    if "@" in after.split("?", 1)[0]:
        raise StoreError(
            f"{shown}: the user or password holds an '@' or '/' that is not percent-encoded "
            "(write '@' as %40, '/' as %2F); nothing was opened"
        )
    host = after.split("/", 1)[0].split("?", 1)[0]
    if host.count("[") != host.count("]"):
        raise StoreError(f"{shown}: an IPv6 host's '[' has no ']'; nothing was opened")
    readable = "postgresql://" + rest
    try:
        conninfo_to_dict(readable)
    except psycopg.Error as error:
        # libpq's own words are not repeated: they quote the part it could not read, which
        # may be a piece of the password.
        raise StoreError(
            f"{shown}: not a PostgreSQL URL a client can read ({URL_FORM}; a space, '%' or "
            "other special character in the user or password is percent-encoded)"
        ) from error
    return readable


def database_name(url: str) -> str:
    """The database a URL names ("postgresql" when it names none), as a file name's stem."""
    return urlsplit(url).path.lstrip("/") or "postgresql"
