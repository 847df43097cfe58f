"""The Content-Security-Policy header every page is sent with.

Replies are sanitized (office/markdown.py, nh3) before they reach a page, so this is the second
wall: should something slip through, the browser still runs no script but the office's own
files, sends nothing to another site and lets no other site frame the page. The pages use no
inline script and no inline event handler; inline style attributes stay allowed (templates
colour avatars and size bars with them).
"""

from __future__ import annotations

POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "connect-src 'self'",  # fetches and the websockets, to this host and port only
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", POLICY)
        return response
