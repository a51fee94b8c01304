"""config.json -> ModelShape, for the published configs of well-known models."""

from __future__ import annotations

import pytest

from roundhouse.api.fit import CacheType
from roundhouse.core.errors import InvalidInputError
from roundhouse.core.knowledge.fit import kv_bytes_per_token
from roundhouse.core.knowledge.hf_config import shape_from_hf_config
from roundhouse.core.knowledge.shape import WeightFormat

ST, MLX = WeightFormat.SAFETENSORS, WeightFormat.MLX
F16 = CacheType.F16

# The fields that matter, as the repositories' config.json files publish them.
LLAMA_3_1_8B = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "max_position_embeddings": 131072,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "vocab_size": 128256,
}
QWEN_2_5_7B = {
    "model_type": "qwen2",
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "max_position_embeddings": 32768,
    "num_attention_heads": 28,
    "num_hidden_layers": 28,
    "num_key_value_heads": 4,
    "sliding_window": 131072,
    "use_sliding_window": False,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "vocab_size": 152064,
}
GEMMA_2_9B = {
    "model_type": "gemma2",
    "head_dim": 256,
    "hidden_size": 3584,
    "intermediate_size": 14336,
    "max_position_embeddings": 8192,
    "num_attention_heads": 16,
    "num_hidden_layers": 42,
    "num_key_value_heads": 8,
    "sliding_window": 4096,
    "torch_dtype": "float32",
    "vocab_size": 256000,
}
GEMMA_3_4B = {  # multimodal: the language model lives in text_config
    "model_type": "gemma3",
    "architectures": ["Gemma3ForConditionalGeneration"],
    "text_config": {
        "model_type": "gemma3_text",
        "head_dim": 256,
        "hidden_size": 2560,
        "intermediate_size": 10240,
        "num_attention_heads": 8,
        "num_hidden_layers": 34,
        "num_key_value_heads": 4,
        "sliding_window": 1024,
        "sliding_window_pattern": 6,
        "max_position_embeddings": 131072,
        "vocab_size": 262208,
    },
    "torch_dtype": "bfloat16",
    "vision_config": {"hidden_size": 1152, "num_hidden_layers": 27},
}
MIXTRAL_8X7B = {
    "model_type": "mixtral",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "max_position_embeddings": 32768,
    "num_attention_heads": 32,
    "num_experts_per_tok": 2,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "num_local_experts": 8,
    "sliding_window": None,
    "torch_dtype": "bfloat16",
    "vocab_size": 32000,
}
QWEN3_30B_A3B = {
    "model_type": "qwen3_moe",
    "head_dim": 128,
    "hidden_size": 2048,
    "intermediate_size": 6144,
    "moe_intermediate_size": 768,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "num_hidden_layers": 48,
    "max_position_embeddings": 40960,
    "mlp_only_layers": [],
    "torch_dtype": "bfloat16",
    "vocab_size": 151936,
}
DEEPSEEK_V2_LITE = {
    "model_type": "deepseek_v2",
    "hidden_size": 2048,
    "intermediate_size": 10944,
    "moe_intermediate_size": 1408,
    "n_routed_experts": 64,
    "n_shared_experts": 2,
    "num_experts_per_tok": 6,
    "first_k_dense_replace": 1,
    "kv_lora_rank": 512,
    "q_lora_rank": None,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "num_hidden_layers": 27,
    "max_position_embeddings": 163840,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "vocab_size": 102400,
}
LLAMA_3_2_3B_MLX_4BIT = {  # mlx-community/Llama-3.2-3B-Instruct-4bit
    "model_type": "llama",
    "hidden_size": 3072,
    "intermediate_size": 8192,
    "max_position_embeddings": 131072,
    "num_attention_heads": 24,
    "num_hidden_layers": 28,
    "num_key_value_heads": 8,
    "quantization": {"group_size": 64, "bits": 4},
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "vocab_size": 128256,
}
PHI_3_MINI = {
    "model_type": "phi3",
    "hidden_size": 3072,
    "intermediate_size": 8192,
    "max_position_embeddings": 4096,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 32,
    "sliding_window": 2047,
    "torch_dtype": "bfloat16",
    "vocab_size": 32064,
}


def near(counted: int, published: int) -> bool:
    """Within 0.01%: the count leaves out norms and biases (Llama-3.1-8B: 266k)."""
    return abs(counted - published) < 1e-4 * published


def test_llama_shape_and_weight_split() -> None:
    shape = shape_from_hf_config(LLAMA_3_1_8B, 16_060_522_496, ST)
    assert (shape.n_layer, shape.n_embd, shape.n_head, shape.n_head_kv) == (32, 4096, 32, 8)
    assert (shape.key_length, shape.value_length, shape.context_length) == (128, 128, 131072)
    assert shape.weight_bytes == 16_060_522_496
    # Embeddings and head: 128256 x 4096 x 2 bytes each; the rest evenly over 32 layers.
    assert shape.embedding_bytes == shape.output_bytes == 128256 * 4096 * 2
    assert shape.other_bytes == 2 * 128256 * 4096 * 2
    assert max(shape.layer_bytes) - min(shape.layer_bytes) < 32
    assert shape.feed_forward_length == 14336
    assert shape.quantization == "BF16"
    # Published: 8,030,261,248 parameters.
    assert near(shape.parameter_count, 8_030_261_248)
    assert kv_bytes_per_token(shape, F16, F16) == 128 * 1024


def test_qwen_window_that_is_switched_off_is_not_a_window() -> None:
    shape = shape_from_hf_config(QWEN_2_5_7B, 15_231_233_024, ST)
    assert shape.sliding_window is None and not any(shape.swa_layers)
    assert (shape.n_head_kv, shape.feed_forward_length) == (4, 18944)
    assert near(shape.parameter_count, 7_615_616_512)


def test_gemma_2_alternates_windowed_layers_and_ties_its_head() -> None:
    shape = shape_from_hf_config(GEMMA_2_9B, 36_972_880_896, ST)
    assert shape.sliding_window == 4096
    assert shape.swa_layers[:4] == (True, False, True, False) and sum(shape.swa_layers) == 21
    assert (shape.key_length, shape.value_length) == (256, 256)
    assert shape.quantization == "F32"
    embd = 256000 * 3584 * 4
    assert shape.other_bytes == embd  # tied: one table
    assert shape.output_bytes == embd  # which llama.cpp would load again for the GPU
    assert near(shape.parameter_count, 9_241_705_984)


def test_gemma_3_reads_text_config_and_its_window_pattern() -> None:
    shape = shape_from_hf_config(GEMMA_3_4B, 8_600_000_000, ST)
    assert shape.architecture == "gemma3_text"
    assert (shape.n_layer, shape.n_embd, shape.n_head_kv, shape.key_length) == (34, 2560, 4, 256)
    assert shape.context_length == 131072 and shape.vocab_size == 262208
    # One global layer in six: layers 5, 11, 17, ... attend to everything.
    assert [i for i, w in enumerate(shape.swa_layers) if not w] == [5, 11, 17, 23, 29]
    assert shape.quantization == "BF16"  # the dtype from the top level


def test_layer_types_list_wins() -> None:
    config = {**GEMMA_2_9B, "layer_types": ["full_attention", "sliding_attention"] * 21}
    shape = shape_from_hf_config(config, 36_972_880_896, ST)
    assert shape.swa_layers[:2] == (False, True)


def test_mixtral_experts() -> None:
    shape = shape_from_hf_config(MIXTRAL_8X7B, 93_405_585_408, ST)
    assert (shape.n_expert, shape.n_expert_used) == (8, 2)
    assert shape.sliding_window is None
    assert shape.feed_forward_length == 2 * 14336
    assert near(shape.parameter_count, 46_702_792_704)


def test_qwen3_moe_experts_with_a_written_head_dim() -> None:
    shape = shape_from_hf_config(QWEN3_30B_A3B, 61_064_000_000, ST)
    assert (shape.n_expert, shape.n_expert_used, shape.key_length) == (128, 8, 128)
    assert shape.feed_forward_length == 8 * 768
    assert abs(shape.parameter_count - 30_532_122_624) < 0.01 * 30_532_122_624


def test_deepseek_v2_lite_mla() -> None:
    shape = shape_from_hf_config(DEEPSEEK_V2_LITE, 31_412_968_448, ST)
    assert shape.kv_lora_rank == 512 and shape.rope_dim == 64 and shape.n_head_kv == 1
    assert (shape.key_length, shape.value_length) == (192, 128)
    assert kv_bytes_per_token(shape, F16, F16) == 27 * 576 * 2
    # The widest MLP: 6 routed + 2 shared experts of 1408 beat the dense first layer.
    assert shape.feed_forward_length == 8 * 1408
    assert abs(shape.parameter_count - 15_706_484_224) < 0.01 * 15_706_484_224


def test_mlx_quantization_sets_bytes_per_weight_and_name() -> None:
    shape = shape_from_hf_config(LLAMA_3_2_3B_MLX_4BIT, 1_807_172_608, MLX)
    assert shape.format == MLX and shape.quantization == "4bit"
    # 4 bits + a 16-bit scale and bias per 64 weights: 0.5625 bytes a weight; tied head.
    assert shape.embedding_bytes == int(128256 * 3072 * 0.5625)
    assert shape.other_bytes == shape.embedding_bytes
    assert near(shape.parameter_count, 3_212_749_824)


def test_caller_names_the_quantization() -> None:
    shape = shape_from_hf_config(LLAMA_3_1_8B, 5_700_000_000, ST, quantization="AWQ-4bit")
    assert shape.quantization == "AWQ-4bit"
    awq = {**LLAMA_3_1_8B, "quantization_config": {"quant_method": "awq", "bits": 4}}
    assert shape_from_hf_config(awq, 5_700_000_000, ST).quantization == "AWQ-4bit"


def test_phi3_window_is_ignored_as_llama_cpp_does() -> None:
    shape = shape_from_hf_config(PHI_3_MINI, 7_642_181_632, ST)
    assert shape.sliding_window is None


def test_an_overstated_table_leaves_the_layers_something() -> None:
    shape = shape_from_hf_config(LLAMA_3_1_8B, 1_000_000_000, ST)
    assert shape.other_bytes == 500_000_000 and min(shape.layer_bytes) > 0
    assert shape.weight_bytes == 1_000_000_000


@pytest.mark.parametrize(
    ("config", "words"),
    [
        ({"model_type": "llama"}, "num_hidden_layers is missing"),
        ({**LLAMA_3_1_8B, "hidden_size": "4096"}, "hidden_size is '4096'"),
        ({**LLAMA_3_1_8B, "num_attention_heads": 0}, "without layers, width or heads"),
        ({**LLAMA_3_1_8B, "num_hidden_layers": -1}, "num_hidden_layers is -1"),
    ],
)
def test_bad_configs_say_what_is_wrong(config: dict[str, object], words: str) -> None:
    with pytest.raises(InvalidInputError, match=words):
        shape_from_hf_config(config, 1_000_000, ST)


def test_weights_must_have_a_size() -> None:
    with pytest.raises(InvalidInputError, match="no size"):
        shape_from_hf_config(LLAMA_3_1_8B, 0, ST)
