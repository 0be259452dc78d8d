//! Names stay distinguishable: in every markdown table of `check` and `report`, two different
//! kernels never read the same, the MI355X run's two MoE GEMMs included (their names differ only
//! in template arguments past the 96th character).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::common::{synth_run, tracegate};
use tracegate::testing::untruncated_short_name;

/// Every string in a JSON document, made readable as tables make names readable.
fn readable_strings(v: &serde_json::Value, out: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::String(s) => {
            out.insert(untruncated_short_name(s));
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| readable_strings(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| readable_strings(x, out)),
        _ => {}
    }
}

/// Whether `label` (a cut name: pieces joined by `…`) can be a cut of `full`.
fn could_be(label: &str, full: &str) -> bool {
    let pieces: Vec<&str> = label.split('…').collect();
    if pieces.len() == 1 {
        return label == full;
    }
    let (first, last) = (pieces[0], pieces[pieces.len() - 1]);
    if !full.starts_with(first) || !full.ends_with(last) {
        return false;
    }
    let mut at = first.len();
    for p in &pieces[1..pieces.len() - 1] {
        match full[at..].find(p) {
            Some(i) => at += i + p.len(),
            None => return false,
        }
    }
    at <= full.len() - last.len()
}

/// The markdown tables of a document: each a list of rows of cells. A table's rows folded
/// under `<details><summary>N more …` (the same header) are one list with the rows shown.
fn tables(markdown: &str) -> Vec<Vec<Vec<String>>> {
    let mut out: Vec<Vec<Vec<String>>> = Vec::new();
    let mut current: Vec<Vec<String>> = Vec::new();
    // The last table ended just before a `N more` fold: its folded rows continue it.
    let mut continues = false;
    let more = regex::Regex::new(r"^<details><summary>[0-9]+ more ").unwrap();
    for line in markdown.lines() {
        if more.is_match(line) {
            continues = !out.is_empty();
            continue;
        }
        if line.starts_with('|') {
            let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
            // `\|` inside a cell is not a separator.
            let cells = inner
                .replace("\\|", "\u{0}")
                .split('|')
                .map(|c| c.trim().replace('\u{0}', "|"))
                .collect();
            current.push(cells);
        } else if !current.is_empty() {
            let table = std::mem::take(&mut current);
            match out.last_mut() {
                Some(last) if continues && last[0] == table[0] => {
                    last.extend(table.into_iter().skip(2));
                }
                _ => out.push(table),
            }
            continues = false;
        } else if !line.trim().is_empty() {
            continues = false;
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// A code-span cell's text, `None` for other cells.
fn code(cell: &str) -> Option<&str> {
    let fence = cell.len() - cell.trim_start_matches('`').len();
    if fence == 0 || cell.len() < 2 * fence {
        return None;
    }
    let inner = &cell[fence..cell.len() - fence];
    Some(
        inner
            .strip_prefix(' ')
            .and_then(|i| i.strip_suffix(' '))
            .unwrap_or(inner),
    )
}

/// Asserts that in each table, a label two rows share is the label of one name only: two
/// different names of `names` in one table never render the same. Returns the labels seen.
fn assert_distinct(what: &str, markdown: &str, names: &BTreeSet<String>) -> Vec<String> {
    let mut seen = Vec::new();
    for (t, table) in tables(markdown).iter().enumerate() {
        let columns = table.iter().map(Vec::len).max().unwrap_or(0);
        for col in 0..columns {
            let mut rows: BTreeMap<&str, usize> = BTreeMap::new();
            for row in table.iter().skip(2) {
                if let Some(label) = row.get(col).and_then(|c| code(c)) {
                    *rows.entry(label).or_default() += 1;
                }
            }
            for (label, n) in rows {
                seen.push(label.to_string());
                let matching: Vec<&String> = names.iter().filter(|f| could_be(label, f)).collect();
                // One row per label is one name; rows that share a label must share the name
                // (a kernel listed once per GEMM shape, say).
                assert!(
                    n == 1 || matching.len() <= 1,
                    "{what}, table {t}, column {col}: `{label}` ({n} rows) reads as {} names: {matching:#?}",
                    matching.len()
                );
            }
        }
    }
    seen
}

fn mi355x_run(injects: &[&str]) -> std::path::PathBuf {
    let mut args = vec![
        "--scenario",
        "mi355x-dsr1-fp4-tp4",
        "--python-functions-per-step",
        "0",
    ];
    for i in injects {
        args.extend(["--inject", i]);
    }
    synth_run(&args)
}

fn stdout(args: &[&str], run: &Path, extra: &[&Path]) -> String {
    let out = tracegate()
        .args(args)
        .arg(run)
        .args(extra)
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

const MOE: &str = "ck::kernel_moe_mxgemm_2lds<";

#[test]
fn no_two_kernels_read_the_same_in_check_or_report_of_the_mi355x_run() {
    let baseline = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("baselines/dsr1-fp4-mi355x-sglang-tp4-conc64.toml");
    // An image bump: the main MoE GEMM renamed and 10% slower.
    let bump = mi355x_run(&["rename-moe", "moe=1.1"]);
    let check = |format: &str| {
        stdout(
            &["check", "--format", format, "--baseline"],
            &baseline,
            &[bump.as_path()],
        )
    };
    let mut names = BTreeSet::new();
    readable_strings(&serde_json::from_str(&check("json")).unwrap(), &mut names);
    let report_json = stdout(&["report", "--format", "json"], &bump, &[]);
    readable_strings(&serde_json::from_str(&report_json).unwrap(), &mut names);
    let plain = mi355x_run(&[]);
    let report_plain = stdout(&["report", "--format", "json"], &plain, &[]);
    readable_strings(&serde_json::from_str(&report_plain).unwrap(), &mut names);
    let moe: Vec<&String> = names.iter().filter(|n| n.starts_with(MOE)).collect();
    assert!(
        moe.len() >= 3,
        "both MoE GEMMs and the renamed one: {moe:#?}"
    );
    assert!(moe.iter().all(|n| n.chars().count() > 96), "{moe:#?}");

    let markdown = check("markdown");
    let labels = assert_distinct("check", &markdown, &names);
    let moe_labels: BTreeSet<&String> = labels.iter().filter(|l| l.starts_with(MOE)).collect();
    assert!(
        moe_labels.len() >= 2,
        "the MoE GEMMs in check's tables: {markdown}"
    );

    for run in [&bump, &plain] {
        let markdown = stdout(&["report", "--format", "markdown"], run, &[]);
        let labels = assert_distinct("report", &markdown, &names);
        let moe_labels: BTreeSet<&String> = labels.iter().filter(|l| l.starts_with(MOE)).collect();
        assert!(
            moe_labels.len() >= 2,
            "both MoE GEMMs in report's tables: {markdown}"
        );
    }
}

#[test]
fn the_table_checker_sees_two_names_that_read_the_same() {
    // The checker itself: the old head-kept cut of the MoE pair is caught.
    let a = format!("{MOE}ck::GridwiseMoeGemmMX_BPreshuffle<ck::tensor_layout::gemm::RowMajor, ck::tensor_layout::gemm::ColumnMajor, ck::f4x2_pk_t, ck::e8m0_bexp_t, ck::bhalf_t, float, 32, 256, 128, 16, 16, true, 1>, true, 2, (ck::TailNumber)2>");
    let b = a.replace("32, 256, 128", "32, 128, 256");
    let head = |s: &str| s.chars().take(95).collect::<String>() + "…";
    let names: BTreeSet<String> = [a.clone(), b.clone()].into();
    let markdown = format!("| k |\n| --- |\n| `{}` |\n| `{}` |\n", head(&a), head(&b));
    let caught = std::panic::catch_unwind(|| assert_distinct("old", &markdown, &names));
    assert!(caught.is_err());
    let labels = tracegate::testing::distinct_labels(&[&a, &b], 96);
    let markdown = format!("| k |\n| --- |\n| `{}` |\n| `{}` |\n", labels[0], labels[1]);
    assert_eq!(assert_distinct("new", &markdown, &names).len(), 2);
    // A shown row and a folded one are one list: the same label there is caught too.
    let folded = format!(
        "| k |\n| --- |\n| `{}` |\n\n<details><summary>1 more kernels</summary>\n\n| k |\n| --- |\n| `{}` |\n\n</details>\n",
        head(&a),
        head(&b)
    );
    let caught = std::panic::catch_unwind(|| assert_distinct("folded", &folded, &names));
    assert!(caught.is_err());
}
