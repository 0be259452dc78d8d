//! The baselines shipped in `baselines/`, compiled in so that `tracegate demo` needs no files.

/// (synth scenario, file name, TOML text) of every shipped baseline.
pub(crate) const SHIPPED: [(&str, &str, &str); 8] = [
    (
        "mi355x-dsr1-fp4-tp4",
        "dsr1-fp4-mi355x-sglang-tp4-conc64.toml",
        include_str!("../../baselines/dsr1-fp4-mi355x-sglang-tp4-conc64.toml"),
    ),
    (
        "b200-dsr1-fp4-tp4-ep4",
        "dsr1-fp4-b200-sglang-tp4-ep4-conc64.toml",
        include_str!("../../baselines/dsr1-fp4-b200-sglang-tp4-ep4-conc64.toml"),
    ),
    (
        "h200-dsr1-fp8-tp8",
        "dsr1-fp8-h200-sglang-tp8-conc64.toml",
        include_str!("../../baselines/dsr1-fp8-h200-sglang-tp8-conc64.toml"),
    ),
    (
        "mi325x-dsr1-fp8-tp8",
        "dsr1-fp8-mi325x-sglang-tp8-conc64.toml",
        include_str!("../../baselines/dsr1-fp8-mi325x-sglang-tp8-conc64.toml"),
    ),
    (
        "vllm-eager",
        "dsr1-fp4-mi355x-vllm-eager-tp4-conc64.toml",
        include_str!("../../baselines/vllm/dsr1-fp4-mi355x-vllm-eager-tp4-conc64.toml"),
    ),
    (
        "vllm-piecewise",
        "dsr1-fp4-mi355x-vllm-piecewise-tp4-conc64.toml",
        include_str!("../../baselines/vllm/dsr1-fp4-mi355x-vllm-piecewise-tp4-conc64.toml"),
    ),
    (
        "mi355x-dsr1-fp4-tp4-mtp",
        "dsr1-fp4-mi355x-sglang-tp4-mtp-conc64.toml",
        include_str!("../../baselines/mtp/dsr1-fp4-mi355x-sglang-tp4-mtp-conc64.toml"),
    ),
    (
        "vllm-stock",
        "dsr1-fp4-mi355x-vllm-stock-tp4-conc64.toml",
        include_str!("../../baselines/vllm/dsr1-fp4-mi355x-vllm-stock-tp4-conc64.toml"),
    ),
];

/// The shipped baseline of a synth scenario: (file name, text).
pub(crate) fn for_scenario(scenario: &str) -> Option<(&'static str, &'static str)> {
    SHIPPED
        .iter()
        .find(|(s, _, _)| *s == scenario)
        .map(|(_, f, t)| (*f, *t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_baseline_parses_and_every_scenario_has_one() {
        for (scenario, file, text) in SHIPPED {
            let path = std::path::Path::new(file);
            super::super::Baseline::parse(text, path).unwrap();
            assert!(crate::synth::scenario_names().contains(&scenario));
        }
        assert_eq!(SHIPPED.len(), crate::synth::scenario_names().len());
    }
}
