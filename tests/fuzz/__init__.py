"""Fuzzing parc's front end and command line (issue 8).

    corpus.py   the seed inputs: every spec, every golden diagnostic case, found regressions
    mutate.py   byte-, token- and tree-level mutations of a seed
    oracle.py   runs one input through the real `parc` commands and checks the invariants
    test_fuzz.py    the bounded run that is part of the test suite
    __main__.py     the long run: `python -m tests.fuzz --minutes 30`
    atheris_fuzz.py coverage-guided run (optional: `pip install atheris`)
"""
