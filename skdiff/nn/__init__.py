"""Pure PyTorch building blocks of skdiff (no scikit-learn in here): one concept per file."""

from .difformer import DIFFormer
from .diffusion_attention import DiffusionAttention
from .flow_attention import FlowAttention, default_chunk_size, flow_attention
from .flowformer import Flowformer, SoftmaxAttention
from .ndp import NDPNoiseModel
from .sparse import SparseRows, sparse_linear

__all__: list[str] = []
__all__ += [
    "FlowAttention", "Flowformer", "SoftmaxAttention", "default_chunk_size", "flow_attention"]
__all__ += ["DIFFormer", "DiffusionAttention", "SparseRows", "sparse_linear"]
__all__ += ["NDPNoiseModel"]
