//! The Python scope of a site: the innermost `nn.Module: Name_N` frame where the stack has one
//! (its instance number dropped, so that 58 layers are one scope), else the innermost frame
//! outside the framework's own files (`qwen2.py(94): forward` as Kineto writes it). With a depth
//! of N, the N innermost such frames, outermost first.

/// Files of PyTorch, the Python runtime and the tools around them: never a scope.
const FRAMEWORK_FILES: &[&str] = &[
    "torch/",
    "site-packages/torch",
    "threading.py",
    "contextlib.py",
    "functools.py",
    "runpy.py",
    "multiprocessing/",
    "concurrent/",
    "asyncio/",
    "selectors.py",
    "queue.py",
    "tqdm/",
    "triton/",
    "typing.py",
    "abc.py",
    "enum.py",
];

/// The scope frames to show by default: the innermost one.
pub(crate) const DEFAULT_DEPTH: usize = 1;

const MODULE_PREFIX: &str = "nn.Module: ";

/// `nn.Module: FusedMoE_3` → `nn.Module: FusedMoE`; any other frame as it is.
pub(crate) fn module_class(frame: &str) -> &str {
    match frame.strip_prefix(MODULE_PREFIX) {
        Some(class) => {
            let cut = class.rfind('_').filter(|&at| {
                at + 1 < class.len() && class[at + 1..].bytes().all(|b| b.is_ascii_digit())
            });
            &frame[..MODULE_PREFIX.len() + cut.unwrap_or(class.len())]
        }
        None => frame,
    }
}

fn is_framework(frame: &str) -> bool {
    frame.starts_with('<') || FRAMEWORK_FILES.iter().any(|f| frame.contains(f))
}

/// The scope of a stack (outermost first) at `depth` frames, joined by ` › `; `None` when the
/// stack has no module frame and no frame of its own code.
pub(crate) fn scope_of(python: &[String], depth: usize) -> Option<String> {
    let modules: Vec<&str> = python
        .iter()
        .filter(|f| f.starts_with(MODULE_PREFIX))
        .map(|f| module_class(f))
        .collect();
    let frames = if modules.is_empty() {
        python
            .iter()
            .map(String::as_str)
            .filter(|f| !is_framework(f))
            .collect()
    } else {
        modules
    };
    let from = frames.len().saturating_sub(depth.max(1));
    (!frames.is_empty()).then(|| frames[from..].join(" › "))
}

/// The instance numbers of the innermost module frame (`FusedMoE_3` → 3), for counting layers.
pub(crate) fn innermost_instance(python: &[String]) -> Option<(String, u64)> {
    let frame = python.iter().rev().find(|f| f.starts_with(MODULE_PREFIX))?;
    let class = module_class(frame);
    let number = frame[class.len()..].trim_start_matches('_').parse().ok()?;
    Some((class.to_string(), number))
}
