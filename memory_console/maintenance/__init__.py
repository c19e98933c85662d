"""Maintenance passes: plan() lists what would change, apply() writes it in one transaction,
undo() takes a run back; forecasts of one memory and of the whole store.

The names are imported eagerly: `apply` and `undo` are also the names of their modules, and
a name loaded on first use would lose to the module once anything imports it. Commands that
must start fast (`--help`) do not import this package."""

from memory_console.maintenance.apply import apply
from memory_console.maintenance.changes import (
    Change,
    ChangeSet,
    NewMemory,
    PassResult,
    Plan,
)
from memory_console.maintenance.errors import (
    MaintenanceError,
    StalePlanError,
)
from memory_console.maintenance.forecast import (
    memory_forecast,
    store_forecast,
)
from memory_console.maintenance.params import MaintenanceParams
from memory_console.maintenance.planner import plan
from memory_console.maintenance.reasons import (
    Reason,
    Reasons,
)
from memory_console.maintenance.registry import (
    PassSpec,
    build_params,
    maintain_passes,
    registered_passes,
)
from memory_console.maintenance.runs import (
    Run,
    get_run,
    list_runs,
)
from memory_console.maintenance.undo import (
    Blocker,
    MergeConflict,
    NotRestored,
    UndoCheck,
    UndoRefused,
    UndoReport,
    undo,
    undo_check,
)

__all__ = [
    "Blocker",
    "Change",
    "ChangeSet",
    "MaintenanceError",
    "MaintenanceParams",
    "MergeConflict",
    "NewMemory",
    "NotRestored",
    "PassResult",
    "PassSpec",
    "Plan",
    "Reason",
    "Reasons",
    "Run",
    "StalePlanError",
    "UndoCheck",
    "UndoRefused",
    "UndoReport",
    "apply",
    "build_params",
    "get_run",
    "list_runs",
    "maintain_passes",
    "memory_forecast",
    "plan",
    "registered_passes",
    "store_forecast",
    "undo",
    "undo_check",
]
