"""Model geometry: how many bytes of weights a replica reads per decode step and of KV cache per token.

The simulator's replica model (decode is HBM-bandwidth-bound, prefill is FLOP-bound) needs the weight bytes,
the FLOPs per token (2 x parameters) and the KV-cache bytes per token
(layers x 2 (K and V) x KV heads x head dim x dtype bytes, shared/autoscaling_sim.md §5.1).
Geometry is taken from each model's Hugging Face `config.json` (num_hidden_layers, num_key_value_heads,
hidden_size / num_attention_heads, vocab_size, tie_word_embeddings) and its model card's parameter count.

Quantized checkpoints (GPTQ) keep the embeddings and LM head in FP16 and store every other linear weight in
`bits` bits plus one FP16 scale and one packed zero point per `group_size` weights (AutoGPTQ format).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelProfile:
    hugging_face_id: str
    parameters: float  # total parameter count
    layers: int
    hidden_size: int
    kv_heads: int
    head_dim: int
    vocab_size: int
    tied_embeddings: bool = False
    weight_bits: int = 16  # 16 = FP16/BF16; 4 = GPTQ 4-bit
    group_size: int = 128  # GPTQ quantization group
    kv_cache_bytes: int = 2  # FP16/BF16 KV cache; 1 with --kv-cache-dtype fp8

    @property
    def embedding_parameters(self) -> float:
        """Input embedding plus LM head (one matrix when tied); kept in FP16 by GPTQ."""
        return self.vocab_size * self.hidden_size * (1 if self.tied_embeddings else 2)

    @property
    def weight_bytes(self) -> float:
        """Bytes of weights read per forward pass (whole model, all tensor-parallel ranks)."""
        if self.weight_bits >= 16:
            return self.parameters * 2
        linear = self.parameters - self.embedding_parameters
        per_weight = self.weight_bits / 8 + 2 / self.group_size + (self.weight_bits / 8) / self.group_size
        return self.embedding_parameters * 2 + linear * per_weight

    @property
    def weights_gb(self) -> float:
        return self.weight_bytes / 1e9

    @property
    def kv_bytes_per_token(self) -> int:
        """KV-cache bytes one token occupies across all layers (whole model, all ranks)."""
        return self.layers * 2 * self.kv_heads * self.head_dim * self.kv_cache_bytes

    @property
    def flops_per_token(self) -> float:
        """Forward FLOPs per token (2 per parameter, attention's context term ignored at these lengths)."""
        return 2 * self.parameters


def _mistral_7b(hugging_face_id: str, weight_bits: int = 16) -> ModelProfile:
    # mistralai/Mistral-7B-Instruct-v0.2 config.json: 32 layers, hidden 4096, 32 heads, 8 KV heads.
    return ModelProfile(hugging_face_id, 7.24e9, 32, 4096, 8, 128, 32000, weight_bits=weight_bits)


def _llama3_8b(hugging_face_id: str) -> ModelProfile:
    # Llama-3/3.1-8B config.json: 32 layers, hidden 4096, 32 heads, 8 KV heads, vocab 128256.
    return ModelProfile(hugging_face_id, 8.03e9, 32, 4096, 8, 128, 128256)


PROFILES: dict[str, ModelProfile] = {
    p.hugging_face_id: p
    for p in (
        _mistral_7b("mistralai/Mistral-7B-Instruct-v0.2"),
        # The seed article's "Mistral-7B-Instruct (4-bit GPTQ)": TheBloke's GPTQ build (main branch: 4 bits,
        # group size 128); its model.safetensors is 4.16 GB, which weight_bytes reproduces (4.15 GB).
        _mistral_7b("TheBloke/Mistral-7B-Instruct-v0.2-GPTQ", weight_bits=4),
        # Qwen/Qwen2.5-1.5B-Instruct config.json: 28 layers, hidden 1536, 12 heads, 2 KV heads, tied embeddings.
        ModelProfile(
            "Qwen/Qwen2.5-1.5B-Instruct",
            parameters=1.54e9,
            layers=28,
            hidden_size=1536,
            kv_heads=2,
            head_dim=128,
            vocab_size=151936,
            tied_embeddings=True,
        ),
        # meta-llama/Llama-3.1-70B-Instruct config.json: 80 layers, hidden 8192, 64 heads, 8 KV heads.
        ModelProfile(
            "meta-llama/Llama-3.1-70B-Instruct",
            parameters=70.6e9,
            layers=80,
            hidden_size=8192,
            kv_heads=8,
            head_dim=128,
            vocab_size=128256,
        ),
        # Qwen/Qwen2.5-0.5B-Instruct config.json: 24 layers, hidden 896, 14 heads, 2 KV heads (head dim 64),
        # tied embeddings; the model of the L4 concurrency sweep (simulator/serving/calibration.py).
        ModelProfile(
            "Qwen/Qwen2.5-0.5B-Instruct",
            parameters=0.494e9,
            layers=24,
            hidden_size=896,
            kv_heads=2,
            head_dim=64,
            vocab_size=151936,
            tied_embeddings=True,
        ),
        # Qwen/Qwen2-7B-Instruct config.json: 28 layers, hidden 3584, 28 heads, 4 KV heads; the model of the
        # A100 burst sweep (simulator/serving/calibration.py; 57,344 KV bytes/token, vllm_capacity_points.md §3.5).
        ModelProfile(
            "Qwen/Qwen2-7B-Instruct",
            parameters=7.62e9,
            layers=28,
            hidden_size=3584,
            kv_heads=4,
            head_dim=128,
            vocab_size=152064,
        ),
        # Qwen/Qwen3-8B config.json: 36 layers, hidden 4096, 32 heads, 8 KV heads, head_dim 128, vocab 151936,
        # untied embeddings; 8.19B parameters (model card). The model of the H100 C=4 point (calibration.py).
        ModelProfile(
            "Qwen/Qwen3-8B",
            parameters=8.19e9,
            layers=36,
            hidden_size=4096,
            kv_heads=8,
            head_dim=128,
            vocab_size=151936,
        ),
        # Qwen/Qwen2-72B config.json: 80 layers, hidden 8192, 64 heads, 8 KV heads, vocab 152064; 72.7B
        # parameters (model card). The model of the A100 TP2 bursts (calibration.py).
        ModelProfile(
            "Qwen/Qwen2-72B",
            parameters=72.7e9,
            layers=80,
            hidden_size=8192,
            kv_heads=8,
            head_dim=128,
            vocab_size=152064,
        ),
        # Llama-3/3.1-8B: the model of the published capacity measurements (autoscaling_sim.md §5.1, §5.4).
        _llama3_8b("meta-llama/Meta-Llama-3-8B-Instruct"),
        _llama3_8b("meta-llama/Llama-3.1-8B-Instruct"),
    )
}


class UnknownModelError(KeyError):
    """A Hugging Face id with no geometry here; the message lists the known ids."""

    def __str__(self) -> str:
        return str(self.args[0])


def profile(hugging_face_id: str) -> ModelProfile:
    """Geometry of a model by Hugging Face id; unknown ids fail naming the id and the known ones."""
    try:
        return PROFILES[hugging_face_id]
    except KeyError:
        raise UnknownModelError(
            f"no model profile for {hugging_face_id!r}; known: {', '.join(sorted(PROFILES))}. "
            "Add its geometry (from config.json) to facts/model_profiles.py"
        ) from None
