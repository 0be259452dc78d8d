//! Which rank and stage a file or a process belongs to, from names alone.

use super::model::Stage;

/// The `[TP00]` / `[TP00-DP01-PP00-EP03]` label SGLang's merged file puts in front of each pid,
/// e.g. `"[TP00] 251"`; returns the label and the number after it.
pub(super) fn process_label(pid_text: &str) -> Option<(&str, Option<u64>)> {
    let text = pid_text.trim().trim_matches('"');
    let rest = text.strip_prefix('[')?;
    let close = rest.find(']')?;
    let label = &rest[..close];
    if label.is_empty() {
        return None;
    }
    let after = rest[close + 1..].trim();
    Some((label, after.parse().ok()))
}

/// The numeric rank of a label: the TP index when the label is `TPnn` alone.
pub(super) fn label_tp_index(label: &str) -> Option<u32> {
    label.strip_prefix("TP")?.parse().ok()
}

/// The rank a file name states: SGLang `-TP-3`, HTA `rank-3` / `rank_3`, PARAM `worker3`.
pub(super) fn rank_from_file_name(file_name: &str) -> Option<u32> {
    // A number beyond u32 is kept as u32::MAX, for the rank cap to refuse: never read as no
    // number (which made such a file rank 0).
    rank_digits_from_file_name(file_name).map(|digits| digits.parse().unwrap_or(u32::MAX))
}

/// The digits of the rank a file name states, as written (`99999999999` of `x-TP-99999999999`),
/// for a message about a number too large to be a rank.
pub(super) fn rank_digits_from_file_name(file_name: &str) -> Option<String> {
    const MARKERS: [&str; 5] = ["-TP-", "rank-", "rank_", "worker", "rank"];
    let lower = file_name.to_ascii_lowercase();
    for marker in MARKERS {
        let needle = marker.to_ascii_lowercase();
        if let Some(pos) = lower.find(&needle) {
            let digits: String = lower[pos + needle.len()..]
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect();
            if !digits.is_empty() {
                return Some(digits);
            }
        }
    }
    None
}

/// The data-parallel and tensor-parallel index a rank states, where it states both: vLLM's worker
/// file names (`…_dp1_pp0_tp3_dcp0_ep3_rank7.….pt.trace.json.gz`, vllm-project/vllm#33198) or
/// SGLang's process labels (`TP03-DP01-PP00-EP03`).
pub(super) fn dp_tp_position(file_name: &str, label: &str) -> Option<(u32, u32)> {
    let number_after = |text: &str, marker: &str| -> Option<u32> {
        let at = text.find(marker)? + marker.len();
        let digits: String = text[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    };
    let from_label = || Some((number_after(label, "DP")?, number_after(label, "TP")?));
    let from_name = || {
        let lower = file_name.to_ascii_lowercase();
        // Both markers, the dp one first, as vLLM writes them.
        let dp = lower.find("_dp")?;
        let tp = lower[dp..].find("_tp")? + dp;
        Some((
            number_after(&lower[dp..], "_dp")?,
            number_after(&lower[tp..], "_tp")?,
        ))
    };
    if label.starts_with("TP") {
        from_label()
    } else {
        from_name()
    }
}

/// The stage of an SGLang stage-split file: `-DECODE` / `-decode`, `-EXTEND` / `-prefill`.
pub(super) fn stage_from_file_name(file_name: &str) -> Option<Stage> {
    if file_name.contains("-DECODE") || file_name.contains("-decode") {
        Some(Stage::Decode)
    } else if file_name.contains("-EXTEND")
        || file_name.contains("-prefill")
        || file_name.contains("-PREFILL")
    {
        Some(Stage::Extend)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_pids_carry_labels() {
        assert_eq!(process_label("\"[TP00] 251\""), Some(("TP00", Some(251))));
        assert_eq!(
            process_label("[TP00-DP01-PP00-EP03] 0"),
            Some(("TP00-DP01-PP00-EP03", Some(0)))
        );
        assert_eq!(process_label("251"), None);
        assert_eq!(process_label("\"Spans\""), None);
        assert_eq!(label_tp_index("TP07"), Some(7));
        assert_eq!(label_tp_index("TP00-DP01"), None);
    }

    #[test]
    fn vllm_names_and_sglang_labels_give_dp_and_tp() {
        let vllm = "node-a_4101_dp1_pp0_tp1_dcp0_ep3_rank3.17670000034335423.pt.trace.json.gz";
        assert_eq!(rank_from_file_name(vllm), Some(3));
        assert_eq!(dp_tp_position(vllm, "rank3"), Some((1, 1)));
        assert_eq!(dp_tp_position("x", "TP03-DP01-PP00-EP03"), Some((1, 3)));
        assert_eq!(dp_tp_position("x", "TP03"), None);
        assert_eq!(dp_tp_position("x-TP-3.trace.json.gz", "rank3"), None);
        assert_eq!(dp_tp_position("worker_tp1_dp0.json", "rank1"), None);
    }

    #[test]
    fn file_names_give_ranks_and_stages() {
        assert_eq!(
            rank_from_file_name("1700000000-TP-3-DECODE.trace.json.gz"),
            Some(3)
        );
        assert_eq!(
            rank_from_file_name("1700000000-TP-12-DP-1.trace.json.gz"),
            Some(12)
        );
        // Too large for a rank: kept at u32::MAX for the rank cap, never read as rank 0.
        assert_eq!(
            rank_from_file_name("x-TP-99999999999.trace.json.gz"),
            Some(u32::MAX)
        );
        assert_eq!(
            rank_digits_from_file_name("x-TP-99999999999.trace.json.gz").as_deref(),
            Some("99999999999")
        );
        assert_eq!(rank_from_file_name("rank-5.json.gz"), Some(5));
        assert_eq!(
            rank_from_file_name("worker7_step_12.1694128201553.pt.trace.json"),
            Some(7)
        );
        assert_eq!(rank_from_file_name("profile_trace_rank_0.json.gz"), Some(0));
        assert_eq!(rank_from_file_name("eager_trace.json.gz"), None);
        assert_eq!(
            stage_from_file_name("x-TP-0-DECODE.trace.json.gz"),
            Some(Stage::Decode)
        );
        assert_eq!(
            stage_from_file_name("x-TP-0-EXTEND.trace.json.gz"),
            Some(Stage::Extend)
        );
        assert_eq!(
            stage_from_file_name("x-TP-0-prefill.trace.json.gz"),
            Some(Stage::Extend)
        );
        assert_eq!(stage_from_file_name("x-TP-0.trace.json.gz"), None);
    }
}
