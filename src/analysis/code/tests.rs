use super::scope::{module_class, scope_of};

fn stack(frames: &[&str]) -> Vec<String> {
    frames.iter().map(|f| f.to_string()).collect()
}

#[test]
fn a_module_frame_loses_its_instance_number_and_is_the_scope() {
    assert_eq!(module_class("nn.Module: FusedMoE_3"), "nn.Module: FusedMoE");
    assert_eq!(module_class("nn.Module: Linear"), "nn.Module: Linear");
    assert_eq!(module_class("nn.Module: Block_x"), "nn.Module: Block_x");
    let python = stack(&[
        "sglang/srt/models/deepseek_v2.py(2035): forward",
        "nn.Module: DeepseekV2DecoderLayer_7",
        "torch/nn/modules/module.py(1773): _call_impl",
        "nn.Module: FusedMoE_7",
        "sglang/srt/layers/moe/fused_moe_triton/layer.py(812): forward",
    ]);
    assert_eq!(scope_of(&python, 1).as_deref(), Some("nn.Module: FusedMoE"));
    assert_eq!(
        scope_of(&python, 2).as_deref(),
        Some("nn.Module: DeepseekV2DecoderLayer › nn.Module: FusedMoE")
    );
}

#[test]
fn without_module_frames_the_innermost_frame_of_the_models_code_is_the_scope() {
    let python = stack(&[
        "vllm/model_executor/models/qwen2.py(94): forward",
        "torch/nn/modules/linear.py(125): forward",
        "<built-in function linear>",
    ]);
    assert_eq!(
        scope_of(&python, 1).as_deref(),
        Some("vllm/model_executor/models/qwen2.py(94): forward")
    );
    assert_eq!(
        scope_of(&stack(&["threading.py(1032): _bootstrap"]), 1),
        None
    );
    assert_eq!(scope_of(&[], 3), None);
}
