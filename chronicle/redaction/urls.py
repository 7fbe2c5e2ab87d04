"""Credentials inside URLs, masked wherever a setting's value is shown or stored (pure).

`LLM_URL=http://admin:pw@host/v1` is a legitimate way to reach a gateway behind basic auth, so the URL keeps
its credentials for the connection; every place that shows or stores it (`chronicle config`, banners,
`llm_calls.endpoint`, error messages, Prefect states) gets `http://admin:****@host/v1` instead.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

_USERINFO = re.compile(r"(?P<scheme>\b(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*+://)(?P<user>[^\s:/@\[\]]*)(?::(?P<pw>[^\s/@]*))?@")
MASK = "****"


def _masked(match: re.Match[str]) -> str:
    scheme, user, pw = match.group("scheme"), match.group("user"), match.group("pw")
    if pw is not None:
        return f"{scheme}{user}:{MASK}@" if pw else match.group(0)
    # `https://ghp_token@github.com`: a user part alone is a credential when it looks like a token.
    token = len(user) >= 16 and any(c.isdigit() for c in user) and any(c.isalpha() for c in user)
    return f"{scheme}{MASK}@" if token else match.group(0)


def mask_url_credentials(text: str) -> str:
    """`text` with the password (or token user) of every URL in it replaced by `****`."""
    return _USERINFO.sub(_masked, text) if "@" in text and "://" in text else text


def url_secrets(url: str | None) -> tuple[str, ...]:
    """The password of `url` (raw and percent-decoded), for scrubbing echoes of it from error bodies."""
    if not url or "@" not in url:
        return ()
    try:
        password = urlsplit(url.strip()).password
    except ValueError:
        return ()
    return tuple(dict.fromkeys(p for p in (password, unquote(password or "")) if p))
