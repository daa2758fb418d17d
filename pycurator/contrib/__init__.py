"""Lock listeners for other libraries, each behind an extra of its own and imported only when
used: :mod:`pycurator.contrib.prometheus` (``pip install pycurator-zk[prometheus]``) and
:mod:`pycurator.contrib.opentelemetry` (``pycurator-zk[opentelemetry]``). Add one with
:func:`pycurator.add_lock_listener`."""
