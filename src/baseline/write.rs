//! Writing a run's figures into a baseline, keeping what people wrote: tolerances, directions,
//! `gate = false`, comments and key order survive (`toml_edit`). `[breakdown]` is the tool's own
//! section and is rewritten whole.

use toml_edit::{value, ArrayOfTables, DocumentMut, Item, Table, TableLike};

use super::Meta;
use crate::metrics::catalog::{MetricDef, MetricId, Samples, StartTolerance, METRICS};
use crate::metrics::Extraction;
use crate::stats::robust_spread;

/// The tolerance a metric starts with for this run (the registry's starting tolerance): wide
/// enough for step-to-step and run-to-run noise of a steady decode, tight enough to catch a slower
/// kernel library; a share of the decode step where the noise grows with it.
fn starting_tolerance(def: &MetricDef, x: &Extraction) -> String {
    match (def.tolerance, x.metrics.get(&MetricId::DecodeStepMs)) {
        (StartTolerance::Fixed(t), _) => t.to_string(),
        (StartTolerance::ShareOfDecodeStep { pct, floor_ms }, Some(step)) => {
            format!(
                "{}ms",
                crate::units::fixed((step.value * pct / 100.0).max(floor_ms), 1)
            )
        }
        (StartTolerance::ShareOfDecodeStep { floor_ms, .. }, None) => format!("{floor_ms}ms"),
        (StartTolerance::ShareOfValue { pct, floor_ms }, _) => {
            let value = x.metrics.get(&def.id).map_or(0.0, |m| m.value);
            format!(
                "{}ms",
                crate::units::fixed((value * pct / 100.0).max(floor_ms), 1)
            )
        }
    }
}

/// Six significant digits: figures stay readable and diffs stay small.
pub(crate) fn round6(v: f64) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let digits = 6 - 1 - v.abs().log10().floor() as i32;
    let factor = 10f64.powi(digits.clamp(-10, 12));
    (v * factor).round() / factor
}

/// What `[meta]` gets stamped with on every write.
#[derive(Debug, Clone)]
pub(crate) struct Stamp {
    pub source: String,
    pub date: String,
    pub device: Option<String>,
    pub ranks: usize,
    /// `--image` and `--meta` of the run, checked by [`check_identity`].
    pub identity: crate::identity::Identity,
    /// The options the figures were analysed with, written to `[analysis]`.
    pub analysis: super::options::AnalysisOptions,
}

/// Where a `--meta` pair goes in `[meta]`.
enum MetaSlot {
    /// A `[meta]` field of its own (model, tp...).
    Field(toml_edit::Value),
    /// The `extra` inline table.
    Extra,
}

fn meta_slot(key: &str, text: &str) -> Result<MetaSlot, String> {
    Ok(match key {
        "model" | "precision" | "framework" => MetaSlot::Field(text.into()),
        "tp" | "ep" | "concurrency" | "moe_layers" => match text.parse::<u32>() {
            Ok(n) => MetaSlot::Field(i64::from(n).into()),
            Err(_) => return Err(format!("--meta {key}={text}: {key} is a whole number")),
        },
        "hardware" => return Err("--meta hardware: use --hardware (baseline new)".into()),
        "source" => return Err("--meta source: use --source".into()),
        "date" | "tracegate_version" => return Err(format!("--meta {key}: written by tracegate")),
        _ => MetaSlot::Extra,
    })
}

/// Refuses `--meta` pairs a baseline cannot hold: a number field that is not a number, or a
/// field tracegate or another option writes.
pub(crate) fn check_identity(identity: &crate::identity::Identity) -> Result<(), String> {
    for (key, text) in &identity.meta {
        meta_slot(key, text)?;
    }
    Ok(())
}

/// [`stamp_identity`] on a document's `[meta]` (a calibrated baseline's `update`).
pub(crate) fn stamp_identity_of(doc: &mut DocumentMut, identity: &crate::identity::Identity) {
    if let Some(meta) = doc.get_mut("meta").and_then(Item::as_table_like_mut) {
        stamp_identity(meta, identity);
    }
}

/// Writes the run's image and pairs into `[meta]`: a new image moves the old one to
/// `previous_image`; pairs set their own field or go into `extra`.
fn stamp_identity(meta: &mut dyn TableLike, identity: &crate::identity::Identity) {
    if let Some(image) = &identity.image {
        let old = meta.get("image").and_then(Item::as_str).map(str::to_string);
        if let Some(old) = old.filter(|old| old != image) {
            meta.insert("previous_image", value(old));
        }
        meta.insert("image", value(image.clone()));
    }
    for (key, text) in &identity.meta {
        match meta_slot(key, text) {
            Ok(MetaSlot::Field(v)) => {
                meta.insert(key, Item::Value(v));
            }
            Ok(MetaSlot::Extra) => {
                let extra = meta
                    .entry("extra")
                    .or_insert(Item::Value(toml_edit::InlineTable::new().into()));
                if let Some(extra) = extra.as_table_like_mut() {
                    extra.insert(key, value(text.clone()));
                    extra.fmt();
                }
            }
            // Refused by check_identity before any work.
            Err(_) => {}
        }
    }
}

/// Today's date, `YYYY-MM-DD`, in UTC.
pub(crate) fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    civil_date(secs.div_euclid(86_400))
}

/// Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
pub(crate) fn civil_date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

fn set_if_absent(table: &mut dyn TableLike, key: &str, item: Item) {
    if !table.contains_key(key) {
        table.insert(key, item);
    }
}

/// A section of the document as a table, standard (`[meta]`) or inline (`meta = { ... }`) alike,
/// created when absent.
fn section<'a>(doc: &'a mut DocumentMut, key: &str) -> Result<&'a mut dyn TableLike, String> {
    doc.entry(key)
        .or_insert(Item::Table(Table::new()))
        .as_table_like_mut()
        .ok_or_else(|| format!("`{key}` is not a table"))
}

fn stamp_meta(doc: &mut DocumentMut, stamp: &Stamp) -> Result<(), String> {
    let meta = section(doc, "meta")?;
    set_if_absent(
        meta,
        "hardware",
        value(stamp.device.clone().unwrap_or_default()),
    );
    set_if_absent(meta, "tp", value(stamp.ranks as i64));
    meta.insert("source", value(stamp.source.clone()));
    meta.insert("date", value(stamp.date.clone()));
    meta.insert("tracegate_version", value(env!("CARGO_PKG_VERSION")));
    stamp_identity(meta, &stamp.identity);
    Ok(())
}

/// What an update did not do to a baseline's set of metrics.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct MetricChanges {
    /// Metrics the run has and the baseline does not, left out (without `--add-new`).
    pub not_added: Vec<&'static str>,
    /// Metrics of the baseline the run does not produce: their old figures are kept.
    pub lacking: Vec<String>,
}

/// Writes the run's figures into `[metrics]`. A metric the baseline lacks is added (with its
/// starting tolerance) only with `add_new`: a team that removed one removed it on purpose.
fn write_metrics(
    doc: &mut DocumentMut,
    x: &Extraction,
    add_new: bool,
) -> Result<MetricChanges, String> {
    let mut changes = MetricChanges::default();
    let item = doc.entry("metrics").or_insert(Item::Table(Table::new()));
    if let Some(t) = item.as_table_mut() {
        t.set_implicit(true);
    }
    let metrics = item
        .as_table_like_mut()
        .ok_or_else(|| "`metrics` is not a table".to_string())?;
    for def in METRICS {
        let name = def.name();
        let Some(m) = x.metrics.get(&def.id) else {
            if metrics.contains_key(name) {
                changes.lacking.push(name.to_string());
            }
            continue;
        };
        if !add_new && !metrics.contains_key(name) {
            changes.not_added.push(name);
            continue;
        }
        let entry = metrics.entry(name).or_insert_with(|| {
            let mut t = Table::new();
            t.insert("value", value(0.0));
            t.insert("tolerance", value(starting_tolerance(def, x)));
            if !def.gated {
                t.insert("gate", value(false));
            }
            Item::Table(t)
        });
        // A metric written inline (`decode_step_ms = { value = 20.1, tolerance = "3%" }`) stays inline.
        let t = entry
            .as_table_like_mut()
            .ok_or_else(|| format!("`metrics.{name}` is not a table"))?;
        t.insert("value", value(round6(m.value)));
        for (key, v) in [("p50", m.p50), ("p90", m.p90), ("p99", m.p99)] {
            match v {
                Some(v) => {
                    t.insert(key, value(round6(v)));
                }
                None => {
                    t.remove(key);
                }
            }
        }
        // One value per rank, or a count, is not a sample to take a spread of.
        let per_step = matches!(def.samples, Samples::PerStep | Samples::PerCall);
        match robust_spread(&m.samples).filter(|_| per_step && m.samples.len() > 1) {
            Some(spread) => {
                t.insert("spread", value(round6(spread)));
                t.insert("samples", value(m.samples.len() as i64));
            }
            None => {
                t.remove("spread");
                t.remove("samples");
            }
        }
    }
    Ok(changes)
}

/// `[step_mix]`: the run's kernel time by kind of step, %, rewritten whole.
fn write_step_mix(doc: &mut DocumentMut, x: &Extraction) {
    let mut t = Table::new();
    t.decor_mut().set_prefix(
        "\n# Written by tracegate: the share of kernel time in each kind of step, for telling a run \
         of another step mix apart.\n",
    );
    let m = &x.step_mix;
    for (key, pct) in [
        ("decode_pct", m.decode_pct),
        ("prefill_pct", m.prefill_pct),
        ("mixed_pct", m.mixed_pct),
        ("other_label_pct", m.other_label_pct),
        ("no_step_pct", m.no_step_pct),
    ] {
        t.insert(key, value(round6(pct)));
    }
    doc.insert("step_mix", Item::Table(t));
}

fn write_breakdown(doc: &mut DocumentMut, x: &Extraction) {
    let mut breakdown = Table::new();
    breakdown.decor_mut().set_prefix(
        "\n# Written by tracegate: the decode step per category and kernel, for the explanation.\n",
    );
    let mut categories = Table::new();
    categories.set_implicit(true);
    for (cat, share) in &x.breakdown.categories {
        let mut t = Table::new();
        t.insert("ms_per_step", value(round6(share.ms_per_step)));
        t.insert("calls_per_step", value(round6(share.calls_per_step)));
        categories.insert(cat.key(), Item::Table(t));
    }
    breakdown.insert("categories", Item::Table(categories));
    let mut kernels = ArrayOfTables::new();
    for k in &x.breakdown.kernels {
        let mut t = Table::new();
        t.insert("name", value(k.name.clone()));
        t.insert("category", value(k.category.key()));
        t.insert("ms_per_step", value(round6(k.ms_per_step)));
        t.insert("calls_per_step", value(round6(k.calls_per_step)));
        kernels.push(t);
    }
    breakdown.insert("kernels", Item::ArrayOfTables(kernels));
    breakdown.set_implicit(true);
    doc.insert("breakdown", Item::Table(breakdown));
}

/// A new baseline for a run, with default tolerances and a header saying how to edit it.
pub(crate) fn new_baseline(x: &Extraction, meta: &Meta, stamp: &Stamp) -> String {
    let mut doc = DocumentMut::new();
    let mut m = Table::new();
    m.decor_mut().set_prefix(
        "# tracegate baseline: one hardware configuration. Edit tolerances and `gate = false` by\n\
         # hand; `tracegate baseline update` rewrites values and keeps your edits.\n",
    );
    m.insert("hardware", value(meta.hardware.clone()));
    if meta.hardware_asserted {
        m.insert("hardware_asserted", value(true));
    }
    let optional: [(&str, &Option<String>); 4] = [
        ("model", &meta.model),
        ("precision", &meta.precision),
        ("framework", &meta.framework),
        ("image", &meta.image),
    ];
    for (key, v) in optional {
        if let Some(v) = v {
            m.insert(key, value(v.clone()));
        }
    }
    for (key, v) in [
        ("tp", meta.tp),
        ("ep", meta.ep),
        ("concurrency", meta.concurrency),
        ("moe_layers", meta.moe_layers),
    ] {
        if let Some(v) = v {
            m.insert(key, value(i64::from(v)));
        }
    }
    if let Some(p) = &meta.partial_ranks {
        m.insert("partial_ranks", value(p.clone()));
    }
    doc.insert("meta", Item::Table(m));
    update_document(&mut doc, x, stamp, true).expect("a document built here has table sections");
    doc.to_string()
}

fn update_document(
    doc: &mut DocumentMut,
    x: &Extraction,
    stamp: &Stamp,
    add_new: bool,
) -> Result<MetricChanges, String> {
    stamp_meta(doc, stamp)?;
    if let Some(batch) = x.decode_batch {
        section(doc, "meta")?.insert("batch", value(batch.round() as i64));
    }
    // The ranks the figures are of, as the run held them (`--partial-ranks`).
    match &x.run.partial_ranks {
        Some(p) => {
            section(doc, "meta")?.insert("partial_ranks", value(p.clone()));
        }
        None => {
            section(doc, "meta")?.remove("partial_ranks");
        }
    }
    // The kind of run, where it is not a serving run (the kind every older baseline is of).
    match x.run.kind {
        crate::metrics::RunKind::Loop => {
            section(doc, "meta")?.insert("run_kind", value("loop"));
        }
        crate::metrics::RunKind::Serving => {
            section(doc, "meta")?.remove("run_kind");
        }
    }
    let changes = write_metrics(doc, x, add_new)?;
    write_step_mix(doc, x);
    super::options::write(doc, &stamp.analysis);
    write_breakdown(doc, x);
    Ok(changes)
}

/// The baseline text with the run's figures written in, and what was left as it was; `Err` with
/// the TOML parser's message. Metrics the baseline lacks are added only with `add_new`.
pub(crate) fn update_baseline(
    old: &str,
    x: &Extraction,
    stamp: &Stamp,
    add_new: bool,
) -> Result<(String, MetricChanges), String> {
    let mut doc: DocumentMut = old
        .parse()
        .map_err(|e: toml_edit::TomlError| e.to_string())?;
    let changes = update_document(&mut doc, x, stamp, add_new)?;
    Ok((doc.to_string(), changes))
}

/// A unified diff of two baseline texts.
pub(crate) fn diff(path: &str, old: &str, new: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(2)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_are_right() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(20_425), "2025-12-03");
        assert_eq!(civil_date(11_016), "2000-02-29");
    }

    fn stamped(text: &str, image: Option<&str>, pairs: &[(&str, &str)]) -> String {
        let mut doc: DocumentMut = text.parse().unwrap();
        let identity = crate::identity::Identity {
            image: image.map(str::to_string),
            meta: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        stamp_identity(doc["meta"].as_table_like_mut().unwrap(), &identity);
        doc.to_string()
    }

    #[test]
    fn a_new_image_keeps_the_old_one_as_previous_image() {
        let text = "[meta]\nhardware = \"B200\"\nimage = \"sglang:v0.5.3\"\n";
        let out = stamped(text, Some("sglang:v0.5.4"), &[]);
        assert_eq!(
            out,
            "[meta]\nhardware = \"B200\"\nimage = \"sglang:v0.5.4\"\nprevious_image = \"sglang:v0.5.3\"\n"
        );
        // The same image again keeps the previous one; no image leaves both alone.
        assert_eq!(stamped(&out, Some("sglang:v0.5.4"), &[]), out);
        assert_eq!(stamped(&out, None, &[]), out);
        // A first image has no previous one.
        let first = stamped("[meta]\nhardware = \"B200\"\n", Some("sglang:v0.5.4"), &[]);
        assert!(!first.contains("previous_image"), "{first}");
        let parsed: super::super::Meta = toml::from_str::<toml::Table>(&out).unwrap()["meta"]
            .clone()
            .try_into()
            .unwrap();
        assert_eq!(parsed.previous_image.as_deref(), Some("sglang:v0.5.3"));
    }

    #[test]
    fn meta_pairs_set_their_field_or_go_into_extra() {
        let out = stamped(
            "[meta]\nhardware = \"B200\"\nmodel = \"old\"\n",
            None,
            &[
                ("model", "DeepSeek-R1"),
                ("concurrency", "64"),
                ("sglang", "0.5.4"),
            ],
        );
        let meta: super::super::Meta = toml::from_str::<toml::Table>(&out).unwrap()["meta"]
            .clone()
            .try_into()
            .unwrap();
        assert_eq!(meta.model.as_deref(), Some("DeepSeek-R1"));
        assert_eq!(meta.concurrency, Some(64));
        assert_eq!(meta.get("sglang").as_deref(), Some("0.5.4"));
        assert!(out.contains("extra = { sglang = \"0.5.4\" }"), "{out}");
        // Later pairs join the same inline table.
        let again = stamped(&out, None, &[("commit", "abc")]);
        assert!(
            again.contains("extra = { sglang = \"0.5.4\", commit = \"abc\" }"),
            "{again}"
        );
    }

    #[test]
    fn pairs_a_baseline_cannot_hold_are_refused() {
        let id = |k: &str, v: &str| crate::identity::Identity {
            image: None,
            meta: [(k.to_string(), v.to_string())].into(),
        };
        assert!(check_identity(&id("tp", "four"))
            .unwrap_err()
            .contains("whole number"));
        assert!(check_identity(&id("hardware", "x"))
            .unwrap_err()
            .contains("--hardware"));
        assert!(check_identity(&id("date", "x")).is_err());
        assert!(check_identity(&id("sglang", "0.5.4")).is_ok());
    }

    #[test]
    fn six_significant_digits() {
        assert_eq!(round6(20.114_876_5), 20.1149);
        assert_eq!(round6(0.000_123_456_78), 0.000_123_457);
        assert_eq!(round6(282_612.345), 282_612.0);
    }
}
