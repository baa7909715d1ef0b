"""Write output files all at once: nothing is left behind if writing fails."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import threading
from pathlib import Path

from paging.errors import PagingError

#: the temporary files being written now (removed by :func:`_on_sigterm`)
_LIVE: list[str] = []


def _on_sigterm(signum, frame):  # pragma: no cover (a subprocess test sends it)
    """SIGTERM while an output is written: remove the temporary files, one line, exit 143
    (128 + 15, what a shell reports for the signal). It exits here rather than raising: an
    exception raised from a handler that runs inside a callback of compiled code was lost
    there (a review: the run went on and exited 0)."""
    for tmp in list(_LIVE):
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    os.write(2, b"error: terminated\n")
    os._exit(128 + signum)


@contextlib.contextmanager
def _terminable():
    """While an output is written, SIGTERM removes its temporary file (:func:`_on_sigterm`;
    the caller lists it in :data:`_LIVE`). The handler is set before the file is created (a
    SIGTERM between the two left it behind) and only here, around the writing, and only in the
    main thread over SIGTERM's default action: a Python handler runs only when the interpreter
    regains control, so one set for a whole command would hold a SIGTERM until a compiled
    kernel returned; outside the writing the default action ends the process at once, and
    there is nothing half-written to remove."""
    installed = False
    if not _LIVE and threading.current_thread() is threading.main_thread():
        with contextlib.suppress(ValueError, OSError):
            if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
                signal.signal(signal.SIGTERM, _on_sigterm)
                installed = True
    try:
        yield
    finally:
        if installed:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _create(path: Path, suffix: str) -> str:
    """A new empty temporary file beside ``path`` (mode 0600), listed in :data:`_LIVE` before
    it is created, so that a SIGTERM at any moment finds it (a signal mask would not hold: the
    kernel may hand the signal to another thread, and the handler then runs in the main thread
    anyway)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise PagingError(f"cannot write the file: {e.strerror or e}", str(path)) from None
    for _ in range(100):
        tmp = str(path.parent / f".{path.name}.{secrets.token_hex(4)}{suffix}")
        _LIVE.append(tmp)
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            return tmp
        except FileExistsError:
            _LIVE.remove(tmp)
        except OSError as e:
            _LIVE.remove(tmp)
            raise PagingError(f"cannot write the file: {e.strerror or e}", str(path)) from None
    raise PagingError("cannot write the file: no free temporary name beside it", str(path))


def _umask() -> int:
    """The process's umask (read by setting it and putting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def check_target(path: str | os.PathLike) -> Path:
    """Refuse, as one :class:`PagingError` line, an output path that cannot be written: empty, an
    existing folder, an existing device, pipe or socket (which the rename would replace), or
    below a file. Commands call it before their work, so a run of minutes
    does not end in a write error; :func:`atomic_path` calls it again."""
    if not str(path).strip():
        raise PagingError("the output file name is empty; expected a file to write")
    p = Path(path)
    if p.is_dir():
        raise PagingError("is a folder; expected a file to write", str(path))
    if p.exists() and not p.is_file():  # (the rename would put a file in place of a device:
        # `trace convert T /dev/stdout` run as root replaced /dev/stdout, and /dev/null alike)
        raise PagingError("is not a regular file (a device, pipe or socket); expected a file "
                          "to write (outputs are written beside it and renamed into place)",
                          str(path))
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                raise PagingError(f"cannot write below {parent}, which is a file; expected "
                                  "a folder", str(path))
            break
    return p


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = ""):
    """Yield a temporary path beside ``path``; on success it is renamed to ``path`` with the
    permissions of a newly created file (0666 less the umask, not the temporary's 0600), on any
    error it is removed (so a failed command leaves no half-written output file), also on
    SIGTERM (:func:`_terminable`: one line, exit status 143). A path that
    cannot be written (see :func:`check_target`, or a folder without write permission) is one
    :class:`PagingError` line."""
    path = check_target(path)
    with _terminable():
        tmp = _create(path, suffix or path.suffix)
        try:
            yield Path(tmp)
            # the temporary file has mode 0600; give it the mode a plain open() would
            os.chmod(tmp, 0o666 & ~_umask())
            try:
                os.replace(tmp, path)
            except OSError as e:  # (the target became a folder while the file was written)
                raise PagingError(f"cannot write the file: {e.strerror or e}",
                                  str(path)) from None
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        finally:
            _LIVE.remove(tmp)
