"""The domain rule: a host name reduced to its registrable domain with the Public Suffix List.
Ingest applies it to stored domains; the API to domain parameters, which must match them.

After `normalise.normalise_domain`, every label must be an RFC 1123 host name label (letters,
digits, hyphens; Unicode labels must be IDNA-encodable), the last label must not be numeric (IP
addresses are not domains), and the name is reduced to its registrable domain with the list
bundled with `publicsuffixlist` (ICANN and private sections, unknown suffixes refused, never
fetched from the network): "old.reddit.com" -> "reddit.com"."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from publicsuffixlist import PSLFILE, PublicSuffixList, encode_idn

from service.store.normalise import normalise_domain

_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


@functools.cache
def _psl() -> PublicSuffixList:
    """The list bundled with the package; accept_unknown=False refuses made-up top-level domains
    ("intranet.corp").

    The same list the package builds by itself (a test compares them), built in a third of the
    time: left to itself the package IDNA-encodes every one of its ~10,000 rules, though only the
    few hundred with non-ASCII letters change; here those few get their encoded form as a rule
    of its own and the package is told not to encode."""
    lines = Path(PSLFILE).read_text(encoding="utf-8").splitlines()
    encoded = []
    for line in lines:
        rule = line.lower().split(" ")[0].rstrip()  # as the package reads a rule
        if rule.isascii() or rule.startswith("//"):
            continue
        name = encode_idn(rule.lstrip("!"))
        encoded.append("!" + name if rule.startswith("!") else name)
    return PublicSuffixList(lines + encoded, accept_unknown=False, accept_encoded_idn=False)


def registrable_domain(raw: str) -> str | None:
    """The registrable domain ingest would store for `raw` ("https://old.reddit.com/x" ->
    "reddit.com"), or None when ingest would reject it. For query parameters that must match
    stored domains."""
    return domain_verdict(raw)[0]


def domain_verdict(raw: str) -> tuple[str | None, str | None]:
    """(registrable domain, None) or (None, problem)."""
    host = normalise_domain(raw)
    if not host:
        return None, "is not a host name"
    if len(host) > 253:
        return None, "is longer than 253 characters"
    labels = host.split(".")
    for label in labels:
        if label.isascii():
            if not _LABEL.match(label):
                return None, "is not a host name"
        else:
            try:
                ascii_label = label.encode("idna").decode("ascii")
            except UnicodeError:
                return None, "is not a host name"
            if not _LABEL.match(ascii_label):
                return None, "is not a host name"
    if labels[-1].isdigit():
        return None, "is an IP address, not a domain"
    if len(labels) < 2:
        return None, "is not a registrable domain (no public suffix)"
    registrable = _psl().privatesuffix(host)
    if registrable is None:
        if _psl().publicsuffix(host) == host:
            return None, "is a public suffix, not a registrable domain"
        return None, "has no known public suffix"
    return registrable, None
