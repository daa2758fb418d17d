"""The chaos run's contenders by language."""

from __future__ import annotations

from .async_contenders import AsyncContender
from .contenders import Contender, PythonContender
from .java_contenders import JavaContender

#: The contenders by language: pycurator's threaded recipes, Java's, and pycurator's asyncio
#: recipes (not in a run unless asked for).
CONTENDERS: dict[str, type[Contender]] = {
    "python": PythonContender,
    "java": JavaContender,
    "asyncio": AsyncContender,
}

__all__ = ["CONTENDERS"]
