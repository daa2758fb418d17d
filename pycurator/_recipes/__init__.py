"""Each protocol written once, as steps over :mod:`pycurator._protocol`: the lock engine, the
election, following a held node, participants, revocation, observation and inspection."""
