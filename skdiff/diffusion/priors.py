"""Named NDP priors and their pretrained weights (shipped in ``skdiff/weights``).

A prior is a :class:`~skdiff.diffusion.training.PriorConfig` (the GP functions it was trained
on, the network size and the diffusion schedule) for a given input dimension. Pretrained weights
live in ``skdiff/weights/<name>_d<D>.pt`` next to a JSON manifest ``<name>_d<D>.json`` holding
the file's SHA-256, the configuration, the training command, seed, number of steps and the
final loss. :func:`load_prior` refuses a weights file whose checksum or configuration does not
match (a stale or corrupt file) with an error that says how to regenerate it.

Registered priors:

``"gp"`` (default)
    SE and Matérn-1/2, 3/2, 5/2 kernels mixed uniformly, lengthscale log-normal
    (:math:`\\log \\ell \\sim \\mathcal{N}(\\log 0.45, 0.6^2)`, times :math:`\\sqrt{D}`),
    variance 1, observation noise variance 0.0025, ``x`` in :math:`[-2, 2]^D`, 40-80 points
    per function. Sampling from it marginalises the kernel and the lengthscale.
``"se"``
    The paper's SE task: SE kernel, lengthscale :math:`0.25\\sqrt{D}`, variance 1, noise
    0.0025, :math:`50 + 10D` points.
``"matern52"``
    The paper's Matérn-5/2 task, with the same lengthscale, variance, noise and points.

A prior trained on your own family of functions (:func:`~skdiff.diffusion.train_prior` with
``functions``) is saved the same way, with :func:`save_prior` and the configuration fitted to
the family (:meth:`PriorConfig.for_functions <skdiff.diffusion.PriorConfig.for_functions>`):
its manifest then records the family's units (``x_bounds``, ``y_loc``, ``y_scale``) beside
the network, so the file alone is the whole prior.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import time
from pathlib import Path

import torch

from .._engine import TORCH_LOCK
from .training import PriorConfig

__all__ = [
    "PRIORS",
    "PriorWeightsError",
    "TrainedPrior",
    "available_priors",
    "get_prior_config",
    "load_prior",
    "load_prior_file",
    "save_prior",
    "weights_dir",
]

#: Registered prior configurations (``n_dims`` is set per weights file).
PRIORS: dict[str, PriorConfig] = {
    "gp": PriorConfig(
        kernel=("se", "matern12", "matern32", "matern52"),
        lengthscale=("lognormal", math.log(0.45), 0.6),
        n_points=(40, 80),
    ),
    "se": PriorConfig(kernel="se", lengthscale=0.25, n_points=None),
    "matern52": PriorConfig(kernel="matern52", lengthscale=0.25, n_points=None),
}


#: Fields that define what a prior *is* (its functions, network and diffusion); the remaining
#: ones (learning rate, warm-up, EMA, ...) only describe how the weights were trained and may
#: differ between the registry and a weights file.
DEFINING_FIELDS = (
    "kernel", "lengthscale", "scale_lengthscale_with_dims", "anisotropic", "variance", "noise",
    "domain", "n_dims", "n_points", "hidden_dim", "n_layers", "n_heads", "timesteps",
    "beta_start", "beta_end", "x_bounds", "y_loc", "y_scale",
)


class PriorWeightsError(ValueError):
    """A pretrained prior is missing, stale (its configuration changed) or corrupt."""


def weights_dir() -> Path:
    """Directory of the shipped weights (``skdiff/weights``)."""
    return Path(__file__).resolve().parent.parent / "weights"


def get_prior_config(name="gp", n_dims=1) -> PriorConfig:
    """The configuration of the registered prior ``name`` for ``n_dims`` input dimensions."""
    if name not in PRIORS:
        raise ValueError(f"Unknown prior {name!r}; registered priors are {sorted(PRIORS)}.")
    if isinstance(n_dims, bool) or not isinstance(n_dims, int) or n_dims < 1:
        raise ValueError(f"'n_dims' must be an int >= 1; got {n_dims!r}.")
    return PRIORS[name].replace(n_dims=n_dims)


def _paths(name, n_dims, directory=None):
    d = Path(directory) if directory is not None else weights_dir()
    return d / f"{name}_d{n_dims}.pt", d / f"{name}_d{n_dims}.json"


def available_priors(directory=None):
    """``(name, n_dims)`` pairs that have a weights file and manifest.

    Parameters
    ----------
    directory : path, default=None
        Folder to look in, for files named ``<name>_d<D>.pt`` and ``<name>_d<D>.json``
        (default: the package's ``skdiff/weights``).

    Returns
    -------
    priors : list of (str, int)
        Prior name and input dimension of every weights file that has its manifest,
        sorted by file name. The files are not verified here (:func:`load_prior` does).
    """
    d = Path(directory) if directory is not None else weights_dir()
    out = []
    for manifest in sorted(d.glob("*_d*.json")):
        name, _, dims = manifest.stem.rpartition("_d")
        if dims.isdigit() and manifest.with_suffix(".pt").exists():
            out.append((name, int(dims)))
    return out


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def save_prior(name, config, state_dict, *, directory=None, dtype=torch.float16, **record):
    """Write ``<name>_d<D>.pt`` (weights stored as ``dtype``) and its JSON manifest.

    Parameters
    ----------
    name : str
        Name of the prior; the files are ``<name>_d<D>.pt`` and ``<name>_d<D>.json``.
    config : PriorConfig
        The configuration the weights were trained with (for a prior trained on functions,
        the one fitted to them, :meth:`PriorConfig.for_functions`, which carries their
        units); the manifest records it.
    state_dict : dict of tensors
        The weights, e.g. the EMA state returned by :func:`train_prior`.
    directory : path, default=None
        Folder to write to (default: the package's ``skdiff/weights``).
    dtype : torch.dtype, default=torch.float16
        Storage type of the floating-point weights (loaded back as float32).
    **record
        Free-form provenance stored in the manifest (command, seed, steps, final_loss, ...).

    Returns
    -------
    pt, manifest : Path
        The paths written. The manifest holds the weights file's SHA-256, checked by
        :func:`load_prior_file` (and ``NDPRegressor(prior=pt)``) before loading.
    """
    if not isinstance(name, str) or not name or "/" in name or "\\" in name \
            or name in (".", ".."):
        raise ValueError(f"name must be a non-empty file name without slashes (the files "
                         f"are written in 'directory'); got {name!r}.")
    pt, js = _paths(name, config.n_dims, directory)
    pt.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    torch.save({k: v.detach().cpu().to(dtype) if v.is_floating_point() else v.cpu()
                for k, v in state_dict.items()}, buf)
    data = buf.getvalue()
    manifest = {
        "name": name,
        "n_dims": config.n_dims,
        "sha256": _sha256(data),
        "bytes": len(data),
        "dtype": str(dtype).replace("torch.", ""),
        "config": config.to_dict(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **record,
    }
    pt.write_bytes(data)
    js.write_text(json.dumps(manifest, indent=2) + "\n")
    return pt, js


def load_prior(name="gp", n_dims=1, *, directory=None, device="cpu", check_config=True):
    """Load a pretrained prior: its noise model (EMA weights, eval mode) and configuration.

    Parameters
    ----------
    name : str, default="gp"
        A registered prior (see :data:`PRIORS`).
    n_dims : int, default=1
        Input dimension.
    directory : path, default=None
        Where the weights are (default: the package's ``skdiff/weights``).
    device : str, default="cpu"
        Torch device the module is placed on.
    check_config : bool, default=True
        Refuse weights whose manifest configuration differs from the registered one.

    Returns
    -------
    module : NDPNoiseModel
        In eval mode, float32, on ``device``, parameters not requiring grad.
    config : PriorConfig
        The registered configuration of the prior for ``n_dims`` (the one the weights were
        trained with when ``check_config``).

    Raises
    ------
    PriorWeightsError
        The weights file or manifest is missing, the checksum does not match (corrupt or
        replaced file) or the configuration changed since the weights were trained (stale).

    Examples
    --------
    >>> from skdiff.diffusion.priors import available_priors, load_prior
    >>> ("gp", 1) in available_priors()
    True
    >>> module, config = load_prior("gp", n_dims=1)
    >>> config.n_dims, module.training
    (1, False)
    """
    config = get_prior_config(name, n_dims)
    pt, js = _paths(name, n_dims, directory)
    regen = (f"Regenerate it with `python scripts/pretrain_ndp.py --prior {name} --n-dims "
             f"{n_dims}`, or fit with pretrained=False to train a prior.")
    if not pt.exists() or not js.exists():
        have = ", ".join(f"{n}_d{d}" for n, d in available_priors(directory)) or "none"
        raise PriorWeightsError(
            f"No pretrained weights for prior {name!r} with n_dims={n_dims} (looked for {pt}; "
            f"available: {have}). {regen}"
        )
    return load_prior_file(pt, expected=config if check_config else None, device=device,
                           remedy=regen)


def load_prior_file(path, *, expected=None, device="cpu", remedy=""):
    """Load a weights file written by :func:`save_prior` and verify it against its manifest.

    Parameters
    ----------
    path : path-like
        The ``.pt`` file; its manifest is the ``.json`` file of the same name.
    expected : PriorConfig, default=None
        Refuse weights whose manifest's defining fields differ from these (a stale file).
    device : str, default="cpu"
    remedy : str, default=""
        What to do about a bad file, appended to the error messages.

    Returns
    -------
    module : NDPNoiseModel
        In eval mode, float32, on ``device``, parameters not requiring grad.
    config : PriorConfig
        The configuration recorded in the manifest.
    """
    pt = Path(path)
    manifest, data = _verified_bytes(pt, remedy)
    config = _manifest_config(manifest, pt, expected, remedy)
    try:
        state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as exc:  # weights_only refuses anything but tensors (e.g. code)
        raise PriorWeightsError(f"The weights {pt.name} are not a plain tensor file "
                                f"({type(exc).__name__}); they are not loaded. {remedy}") from exc
    return _network(config, state, f"The weights {pt.name}", device, remedy), config


def _network(config, state, what, device, remedy=""):
    """``config``'s network with the weights ``state`` (eval mode, float32, no grad), after
    checking they are a state dict of finite tensors that fits it."""
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor)
                                              for v in state.values()):
        raise PriorWeightsError(f"{what} hold a {type(state).__name__}, not a state dict of "
                                f"tensors. {remedy}")
    bad = [k for k, v in state.items() if v.is_floating_point() and not torch.isfinite(v).all()]
    if bad:
        raise PriorWeightsError(f"{what} hold non-finite values ({bad[0]}"
                                f"{' and others' if len(bad) > 1 else ''}). {remedy}")
    # the weights are loaded over the random initialisation: drawing it from a forked
    # generator leaves the caller's torch random state as it was, and holding the lock of
    # the seeded sections keeps it from rewinding another thread's seeded stream
    with TORCH_LOCK, torch.random.fork_rng(devices=[]):
        module = config.network()
    try:
        module.load_state_dict({k: v.float() if v.is_floating_point() else v
                                for k, v in state.items()})
    except RuntimeError as exc:
        detail = str(exc).strip().rstrip(".")
        raise PriorWeightsError(f"{what} do not fit the network: {detail}. {remedy}") from exc
    module.eval().requires_grad_(False)
    return module.to(device)


class TrainedPrior:
    """A prior held in memory: its configuration and its weights.

    What :func:`save_prior` writes to disk, without the disk: pass it as
    ``NDPRegressor(prior=...)`` right after :func:`~skdiff.diffusion.train_prior`, keep it in
    a pickle with the estimator, or :meth:`save` it when it is worth keeping.

    Parameters
    ----------
    config : PriorConfig
        The configuration the weights were trained with (for a prior trained on functions,
        the one fitted to them, :meth:`PriorConfig.for_functions`, which carries their units).
    state_dict : dict of tensors
        The weights, e.g. the EMA state returned by :func:`~skdiff.diffusion.train_prior`.
        They are copied to the CPU and checked: finite, and of the network ``config``
        describes.
    name : str, default="custom"
        Name used by :meth:`save` for the files (``<name>_d<D>.pt``) and in messages.

    Attributes
    ----------
    config : PriorConfig
        The configuration, as given.
    state_dict : dict of tensors
        A CPU copy of the weights (later changes to the given tensors do not reach it).
    name : str
        The name, as given.

    Examples
    --------
    >>> import numpy as np
    >>> from skdiff import NDPRegressor
    >>> from skdiff.diffusion import PriorConfig, TrainedPrior, train_prior
    >>> curves = [(np.linspace(0, 1, 12), np.sin(6 * np.linspace(0, 1, 12) + p))
    ...           for p in np.linspace(0, 3, 20)]
    >>> config = PriorConfig(hidden_dim=16, n_layers=1, n_heads=2, batch_size=4,
    ...                      n_points=(4, 12), warmup_steps=2).for_functions(curves)
    >>> _, ema, _ = train_prior(config, functions=curves, max_epochs=1, steps_per_epoch=5)
    >>> prior = TrainedPrior(config, ema, name="sines")
    >>> ndp = NDPRegressor(prior=prior, random_state=0).fit([[0.2], [0.7]], [0.3, -0.5])
    >>> ndp.predict([[0.5]]).shape
    (1,)
    """

    def __init__(self, config, state_dict, *, name="custom"):
        if not isinstance(config, PriorConfig):
            raise TypeError(f"config must be a PriorConfig; got {type(config).__name__}.")
        if not isinstance(name, str) or not name or "/" in name or "\\" in name:
            raise ValueError(f"name must be a non-empty file name without slashes; got "
                             f"{name!r}.")
        what = f"The weights of the prior {name!r}"
        _network(config, state_dict, what, "cpu",
                 "Pass the state dict train_prior returned with the config it trained.")
        self.config = config
        self.state_dict = {k: v.detach().cpu().clone() for k, v in state_dict.items()}
        self.name = name

    def network(self, device="cpu"):
        """The noise network with these weights.

        Parameters
        ----------
        device : str or torch.device, default="cpu"
            Where the network is placed.

        Returns
        -------
        module : NDPNoiseModel
            In eval mode, float32, parameters not requiring grad.
        """
        return _network(self.config, self.state_dict, f"The weights of {self.name!r}", device)

    def save(self, directory=None, *, dtype=torch.float16, **record):
        """Write the prior as :func:`save_prior` does, as ``<name>_d<D>.pt`` and its manifest.

        Parameters
        ----------
        directory : path-like, default=None
            Where to write (``None``: the package's weights folder, as for
            :func:`save_prior`).
        dtype : torch.dtype, default=torch.float16
            Storage type of the floating-point weights (``torch.float32`` keeps them bit
            for bit).
        **record
            Free-form provenance stored in the manifest (command, seed, steps, ...).

        Returns
        -------
        weights, manifest : Path
            The two files written; ``NDPRegressor(prior=weights)`` reads them back.
        """
        return save_prior(self.name, self.config, self.state_dict, directory=directory,
                          dtype=dtype, **record)

    def __repr__(self):
        kind = "functions" if self.config.from_functions else f"kernel={self.config.kernel!r}"
        return f"TrainedPrior({kind}, n_dims={self.config.n_dims}, name={self.name!r})"


def _verified_bytes(pt, remedy):
    """(manifest dict, weight bytes) of ``pt``, whose SHA-256 must match the manifest's."""
    js = pt.with_suffix(".json")
    if not pt.is_file() or not js.is_file():
        raise PriorWeightsError(f"A prior needs its weights file and manifest: {pt} and {js} "
                                f"(one is missing). {remedy}")
    try:
        manifest = json.loads(js.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise PriorWeightsError(f"The manifest {js} is not valid JSON ({exc}). "
                                f"{remedy}") from exc
    if not isinstance(manifest, dict):
        raise PriorWeightsError(f"The manifest {js} holds a JSON {type(manifest).__name__}, "
                                f"not an object with the prior's checksum and configuration. "
                                f"{remedy}")
    data = pt.read_bytes()
    digest = _sha256(data)
    if digest != manifest.get("sha256"):
        raise PriorWeightsError(
            f"Checksum mismatch for {pt}: the file's SHA-256 is {digest[:12]}... but the "
            f"manifest records {str(manifest.get('sha256'))[:12]}...; the weights file is "
            f"corrupt or was replaced. {remedy}"
        )
    return manifest, data


def _manifest_config(manifest, pt, expected, remedy):
    """The manifest's PriorConfig, checked against ``expected``'s defining fields."""
    try:
        stored = PriorConfig.from_dict(manifest["config"])
    except (KeyError, TypeError, ValueError) as exc:
        raise PriorWeightsError(f"The manifest of {pt.name} has no valid 'config' ({exc}). "
                                f"{remedy}") from exc
    if expected is not None:
        diff = {k: (getattr(stored, k), getattr(expected, k)) for k in DEFINING_FIELDS
                if getattr(stored, k) != getattr(expected, k)}
        if diff:
            raise PriorWeightsError(
                f"The weights {pt.name} are stale: they were trained with a different "
                f"configuration (field: (trained, registered) = {diff}). {remedy}"
            )
    return stored
