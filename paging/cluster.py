"""A Dask client for the commands that spread work over workers (``paging sweep``, ``paging
mrc --scheduler``): a running scheduler's, or a LocalCluster's. Dask is the ``sweep`` extra, so
it is imported here, when a client is asked for, not when ``paging`` loads."""

from __future__ import annotations

import contextlib

from paging.errors import PagingError

__all__ = ["dask_client"]


@contextlib.contextmanager
def dask_client(scheduler: str | None, workers: int = 1, processes: bool = False, *,
                what: str = "paging sweep", local: str = "pass --workers 0 to run in-process"):
    """A Dask ``Client`` of the scheduler at ``scheduler`` (reached within 5 s, else a one-line
    :class:`PagingError`), or of a LocalCluster of ``workers`` single-threaded workers (threads,
    or ``processes``); closed on exit. ``what`` and ``local`` word the error when Dask is not
    installed: what needs it, and how to run without it."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise PagingError(f"{what} runs on Dask: pip install 'paging[sweep]' (dask "
                          f"distributed and pyarrow), or {local}") from None
    import logging

    logging.getLogger("distributed").setLevel(logging.ERROR)
    cluster = None
    if scheduler is not None:
        try:
            client = Client(scheduler, timeout="5s")
        except (OSError, TimeoutError, ValueError) as e:
            raise PagingError(f"cannot reach the Dask scheduler at {scheduler} within 5 s "
                              f"({type(e).__name__}); start one (`dask scheduler`, then `dask "
                              "worker ADDRESS`) or drop --scheduler to use local workers") \
                from None
    else:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=processes,
                               protocol="tcp", host="127.0.0.1", dashboard_address=None)
        client = Client(cluster)
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
