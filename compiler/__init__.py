"""parc: a compiler for distributed-training layouts.

The import package maps the design card's folders: `compiler/` is `parc`, `grammar/` is
`parc.grammar`, `backends/` is `parc.backends`. The pipeline stages are modules, in order:

    syntax   text -> Document          (grammar/par.lark)
    spec     Document -> Spec          (typed IR: what the user wrote)
    resolve  Spec -> Plan              (presets, defaults, derived facts)
    checks   Plan -> diagnostics       (topology, divisibility, memory)
    backends Plan -> files             (PyTorch runtime, launchers)

Nothing here imports torch.
"""

__version__ = "0.1.0"
