"""Weekly chronicle (seed 000), the pure part: one report per project and ISO week.

`tokens`, `stats`, `model`, `prompt`, `offline`, `faithfulness`, `engine`, `context`, `search`,
`report_md`, `outcome`. The read side that does I/O (`build_history_context`, `ask_chronicle`) is the
use case `chronicle.services.history`.
"""
