"""Where NDPRegressor gets its prior network: shipped weights, or trained and cached on disk.

Priors are shared by the estimators of a process (cross-validation folds, Bayesian
optimisation loops) through an in-memory cache keyed by everything that defines the weights,
so an entry cannot go stale. Trained priors are also cached on disk: each entry is a weights
file written atomically (a temporary file of its writer, then a rename) next to a manifest
holding its SHA-256 and the configuration that produced it; both are checked on load, and an
entry that fails the check is discarded and rebuilt with a warning. A file lock per entry
makes concurrent processes train a missing prior once: the others wait and load it.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import warnings
from pathlib import Path

import torch
from filelock import FileLock

from .._checks import caller_stacklevel
from .._engine import atomic_write

__all__ = ["default_cache_dir", "pretrained_prior", "trained_prior"]

_MEMORY: dict = {}


def default_cache_dir():
    """``$SKDIFF_CACHE/ndp``, or ``~/.cache/skdiff/ndp``."""
    return Path(os.environ.get("SKDIFF_CACHE", Path.home() / ".cache" / "skdiff")) / "ndp"


def pretrained_prior(prior, n_dims, device):
    """(module, config) of the pretrained ``prior`` for ``n_dims`` input dimensions.

    ``prior`` is a registered name (the weights shipped with the package), a
    :class:`~skdiff.diffusion.TrainedPrior` held in memory, or a path: a weights file written
    by :func:`skdiff.diffusion.priors.save_prior` (its manifest next to it), or a folder of
    such files named ``<name>_d<D>.pt``. Without weights for ``n_dims``, the nearest
    dimension's are used with a warning: the noise network is invariant to the order *and
    number* of input dimensions (attention across dimensions, then a mean over them), so a
    prior trained for D' runs on D inputs, though it was not trained there. A corrupt or stale
    file is never bypassed.
    """
    from ..diffusion.priors import (
        PRIORS,
        TrainedPrior,
        available_priors,
        load_prior,
        load_prior_file,
    )

    if isinstance(prior, TrainedPrior):  # in memory: one configuration, built per fit
        if not prior.config.from_functions:
            _nearest_dims([prior.config.n_dims], n_dims, repr(prior.name))
        return prior.network(device), prior.config
    if isinstance(prior, str) and prior in PRIORS:
        dims = sorted(d for n, d in available_priors() if n == prior)
        use = _nearest_dims(dims, n_dims, repr(prior))
        key = ("pretrained", prior, use, device)
        if key not in _MEMORY:
            _MEMORY[key] = load_prior(prior, use, device=device)
        return _MEMORY[key]
    path = Path(prior)
    if path.is_dir():
        found = available_priors(path)
        names = sorted({n for n, _ in found})
        if len(names) != 1:
            raise ValueError(f"The prior folder {path} must hold the weights of one prior "
                             f"(files <name>_d<D>.pt with manifests); found {names or 'none'}.")
        use = _nearest_dims(sorted(d for _, d in found), n_dims, f"in {path}")
        path = path / f"{names[0]}_d{use}.pt"
    elif not path.is_file():
        raise ValueError(
            f"'prior' must be a registered prior ({sorted(PRIORS)}) or the path of a weights "
            f"file or folder written by skdiff.diffusion.priors.save_prior; got {prior!r}, "
            "which is neither.")
    stat = path.stat()
    key = ("file", str(path.resolve()), stat.st_mtime_ns, stat.st_size, device)
    if key not in _MEMORY:
        _MEMORY[key] = load_prior_file(path, device=device)
    return _MEMORY[key]


def _nearest_dims(dims, n_dims, what):
    """``n_dims`` if weights exist for it, else the nearest available dimension (warned)."""
    if not dims or n_dims in dims:
        return n_dims
    below = [d for d in dims if d <= n_dims]
    use = below[-1] if below else dims[0]
    warnings.warn(
        f"No pretrained prior {what} for {n_dims} input dimensions (available: {dims}); "
        f"using the {use}-D prior's network, which accepts any number of dimensions but was "
        f"not trained for {n_dims}. Set pretrained=False to train a {n_dims}-D prior.",
        UserWarning, stacklevel=caller_stacklevel())
    return use


def _entry_key(config, max_epochs, steps_per_epoch, seed):
    source = json.dumps({"config": config.to_dict(), "epochs": max_epochs,
                         "steps_per_epoch": steps_per_epoch, "seed": seed}, sort_keys=True)
    return hashlib.sha256(source.encode()).hexdigest()[:16], source


def _load_entry(pt, js, source, config, device):
    """The cached prior's network on ``device``, or None (with a warning) when the entry is
    missing or bad."""
    from ..diffusion.priors import _network

    if not pt.exists() or not js.exists():
        return None
    try:
        manifest = json.loads(js.read_text(encoding="utf-8"))
        if not isinstance(manifest, dict):
            raise ValueError(f"its manifest holds a {type(manifest).__name__}, not an object")
        data = pt.read_bytes()
        if manifest.get("sha256") != hashlib.sha256(data).hexdigest():
            raise ValueError("its checksum does not match its manifest")
        if manifest.get("source") != json.loads(source):
            raise ValueError("it was trained with another configuration")
        state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
        return _network(config, state, "its weights", device)  # checked: finite, fitting
    except (ValueError, KeyError, RuntimeError, OSError, json.JSONDecodeError,
            pickle.UnpicklingError) as exc:
        warnings.warn(f"The cached prior {pt} is unusable ({str(exc).strip()}); it is "
                      "discarded and trained again.", UserWarning, stacklevel=caller_stacklevel())
        for f in (pt, js):
            f.unlink(missing_ok=True)
        return None


def trained_prior(config, *, max_epochs, steps_per_epoch, seed, device, cache_dir, verbose,
                  callbacks):
    """A prior trained by the package's procedure, cached on disk (see the module docstring).

    The cache key hashes the configuration, the number of steps and the seed: CV folds and
    repeated fits reuse the same weights. An interrupted training (``KeyboardInterrupt``)
    propagates and writes nothing.
    """
    from ..diffusion.priors import _network
    from ..diffusion.training import train_prior

    key, source = _entry_key(config, max_epochs, steps_per_epoch, seed)
    mem_key = ("trained", key, device)
    if mem_key in _MEMORY:
        return _MEMORY[mem_key]
    folder = Path(cache_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:
        raise NotADirectoryError(
            f"The 'cache_dir' parameter must be a folder for the trained priors; got "
            f"{str(cache_dir)!r}, where a file ({exc.filename}) stands in the way. Pass "
            "another folder, or cache_dir=None for the default one.") from exc
    pt, js = folder / f"prior_{key}.pt", folder / f"prior_{key}.json"
    with FileLock(str(folder / f"prior_{key}.lock")):
        module = _load_entry(pt, js, source, config, device)
        if module is None:
            _, state, _ = train_prior(config, max_epochs=max_epochs,
                                      steps_per_epoch=steps_per_epoch, device=device,
                                      random_state=seed, verbose=verbose, callbacks=callbacks)
            buf = io.BytesIO()
            torch.save(state, buf)
            data = buf.getvalue()
            atomic_write(pt, data)
            manifest = {"sha256": hashlib.sha256(data).hexdigest(), "source": json.loads(source)}
            atomic_write(js, (json.dumps(manifest, indent=1) + "\n").encode())
            module = _network(config, state, "The trained prior's weights", device)
    _MEMORY[mem_key] = module
    return module
