"""Defaults shared by the CLI and the packages it starts lazily.

The CLI imports heavy modules inside its commands so that `parc --help` stays instant; a default
both it and such a package need lives here, with no imports, so that it is written once."""

DEFAULT_TOP = 10
"""Layouts a search lists unless told otherwise (`parc search --top`'s default): the runners-up
among which an at-risk winner's clear runner-up is named (`ranking.memory_clear_runner_up`), by
the layout search and, for its at-risk clusters, by the cluster search."""
