//! The run's identity: the image it ran in and free `KEY=VALUE` pairs (sglang version, commit,
//! driver...), from `--image` and `--meta` or, for what the command line leaves out,
//! `TRACEGATE_IMAGE` and `TRACEGATE_META_<KEY>` in the environment. `check` and `sweep` show it
//! beside the baseline's; `baseline new|update` record it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The image and pairs a run was made with; both optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// The container image, e.g. `lmsysorg/sglang:v0.5.4-rocm700`.
    #[serde(default)]
    pub image: Option<String>,
    /// Free pairs, by key.
    #[serde(default)]
    pub meta: BTreeMap<String, String>,
}

/// Prefix of the environment variables that add pairs.
pub(crate) const META_ENV_PREFIX: &str = "TRACEGATE_META_";
/// Keys `--meta` cannot set: the image has its own flag, the rest are written by tracegate.
const RESERVED: [&str; 3] = ["image", "previous_image", "extra"];

fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// The identity from `--image` (`image`) and the `--meta` pairs (`meta`, `KEY=VALUE` each), and
/// for what they leave out, `env` (the process's environment in use). Empty values in the
/// environment count as unset (a workflow passes empty inputs as empty strings).
pub fn resolve(
    image: Option<&str>,
    meta: &[String],
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<Identity, String> {
    let mut identity = Identity::default();
    for (name, value) in env {
        let value = value.trim().to_string();
        if value.is_empty() {
            continue;
        }
        if name == "TRACEGATE_IMAGE" {
            identity.image = Some(value);
        } else if let Some(key) = name.strip_prefix(META_ENV_PREFIX) {
            let key = key.to_ascii_lowercase();
            check_key(&key).map_err(|why| format!("{name}: {why}"))?;
            identity.meta.insert(key, value);
        }
    }
    if let Some(image) = image {
        let image = image.trim();
        if image.is_empty() {
            return Err("--image: empty".into());
        }
        identity.image = Some(image.to_string());
    }
    for pair in meta {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(format!("--meta {pair:?}: expected KEY=VALUE"));
        };
        let key = key.trim();
        check_key(key).map_err(|why| format!("--meta {pair:?}: {why}"))?;
        identity
            .meta
            .insert(key.to_string(), value.trim().to_string());
    }
    Ok(identity)
}

impl Identity {
    /// This identity with what the traces say of who made them (`vllm` from `vllm_version`,
    /// `host`, `job`... from Kineto's top-level keys) for the keys it does not set: the command
    /// line and the environment win. Ranks that differ (several hosts) show the first two values
    /// and how many more.
    pub fn with_producer(mut self, run: &crate::reader::Run) -> Identity {
        let mut values: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for t in &run.traces {
            for (key, value) in &t.producer {
                let seen = values.entry(key).or_default();
                if !seen.contains(&value.as_str()) {
                    seen.push(value);
                }
            }
        }
        for (key, seen) in values {
            if self.meta.contains_key(key) || check_key(key).is_err() {
                continue;
            }
            let mut text = seen[..seen.len().min(2)].join(", ");
            if seen.len() > 2 {
                text.push_str(&format!(" (+{} more)", seen.len() - 2));
            }
            self.meta.insert(key.to_string(), text);
        }
        self
    }
}

fn check_key(key: &str) -> Result<(), String> {
    if !valid_key(key) {
        return Err(format!(
            "the key {key:?} is not letters, digits, '_', '-' or '.'"
        ));
    }
    if RESERVED.contains(&key) {
        return Err(match key {
            "image" => "the image has its own option, --image (or TRACEGATE_IMAGE)".into(),
            _ => format!("{key} is written by tracegate"),
        });
    }
    Ok(())
}

/// "a → b", "a" when both are the same, "a → —" or "— → b" when one is unknown, each value
/// shown by `show`; `None` when neither is known.
pub(crate) fn transition(
    before: Option<&str>,
    after: Option<&str>,
    show: impl Fn(&str) -> String,
) -> Option<String> {
    match (before, after) {
        (Some(b), Some(a)) if a == b => Some(show(a)),
        (Some(b), Some(a)) => Some(format!("{} → {}", show(b), show(a))),
        (Some(b), None) => Some(format!("{} → —", show(b))),
        (None, Some(a)) => Some(format!("— → {}", show(a))),
        (None, None) => None,
    }
}

/// The serving framework a run's trace tells, where it tells: SGLang by its `step[...]`
/// annotations, its `-TP-` file names, its process labels (`[TP00]` in a merged file) or its
/// `sglang::`/`sgl_kernel::` ops; vLLM by its `vllm::` ops (custom ops and attention). SGLang's
/// evidence wins: older SGLang calls vLLM's custom ops. `None` when nothing tells (then
/// `--key framework=NAME` does).
pub(crate) fn framework_of(run: &crate::reader::Run) -> Option<&'static str> {
    use crate::reader::model::RankSource;
    let mut vllm = false;
    for t in &run.traces {
        let file = t
            .file
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        if file.contains("-TP-") || t.rank.source == RankSource::ProcessLabel {
            return Some("sglang");
        }
        if t.annotations
            .iter()
            .any(|a| t.name(a.name).starts_with("step["))
        {
            return Some("sglang");
        }
        let mut seen = std::collections::HashSet::new();
        for op in &t.cpu_ops {
            if !seen.insert(op.name) {
                continue;
            }
            let name = t.name(op.name);
            if ["sglang::", "sgl_kernel::", "sglang_profiler::"]
                .iter()
                .any(|p| name.starts_with(p))
            {
                return Some("sglang");
            }
            vllm |= name.starts_with("vllm::");
        }
    }
    vllm.then_some("vllm")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn args(image: Option<&str>, meta: &[&str]) -> (Option<String>, Vec<String>) {
        (
            image.map(str::to_string),
            meta.iter().map(|s| s.to_string()).collect(),
        )
    }

    fn resolve(
        (image, meta): &(Option<String>, Vec<String>),
        env: Vec<(String, String)>,
    ) -> Result<Identity, String> {
        super::resolve(image.as_deref(), meta, env)
    }

    #[test]
    fn the_command_line_wins_over_the_environment() {
        let id = resolve(
            &args(Some("sglang:v0.5.4"), &["sglang=0.5.4", "commit=abc"]),
            env(&[
                ("TRACEGATE_IMAGE", "sglang:v0.5.3"),
                ("TRACEGATE_META_SGLANG", "0.5.3"),
                ("TRACEGATE_META_GPU_DRIVER", "6.4.1"),
                ("TRACEGATE_MAX_MEMORY", "4G"),
            ]),
        )
        .unwrap();
        assert_eq!(id.image.as_deref(), Some("sglang:v0.5.4"));
        let meta: Vec<_> = id.meta.iter().map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(meta, ["commit=abc", "gpu_driver=6.4.1", "sglang=0.5.4"]);
    }

    #[test]
    fn the_environment_alone_and_empty_values_count_as_unset() {
        let id = resolve(
            &args(None, &[]),
            env(&[("TRACEGATE_IMAGE", "img:1"), ("TRACEGATE_META_COMMIT", "")]),
        )
        .unwrap();
        assert_eq!(id.image.as_deref(), Some("img:1"));
        assert!(id.meta.is_empty());
        let id = resolve(&args(None, &[]), env(&[("TRACEGATE_IMAGE", " ")])).unwrap();
        assert_eq!(id, Identity::default());
    }

    #[test]
    fn bad_pairs_are_refused_with_the_reason() {
        let err = |meta: &[&str]| resolve(&args(None, meta), env(&[])).unwrap_err();
        assert!(err(&["sglang"]).contains("expected KEY=VALUE"));
        assert!(err(&["=0.5.4"]).contains("is not letters"));
        assert!(err(&["a b=1"]).contains("is not letters"));
        assert!(err(&["image=x"]).contains("--image"));
        assert!(err(&["previous_image=x"]).contains("written by tracegate"));
        let e = resolve(&args(None, &[]), env(&[("TRACEGATE_META_A B", "1")])).unwrap_err();
        assert!(e.starts_with("TRACEGATE_META_A B:"), "{e}");
        assert!(resolve(&args(Some(""), &[]), env(&[])).is_err());
    }

    #[test]
    fn transitions_name_both_sides_or_the_known_one() {
        let code = crate::report::table::code_span;
        assert_eq!(
            transition(Some("v0.5.3"), Some("v0.5.4"), code).unwrap(),
            "`v0.5.3` → `v0.5.4`"
        );
        assert_eq!(transition(Some("v1"), Some("v1"), code).unwrap(), "`v1`");
        assert_eq!(transition(None, Some("v1"), code).unwrap(), "— → `v1`");
        assert_eq!(
            transition(Some("v1"), None, str::to_string).unwrap(),
            "v1 → —"
        );
        assert_eq!(transition(None, None, code), None);
    }
}

#[cfg(test)]
mod framework_tests {
    use super::framework_of;
    use crate::reader::model::CpuOp;
    use crate::testing::{run_of, TraceBuilder, TID};

    /// A one-rank run in a file whose name says nothing (`rank-0.json`) with one op.
    fn with_op(name: &str) -> crate::reader::Run {
        let mut b = TraceBuilder::new(0);
        b.annotation("not a step", 0, 1, TID);
        let (mut trace, classes) = b.build();
        trace.file = "rank-0.json".into();
        let id = trace.names.intern(name);
        trace.cpu_ops.push(CpuOp {
            name: id,
            ts: 0,
            dur: 1,
            tid: TID,
            external_id: None,
            input_dims: None,
            input_types: None,
        });
        run_of(vec![(trace, classes)]).0
    }

    #[test]
    fn the_trace_tells_the_framework_by_its_ops_and_annotations() {
        assert_eq!(
            framework_of(&with_op("vllm::unified_attention_with_output")),
            Some("vllm")
        );
        assert_eq!(
            framework_of(&with_op("sglang::store_cache")),
            Some("sglang")
        );
        assert_eq!(framework_of(&with_op("aten::mm")), None);
        let mut b = TraceBuilder::new(0);
        b.annotation("step[DECODE bs=1]", 0, 1, TID);
        let (mut trace, classes) = b.build();
        trace.file = "rank-0.json".into();
        assert_eq!(
            framework_of(&run_of(vec![(trace, classes)]).0),
            Some("sglang")
        );
        // SGLang's per-rank file names.
        let (trace, classes) = TraceBuilder::new(0).build();
        assert_eq!(
            framework_of(&run_of(vec![(trace, classes)]).0),
            Some("sglang")
        );
    }
}
