"""MkDocs hook: render the Sphinx roles of the docstrings (``:class:`X```) as inline code.

The docstrings follow numpydoc and use Sphinx cross-reference roles; mkdocstrings renders the
backticked part as ``<code>`` and leaves the role name as text. This hook drops the role name
(and a leading ``~``), leaving ``<code>X</code>``.
"""

import re

_ROLE = re.compile(
    r":(?:py:)?(?:class|meth|func|data|mod|attr|obj|exc|const):<code>~?([^<]*)</code>"
)


def on_page_content(html, page, config, files):  # noqa: ARG001 - the MkDocs hook signature
    return _ROLE.sub(r"<code>\1</code>", html)
