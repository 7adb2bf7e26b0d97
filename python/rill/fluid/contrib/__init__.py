"""fluid.contrib: Fluid 1.x's contributed API (its optimizer module)."""
from rill.fluid.contrib import optimizer  # noqa: F401
