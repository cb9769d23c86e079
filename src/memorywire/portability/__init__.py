"""Export, import and migrate memories between stores (``memorywire/export`` v0 dumps)."""

from memorywire.portability.dump import DumpReader, DumpWriter, verify_dump
from memorywire.portability.migration import migrate
from memorywire.portability.moves import export_dump, import_dump
from memorywire.portability.plan import FidelityPlan, plan_fidelity

__all__ = [
    "DumpReader",
    "DumpWriter",
    "FidelityPlan",
    "export_dump",
    "import_dump",
    "migrate",
    "plan_fidelity",
    "verify_dump",
]
