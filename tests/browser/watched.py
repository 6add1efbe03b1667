"""A watched page: what a page did that a test must not allow.

Every page of the browser tests is one: a request to an origin other than the test server,
an error on the console, an uncaught error or an HTTP error fails the test that caused it.
A page kept for many tests (``tabs.SharedTab``, the reader-view tour) reports to each test
only what happened since it began (``mark`` / ``take_since``).
"""

from __future__ import annotations

import json

from served import record_other_origins

# Test contexts block the site's service worker (sw.js): it would precache the pages in every
# test, and requests it makes do not pass Playwright's routes, which the fault tests rely on.
# The tests of the worker itself (test_offline.py, `sw_page`) let it run.
NO_SERVICE_WORKER = {"service_workers": "block"}


class WatchedPage:
    """A page plus what it did that a test must not allow."""

    def __init__(self, context, site_url):
        self.external: list[str] = []
        self.errors: list[str] = []
        self.expected: list[str] = []  # markers of errors a test provoked on purpose
        record_other_origins(context, [site_url], self.external)
        self.page = context.new_page()
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        self.page.on("response", lambda r: self.errors.append(f"HTTP {r.status} {r.url}") if r.status >= 400 else None)
        self.site_url = site_url

    def goto(self, path: str):
        self.page.goto(self.site_url + path)
        return self.page

    def expect_errors(self, marker: str):
        """Ignore, until the page closes, errors containing `marker` (ones a test provokes on
        purpose). Late ones count too: parallel downloads can report after the test moved on."""
        self.expected.append(marker)

    def mark(self) -> tuple[int, int]:
        """Where the record stands now, for `take_since`."""
        return len(self.errors), len(self.external)

    def take_since(self, mark: tuple[int, int]) -> list[str]:
        """What went wrong since `mark`, one line each (errors expected by `expect_errors` left
        out), removed from the record so that no later check reports it again."""
        errors, external = self.errors[mark[0] :], self.external[mark[1] :]
        del self.errors[mark[0] :], self.external[mark[1] :]
        problems = [f"console error: {e}" for e in errors if not any(m in e for m in self.expected)]
        return problems + [f"request to another origin: {u}" for u in sorted(set(external))]

    def check(self):
        assert not self.external, f"requests to other origins: {json.dumps(sorted(set(self.external)), indent=1)}"
        self.errors[:] = [e for e in self.errors if not any(m in e for m in self.expected)]
        assert not self.errors, f"console errors: {json.dumps(self.errors, indent=1)}"
