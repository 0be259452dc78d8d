//! Kernel taxonomy: maps each GPU activity name to a category by an ordered rule table
//! (first match wins), shipped in the binary as `rules.toml` and extendable by the user.
//!
//! A rule matches by `prefix`, `contains` or `regex` against the kernel name without a leading
//! `void `, as written or demangled (Itanium `_Z...` names, see [`demangle`]); the table's
//! comments explain the order of its sections. [`Taxonomy::hta_compatible`] swaps in HTA's
//! definition of communication.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use regex::Regex;
use serde::{Deserialize, Serialize};

use prefilter::Prefilter;

use crate::reader::model::{GpuActivity, GpuKind, NameId, NameTable, RankTrace};

mod demangle;
pub(crate) mod names;
mod prefilter;
mod suggest;
pub(crate) use demangle::{demangle, readable};
pub(crate) use names::{distinguishing_names, short_name, untruncated_short_name};
pub(crate) use suggest::{suggest, Suggestion};

/// What a GPU activity does, as far as the gate cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    Comm,
    MoeGemm,
    DenseGemm,
    Attention,
    MoeRouting,
    Norm,
    Quant,
    Elementwise,
    Memcpy,
    Other,
}

/// The collective a `comm` kernel performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Collective {
    Allreduce,
    Allgather,
    ReduceScatter,
    AllToAll,
    SendRecv,
    Broadcast,
    /// A generic kernel whose collective the name does not tell (`rcclGenericKernel`).
    Other,
}

/// The classification of one kernel name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Class {
    pub category: Category,
    /// Set for `comm` kernels only.
    pub collective: Option<Collective>,
    /// What the kernel is, in words, for reports ("flashinfer oneshot lamport allreduce").
    pub note: Option<String>,
    /// Serves its category's work without being it (rotary embedding and KV-cache writes for
    /// attention): not evidence, on its own, that a forward pass ran attention.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub helper: bool,
}

impl Category {
    /// Every category, in report order: communication first, `other` last.
    pub const ALL: [Category; 10] = [
        Category::Comm,
        Category::MoeGemm,
        Category::DenseGemm,
        Category::Attention,
        Category::MoeRouting,
        Category::Norm,
        Category::Quant,
        Category::Elementwise,
        Category::Memcpy,
        Category::Other,
    ];

    /// The key used in rules files, baselines and JSON output (`moe_gemm`).
    pub fn key(self) -> &'static str {
        match self {
            Category::Comm => "comm",
            Category::MoeGemm => "moe_gemm",
            Category::DenseGemm => "dense_gemm",
            Category::Attention => "attention",
            Category::MoeRouting => "moe_routing",
            Category::Norm => "norm",
            Category::Quant => "quant",
            Category::Elementwise => "elementwise",
            Category::Memcpy => "memcpy",
            Category::Other => "other",
        }
    }

    /// Human words for reports.
    pub fn label(self) -> &'static str {
        match self {
            Category::Comm => "Communication",
            Category::MoeGemm => "MoE GEMM",
            Category::DenseGemm => "Dense GEMM",
            Category::Attention => "Attention",
            Category::MoeRouting => "MoE routing",
            Category::Norm => "Normalization",
            Category::Quant => "Quantization",
            Category::Elementwise => "Elementwise",
            Category::Memcpy => "Memcpy/memset",
            Category::Other => "Other",
        }
    }

    pub fn from_key(key: &str) -> Option<Category> {
        Category::ALL.into_iter().find(|c| c.key() == key)
    }

    /// Compute in the sense of `overlap_pct`: neither `comm` nor `memcpy`.
    pub fn is_compute(self) -> bool {
        !matches!(self, Category::Comm | Category::Memcpy)
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

impl Collective {
    pub const ALL: [Collective; 7] = [
        Collective::Allreduce,
        Collective::Allgather,
        Collective::ReduceScatter,
        Collective::AllToAll,
        Collective::SendRecv,
        Collective::Broadcast,
        Collective::Other,
    ];

    /// The key used in rules files and JSON output (`reduce_scatter`).
    pub fn key(self) -> &'static str {
        match self {
            Collective::Allreduce => "allreduce",
            Collective::Allgather => "allgather",
            Collective::ReduceScatter => "reduce_scatter",
            Collective::AllToAll => "all_to_all",
            Collective::SendRecv => "send_recv",
            Collective::Broadcast => "broadcast",
            Collective::Other => "other",
        }
    }

    /// Human words for reports.
    pub fn label(self) -> &'static str {
        match self {
            Collective::Allreduce => "allreduce",
            Collective::Allgather => "allgather",
            Collective::ReduceScatter => "reduce-scatter",
            Collective::AllToAll => "all-to-all",
            Collective::SendRecv => "send/recv",
            Collective::Broadcast => "broadcast",
            Collective::Other => "other collective",
        }
    }

    pub fn from_key(key: &str) -> Option<Collective> {
        Collective::ALL.into_iter().find(|c| c.key() == key)
    }

    /// The collective c10d names (`allreduce`, `_allgather_base`, `reduce_scatter_tensor`,
    /// `all_to_all_single`, `send`, `recv`, `broadcast`); `Other` for any other.
    pub fn from_c10d(name: &str) -> Collective {
        let n = name.to_ascii_lowercase().replace('_', "");
        if n.contains("allreduce") {
            Collective::Allreduce
        } else if n.contains("allgather") {
            Collective::Allgather
        } else if n.contains("reducescatter") {
            Collective::ReduceScatter
        } else if n.contains("alltoall") {
            Collective::AllToAll
        } else if n.contains("send") || n.contains("recv") {
            Collective::SendRecv
        } else if n.contains("broadcast") {
            Collective::Broadcast
        } else {
            Collective::Other
        }
    }
}

impl fmt::Display for Collective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

impl Class {
    /// Allreduce-class: a `comm` kernel whose collective is `allreduce` (METRICS.md).
    pub fn is_allreduce(&self) -> bool {
        self.category == Category::Comm && self.collective == Some(Collective::Allreduce)
    }
}

/// The class of memcpy and memset activities, whatever their name.
static MEMCPY_CLASS: Class = Class {
    category: Category::Memcpy,
    collective: None,
    note: None,
    helper: false,
};

/// The class of names no rule matched.
static OTHER_CLASS: Class = Class {
    category: Category::Other,
    collective: None,
    note: None,
    helper: false,
};

/// How a rule recognises a kernel name. Patterns are alternatives: any one matching is a match.
#[derive(Debug, Clone)]
pub enum Matcher {
    Prefix(Vec<String>),
    Contains(Vec<String>),
    Regex(Vec<RulePattern>),
}

/// A rule's regex, compiled when a name first reaches it. Compiling the built-in table's 60-odd
/// Unicode-aware regexes took about 15 ms, most of a small run's time, and the prefilter lets
/// only a few of them see any name. A user's regexes are compiled when their file is read, so
/// that a bad one is an error naming the file and rule (the built-in ones are compiled by a test).
#[derive(Debug, Clone)]
pub struct RulePattern {
    pattern: String,
    compiled: OnceLock<Regex>,
}

impl RulePattern {
    /// Compiles `pattern` now, or keeps it to compile on first use.
    fn new(pattern: &str, when: Compile) -> Result<RulePattern, String> {
        let compiled = OnceLock::new();
        if when == Compile::Now {
            let regex = Regex::new(pattern).map_err(|e| format!("bad regex `{pattern}`: {e}"))?;
            let _ = compiled.set(regex);
        }
        Ok(RulePattern {
            pattern: pattern.to_string(),
            compiled,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.pattern
    }

    fn is_match(&self, name: &str) -> bool {
        self.compiled
            .get_or_init(|| {
                // Only built-in patterns are compiled here; `taxonomy::tests` compiles each one.
                Regex::new(&self.pattern).unwrap_or_else(|e| {
                    panic!(
                        "built-in rule regex `{}` does not compile: {e}",
                        self.pattern
                    )
                })
            })
            .is_match(name)
    }
}

/// When a rule's regexes are compiled (see [`RulePattern`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Compile {
    Now,
    OnFirstUse,
}

impl Matcher {
    /// `name` is the kernel name with its leading `void ` already removed.
    fn matches(&self, name: &str) -> bool {
        match self {
            Matcher::Prefix(prefixes) => prefixes.iter().any(|p| name.starts_with(p.as_str())),
            Matcher::Contains(needles) => needles.iter().any(|n| name.contains(n.as_str())),
            Matcher::Regex(regexes) => regexes.iter().any(|r| r.is_match(name)),
        }
    }
}

/// One row of a rule table.
#[derive(Debug, Clone)]
pub struct Rule {
    pub matcher: Matcher,
    pub category: Category,
    /// Set for `comm` rules only (`other` when the rules file gave none).
    pub collective: Option<Collective>,
    pub note: Option<String>,
    pub helper: bool,
    /// Where the rule was written: the file (or `built-in rules.toml`) and its 1-based position.
    pub origin: Arc<str>,
    pub index: usize,
}

impl Rule {
    /// Whether this rule matches a kernel name as written in the trace (see also
    /// `Rule::matches_either`).
    pub fn matches(&self, name: &str) -> bool {
        self.matcher.matches(strip_return_type(name))
    }

    /// Whether this rule matches the name as written or its demangled form: rules are written
    /// against what a name says, and rules written against a mangled name keep working.
    fn matches_either(&self, name: &str, demangled: Option<&str>) -> bool {
        self.matches(name) || demangled.is_some_and(|d| self.matches(d))
    }

    fn class(&self) -> Class {
        Class {
            category: self.category,
            collective: self.collective,
            note: self.note.clone(),
            helper: self.helper,
        }
    }
}

/// Demangled C++ kernel names start with their return type, nearly always `void `; rules are
/// written against the function name.
fn strip_return_type(name: &str) -> &str {
    name.strip_prefix("void ").unwrap_or(name)
}

/// Which rule decides what is communication.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommRule {
    /// The rule table's own comm rules (NCCL, RCCL and the custom allreduces).
    Taxonomy,
    /// HTA's rule; see [`Taxonomy::hta_compatible`].
    Hta,
}

/// HTA's test for a communication kernel, applied to the raw name (see `DESIGN.md`).
const HTA_COMM_PATTERN: &str = "^nccl|ncclKernel|^hip|^hccl";

fn hta_comm_regex() -> &'static Regex {
    static HTA: OnceLock<Regex> = OnceLock::new();
    HTA.get_or_init(|| Regex::new(HTA_COMM_PATTERN).expect("HTA_COMM_PATTERN is a valid regex"))
}

fn builtin_prefilter() -> &'static Prefilter {
    static PREFILTER: OnceLock<Prefilter> = OnceLock::new();
    PREFILTER.get_or_init(|| Prefilter::new(builtin_rules()))
}

/// The embedded rule table.
const BUILTIN_RULES: &str = include_str!("rules.toml");
const BUILTIN_ORIGIN: &str = "built-in rules.toml";

fn builtin_rules() -> &'static [Rule] {
    static BUILTIN: OnceLock<Vec<Rule>> = OnceLock::new();
    BUILTIN.get_or_init(|| {
        // The table ships with the binary and a unit test parses it, so a failure here is a
        // build defect, not bad user input.
        let table: toml::Table = BUILTIN_RULES
            .parse()
            .unwrap_or_else(|err| panic!("the built-in rule table does not parse: {err}"));
        Taxonomy::rules_compiled(&table, BUILTIN_ORIGIN, Compile::OnFirstUse)
            .unwrap_or_else(|err| panic!("the built-in rule table does not parse: {err}"))
    })
}

/// What went wrong reading a rules file. Every message names the file (or origin) and, for a
/// bad rule, its 1-based position among the `[[rule]]` tables.
#[derive(Debug, thiserror::Error)]
pub enum TaxonomyError {
    #[error("cannot read rules file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{origin}: not valid TOML: {message}")]
    Syntax { origin: String, message: String },
    #[error("{origin}: unknown top-level key `{key}`: a rules file holds only [[rule]] tables")]
    UnknownTopLevelKey { origin: String, key: String },
    #[error("{origin}: `rule` must be an array of tables, written [[rule]]")]
    NotRuleArray { origin: String },
    #[error("{origin}: rule {index}: {problem}")]
    BadRule {
        origin: String,
        index: usize,
        problem: String,
    },
}

/// One `[[rule]]` as written; checked and compiled into a [`Rule`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    prefix: Option<toml::Value>,
    contains: Option<toml::Value>,
    regex: Option<toml::Value>,
    category: String,
    collective: Option<String>,
    note: Option<String>,
    #[serde(default)]
    helper: bool,
}

/// A matcher value: one string or an array of strings, none empty.
fn patterns(key: &str, value: &toml::Value) -> Result<Vec<String>, String> {
    let strings: Vec<String> = match value {
        toml::Value::String(s) => vec![s.clone()],
        toml::Value::Array(items) => items
            .iter()
            .map(|item| match item {
                toml::Value::String(s) => Ok(s.clone()),
                other => Err(format!(
                    "`{key}` must hold strings, not {}",
                    other.type_str()
                )),
            })
            .collect::<Result<_, _>>()?,
        other => {
            return Err(format!(
                "`{key}` must be a string or an array of strings, not {}",
                other.type_str()
            ))
        }
    };
    if strings.is_empty() {
        return Err(format!("`{key}` is an empty array"));
    }
    // An empty pattern matches every name and would swallow all later rules.
    if strings.iter().any(|s| s.is_empty()) {
        return Err(format!("`{key}` holds an empty pattern"));
    }
    Ok(strings)
}

fn compile_rule(
    raw: RawRule,
    origin: &Arc<str>,
    index: usize,
    when: Compile,
) -> Result<Rule, String> {
    let given: Vec<(&str, &toml::Value)> = [
        ("prefix", raw.prefix.as_ref()),
        ("contains", raw.contains.as_ref()),
        ("regex", raw.regex.as_ref()),
    ]
    .into_iter()
    .filter_map(|(key, value)| value.map(|v| (key, v)))
    .collect();
    let (key, value) = match given.as_slice() {
        [] => return Err("no matcher: give one of `prefix`, `contains` or `regex`".into()),
        [one] => *one,
        many => {
            let keys: Vec<String> = many.iter().map(|(k, _)| format!("`{k}`")).collect();
            return Err(format!(
                "more than one matcher ({}): give exactly one",
                keys.join(", ")
            ));
        }
    };
    let strings = patterns(key, value)?;
    let matcher = match key {
        "prefix" => Matcher::Prefix(strings),
        "contains" => Matcher::Contains(strings),
        _ => Matcher::Regex(
            strings
                .iter()
                .map(|s| RulePattern::new(s, when))
                .collect::<Result<_, _>>()?,
        ),
    };
    let category = Category::from_key(&raw.category).ok_or_else(|| {
        let keys: Vec<&str> = Category::ALL.iter().map(|c| c.key()).collect();
        format!(
            "unknown category `{}` (expected one of {})",
            raw.category,
            keys.join(", ")
        )
    })?;
    let collective = match (&raw.collective, category) {
        (None, Category::Comm) => Some(Collective::Other),
        (None, _) => None,
        (Some(kind), Category::Comm) => Some(Collective::from_key(kind).ok_or_else(|| {
            let keys: Vec<&str> = Collective::ALL.iter().map(|c| c.key()).collect();
            format!(
                "unknown collective `{kind}` (expected one of {})",
                keys.join(", ")
            )
        })?),
        (Some(_), _) => {
            return Err(format!(
                "`collective` is only for comm rules, this one is `{}`",
                category.key()
            ))
        }
    };
    Ok(Rule {
        matcher,
        category,
        collective,
        // Every rule says where it comes from, so a kernel put in `other` by a rule is told
        // apart from one no rule knows.
        note: raw.note.or_else(|| Some(format!("{origin} rule {index}"))),
        helper: raw.helper,
        origin: Arc::clone(origin),
        index,
    })
}

/// Maps kernel names to [`Class`]es by an ordered rule table: user rules first (in the order
/// they were added), then the built-in table; the first rule that matches decides.
#[derive(Debug, Clone)]
pub struct Taxonomy {
    user: Vec<Rule>,
    builtin: &'static [Rule],
    comm_rule: CommRule,
    /// The literal prefilter of a table with user rules, made on first use (the built-in
    /// table's is shared, [`builtin_prefilter`]).
    prefilter: OnceLock<Prefilter>,
}

impl Default for Taxonomy {
    fn default() -> Self {
        Taxonomy::builtin()
    }
}

impl Taxonomy {
    /// The built-in rule table (`src/taxonomy/rules.toml`), with no user rules.
    pub fn builtin() -> Taxonomy {
        Taxonomy {
            user: Vec::new(),
            builtin: builtin_rules(),
            comm_rule: CommRule::Taxonomy,
            prefilter: OnceLock::new(),
        }
    }

    /// The built-in table under HTA's definition of communication, so that figures can be
    /// compared with Holistic Trace Analysis on the same trace.
    ///
    /// Exactly:
    /// - a name (as written, no `void ` stripping) matching `^nccl|ncclKernel|^hip|^hccl` is
    ///   `comm`; its collective and note come from the first comm rule of the table that matches
    ///   it (`ncclDevKernel_AllGather_RING_LL` stays `allgather`), or `other` when none does;
    /// - every other name is classified by the table with all comm rules skipped, so the custom
    ///   allreduces (`cross_device_reduce_*`, flashinfer `allreduce_fusion_*`,
    ///   `multimem_all_reduce`, quick-reduce, DeepEP, `rcclGenericKernel`) fall through to the
    ///   later rules and end up compute, mostly `other`, as HTA counts them;
    /// - memcpy/memset stay `memcpy` (HTA's memory kernels); user rules added later follow the
    ///   same two steps.
    ///
    /// HTA itself has varied: older releases test `"ncclKernel" in name`, others
    /// `name.startswith("nccl")`; the pattern above is the union `DESIGN.md` fixes.
    pub fn hta_compatible() -> Taxonomy {
        Taxonomy {
            comm_rule: CommRule::Hta,
            ..Taxonomy::builtin()
        }
    }

    pub fn comm_rule(&self) -> CommRule {
        self.comm_rule
    }

    /// Parses a rules file's text (`[[rule]]` tables) into rules. `origin` names the text in
    /// error messages (the file path, or a baseline's `[rules]`).
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Vec<Rule>, TaxonomyError> {
        let table: toml::Table =
            text.parse()
                .map_err(|e: toml::de::Error| TaxonomyError::Syntax {
                    origin: origin.to_string(),
                    message: e.to_string().trim_end().to_string(),
                })?;
        Taxonomy::rules_from_table(&table, origin)
    }

    /// Rules from an already parsed table holding a `rule` array (a rules file, or the
    /// `[rules]` table of a baseline).
    pub fn rules_from_table(table: &toml::Table, origin: &str) -> Result<Vec<Rule>, TaxonomyError> {
        Taxonomy::rules_compiled(table, origin, Compile::Now)
    }

    fn rules_compiled(
        table: &toml::Table,
        origin: &str,
        when: Compile,
    ) -> Result<Vec<Rule>, TaxonomyError> {
        if let Some(key) = table.keys().find(|k| k.as_str() != "rule") {
            return Err(TaxonomyError::UnknownTopLevelKey {
                origin: origin.to_string(),
                key: key.clone(),
            });
        }
        let Some(value) = table.get("rule") else {
            return Ok(Vec::new());
        };
        let toml::Value::Array(items) = value else {
            return Err(TaxonomyError::NotRuleArray {
                origin: origin.to_string(),
            });
        };
        let shared_origin: Arc<str> = Arc::from(origin);
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let index = i + 1;
                let bad = |problem: String| TaxonomyError::BadRule {
                    origin: origin.to_string(),
                    index,
                    problem,
                };
                if !item.is_table() {
                    return Err(bad(format!("must be a table, not {}", item.type_str())));
                }
                let raw: RawRule = item
                    .clone()
                    .try_into()
                    .map_err(|e: toml::de::Error| bad(e.message().trim_end().to_string()))?;
                compile_rule(raw, &shared_origin, index, when).map_err(bad)
            })
            .collect()
    }

    /// Adds the rules of a TOML rules file, tried before the built-in ones.
    pub fn with_rules_file(self, path: &Path) -> Result<Taxonomy, TaxonomyError> {
        // A regular file of at most 16 MiB: `/dev/zero` or a FIFO is refused, not read without end.
        let text =
            crate::files::read_text_capped(path, crate::files::TEXT_CAP).map_err(|source| {
                TaxonomyError::Read {
                    path: path.to_path_buf(),
                    source,
                }
            })?;
        let rules = Taxonomy::from_toml_str(&text, &path.display().to_string())?;
        Ok(self.with_rules(rules))
    }

    /// Adds user rules, tried before the built-in ones and after user rules added earlier.
    pub fn with_rules(mut self, rules: Vec<Rule>) -> Taxonomy {
        self.user.extend(rules);
        self.prefilter = OnceLock::new();
        self
    }

    /// The literal prefilter of this table, rules in the order [`Taxonomy::rules`] tries them.
    fn prefilter(&self) -> &Prefilter {
        if self.user.is_empty() {
            return builtin_prefilter();
        }
        self.prefilter.get_or_init(|| Prefilter::new(self.rules()))
    }

    /// The user rules (`--rules`, a baseline's `[[rules]]`), in the order they are tried.
    pub fn user_rules(&self) -> &[Rule] {
        &self.user
    }

    /// All rules in the order they are tried.
    pub fn rules(&self) -> impl Iterator<Item = &Rule> {
        self.user.iter().chain(self.builtin.iter())
    }

    /// The class of a kernel name. Mangled names are demangled first; a rule matches either form.
    /// Rules whose literals the name does not hold are skipped (the `prefilter`): they cannot match.
    pub fn classify(&self, name: &str) -> Class {
        let demangled = demangle(name);
        let d = demangled.as_deref();
        let candidates = self.prefilter().candidates(name, d);
        self.classify_among(name, d, |position| candidates.may_match(position))
    }

    /// [`Taxonomy::classify`] trying the rules at the positions `tried` allows, in order.
    fn classify_among(&self, name: &str, d: Option<&str>, tried: impl Fn(usize) -> bool) -> Class {
        let mut rules = self
            .rules()
            .enumerate()
            .filter(|(i, _)| tried(*i))
            .map(|(_, r)| r);
        match self.comm_rule {
            CommRule::Taxonomy => rules
                .find(|rule| rule.matches_either(name, d))
                .map_or_else(|| OTHER_CLASS.clone(), Rule::class),
            CommRule::Hta if hta_comm_regex().is_match(name) => {
                let comm = rules
                    .find(|rule| rule.category == Category::Comm && rule.matches_either(name, d));
                Class {
                    category: Category::Comm,
                    collective: Some(comm.and_then(|r| r.collective).unwrap_or(Collective::Other)),
                    note: comm.and_then(|r| r.note.clone()),
                    helper: false,
                }
            }
            CommRule::Hta => rules
                .find(|rule| rule.category != Category::Comm && rule.matches_either(name, d))
                .map_or_else(|| OTHER_CLASS.clone(), Rule::class),
        }
    }

    /// [`Taxonomy::classify`] trying every rule: what the prefilter must not change.
    #[cfg(test)]
    pub(crate) fn classify_unfiltered(&self, name: &str) -> Class {
        let demangled = demangle(name);
        self.classify_among(name, demangled.as_deref(), |_| true)
    }

    /// The class of a GPU activity: memcpy and memset activities are `memcpy` whatever their
    /// name; kernels go by [`Taxonomy::classify`].
    pub fn classify_activity(&self, kind: GpuKind, name: &str) -> Class {
        match kind {
            GpuKind::Memcpy | GpuKind::Memset => MEMCPY_CLASS.clone(),
            GpuKind::Kernel => self.classify(name),
        }
    }

    /// Classifies the given names of one rank once each, for lookup by [`NameId`]. Ids outside
    /// the table are skipped; repeated ids cost nothing.
    pub fn classify_names(
        &self,
        names: &NameTable,
        ids: impl IntoIterator<Item = NameId>,
    ) -> NameClasses {
        let mut classes: Vec<Option<Class>> = vec![None; names.len()];
        for id in ids {
            let Some(slot) = classes.get_mut(id as usize) else {
                continue;
            };
            if slot.is_none() {
                *slot = Some(self.classify(names.get(id)));
            }
        }
        NameClasses { classes }
    }

    /// Classifies the name of every kernel of a rank (memcpy/memset need no rule).
    /// One dense class list per trace of a run, indexed by [`NameId`], as the steps and metrics
    /// stages take it; names that are not kernel names get `other`.
    pub fn classify_run(&self, run: &crate::reader::Run) -> Vec<Vec<Class>> {
        use rayon::prelude::*;
        run.traces
            .par_iter()
            .map(|t| self.classify_trace(t).into_dense())
            .collect()
    }

    pub fn classify_trace(&self, trace: &RankTrace) -> NameClasses {
        let kernel_names = trace
            .gpu
            .iter()
            .filter(|activity| activity.kind() == GpuKind::Kernel)
            .map(|activity| activity.name);
        let mut classes = self.classify_names(&trace.names, kernel_names);
        // c10d's word on the kernel (`Collective name`, from the enclosing `record_param_comms`)
        // is the trace's, not a guess from the name: such a kernel is that collective.
        for &(kernel, collective) in &trace.collective_names {
            if let Some(slot) = classes.classes.get_mut(kernel as usize) {
                let name = trace.name(collective);
                *slot = Some(Class {
                    category: Category::Comm,
                    collective: Some(Collective::from_c10d(name)),
                    note: Some(format!("c10d {name}")),
                    helper: false,
                });
            }
        }
        classes
    }
}

/// The classes of one rank's names, indexed by [`NameId`], from [`Taxonomy::classify_names`].
#[derive(Debug, Clone, Default)]
pub struct NameClasses {
    classes: Vec<Option<Class>>,
}

impl NameClasses {
    /// The class of a classified name; `None` for a name that was not classified.
    pub fn get(&self, id: NameId) -> Option<&Class> {
        self.classes.get(id as usize).and_then(Option::as_ref)
    }

    /// The class of an activity of this kind and name: `memcpy` for memcpy/memset kinds,
    /// `other` for a kernel name that was not classified.
    pub fn class_of(&self, kind: GpuKind, id: NameId) -> &Class {
        match kind {
            GpuKind::Memcpy | GpuKind::Memset => &MEMCPY_CLASS,
            GpuKind::Kernel => self.get(id).unwrap_or(&OTHER_CLASS),
        }
    }

    pub fn of(&self, activity: &GpuActivity) -> &Class {
        self.class_of(activity.kind(), activity.name)
    }

    pub fn category_of(&self, activity: &GpuActivity) -> Category {
        self.of(activity).category
    }

    /// The dense list [`Taxonomy::classify_run`] hands on: names not classified get `other`.
    /// Moves the classes out (a run may have a million names): no class is copied.
    pub fn into_dense(self) -> Vec<Class> {
        self.classes
            .into_iter()
            .map(|c| c.unwrap_or_else(|| OTHER_CLASS.clone()))
            .collect()
    }
}

/// Share of kernel time in `other` above which a run's figures are suspect: `check` warns, the
/// report says so, and the coverage tests hold every real trace and synth scenario at or below it.
pub(crate) const OTHER_LIMIT_PCT: f64 = 5.0;

#[cfg(test)]
mod tests;

/// The version of the built-in rules: the date of the newest entry of `rules.toml`'s
/// changelog (`#  - YYYY-MM-DD: ...`), "1" before the first. A baseline records it
/// (`[analysis] taxonomy`), so a kernel the rules now classify otherwise is named as a change
/// of the taxonomy, not of the run.
pub(crate) fn version() -> &'static str {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION.get_or_init(|| changelog_version(BUILTIN_RULES))
}

fn changelog_version(text: &str) -> String {
    text.lines()
        .filter_map(|l| l.strip_prefix("#  - "))
        .filter_map(|l| l.split(':').next())
        .filter(|d| d.len() == 10 && d.bytes().all(|b| b.is_ascii_digit() || b == b'-'))
        .max()
        .map_or_else(|| "1".to_string(), str::to_string)
}

#[cfg(test)]
mod version_tests {
    #[test]
    fn the_taxonomy_version_is_the_newest_changelog_date() {
        let text = "# Changes\n#  - 2026-01-02: a\n#  - 2026-03-04: b\n[[rule]]\n";
        assert_eq!(super::changelog_version(text), "2026-03-04");
        assert_eq!(super::changelog_version("[[rule]]\n"), "1");
        assert!(super::version().starts_with("20"), "{}", super::version());
    }
}
