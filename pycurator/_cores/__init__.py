"""What both front ends share of each recipe: its core, composed (never subclassed) by the
threaded shell (:mod:`pycurator._threads` and the public modules) and the asyncio shell
(:mod:`pycurator.aio`), which say only how they wait and how they run the steps."""
