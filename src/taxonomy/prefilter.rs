//! A literal prefilter over a rule table: one Aho-Corasick pass over a name tells which rules
//! could match it, so that classifying a name runs the few rules whose literals it holds instead
//! of every rule in turn (a run of a million distinct kernel names ran ~100 regexes per name).
//!
//! Each rule gets a requirement: a set of literals of which any name it matches holds at least
//! one, compared ignoring ASCII case. A prefix or `contains` pattern is its own literal; a regex
//! gives the longest literal run its syntax requires (`(?i)all_?reduce` → `reduce`), or the union
//! over an alternation; a rule with a pattern that requires none (`\w+`) is always tried. The
//! prefilter only ever drops rules that cannot match, so first-match classification is unchanged.
//!
//! Case-insensitive regexes (`(?i)`) also match a few non-ASCII letters (`ſ` for `s`, the Kelvin
//! sign for `k`), which ASCII case folding does not know: names that are not ASCII skip the
//! prefilter and try every rule.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex_syntax::hir::{Class, Hir, HirKind};

use super::{Matcher, Rule};

/// Which rules of a table could match a name.
#[derive(Debug, Clone)]
pub(super) struct Prefilter {
    /// The literals of every requirement, lower-cased, searched ignoring ASCII case.
    literals: Option<AhoCorasick>,
    /// For each literal, the rules (positions in the table) that require it.
    owners: Vec<Vec<usize>>,
    /// Rules without a requirement, as a bit set over positions: always tried.
    always: Vec<u64>,
}

/// The rules a name could match: every rule, or those of a bit set.
pub(super) enum Candidates {
    All,
    Some(Vec<u64>),
}

impl Candidates {
    pub(super) fn may_match(&self, position: usize) -> bool {
        match self {
            Candidates::All => true,
            Candidates::Some(bits) => bits[position / 64] & (1 << (position % 64)) != 0,
        }
    }
}

impl Prefilter {
    pub(super) fn new<'a>(rules: impl IntoIterator<Item = &'a Rule>) -> Prefilter {
        let mut literals: Vec<Vec<u8>> = Vec::new();
        let mut owners: Vec<Vec<usize>> = Vec::new();
        let mut always: Vec<u64> = Vec::new();
        for (position, rule) in rules.into_iter().enumerate() {
            if position / 64 >= always.len() {
                always.push(0);
            }
            match requirement(&rule.matcher) {
                Some(set) => {
                    for literal in set {
                        match literals.iter().position(|l| *l == literal) {
                            Some(i) => owners[i].push(position),
                            None => {
                                literals.push(literal);
                                owners.push(vec![position]);
                            }
                        }
                    }
                }
                None => always[position / 64] |= 1 << (position % 64),
            }
        }
        let searcher = (!literals.is_empty()).then(|| {
            AhoCorasickBuilder::new()
                .ascii_case_insensitive(true)
                .match_kind(MatchKind::Standard)
                .build(&literals)
                .expect("a few hundred short literals build an Aho-Corasick automaton")
        });
        Prefilter {
            literals: searcher,
            owners,
            always,
        }
    }

    /// The rules that could match `name` or its demangled form.
    pub(super) fn candidates(&self, name: &str, demangled: Option<&str>) -> Candidates {
        if !name.is_ascii() || demangled.is_some_and(|d| !d.is_ascii()) {
            return Candidates::All;
        }
        let mut bits = self.always.clone();
        if let Some(searcher) = &self.literals {
            for haystack in std::iter::once(name).chain(demangled) {
                for found in searcher.find_overlapping_iter(haystack) {
                    for &position in &self.owners[found.pattern().as_usize()] {
                        bits[position / 64] |= 1 << (position % 64);
                    }
                }
            }
        }
        Candidates::Some(bits)
    }
}

/// Literals (lower-cased) of which any name the matcher matches holds one, ignoring ASCII case;
/// `None` when it needs none.
fn requirement(matcher: &Matcher) -> Option<Vec<Vec<u8>>> {
    let lower = |s: &str| s.as_bytes().to_ascii_lowercase();
    match matcher {
        Matcher::Prefix(patterns) | Matcher::Contains(patterns) => {
            Some(patterns.iter().map(|p| lower(p)).collect())
        }
        Matcher::Regex(regexes) => {
            let mut all = Vec::new();
            for regex in regexes {
                let hir = regex_syntax::Parser::new().parse(regex.as_str()).ok()?;
                all.extend(required(&hir)?);
            }
            Some(all)
        }
    }
}

/// What a regex requires of every string it matches (see [`requirement`]), for ASCII strings.
fn required(hir: &Hir) -> Option<Vec<Vec<u8>>> {
    match hir.kind() {
        HirKind::Literal(literal) => Some(vec![literal.0.to_ascii_lowercase()]),
        HirKind::Class(_) => one_byte(hir).map(|b| vec![vec![b]]),
        HirKind::Repetition(rep) if rep.min >= 1 => required(&rep.sub),
        HirKind::Capture(capture) => required(&capture.sub),
        HirKind::Alternation(alternatives) => {
            let mut all = Vec::new();
            for alternative in alternatives {
                all.extend(required(alternative)?);
            }
            Some(all)
        }
        HirKind::Concat(parts) => {
            // Runs of literals and one-letter classes are literals of their own; the best
            // requirement is the one whose shortest literal is longest.
            let mut options: Vec<Vec<Vec<u8>>> = Vec::new();
            let mut run: Vec<u8> = Vec::new();
            for part in parts {
                match part.kind() {
                    HirKind::Literal(literal) => run.extend(literal.0.to_ascii_lowercase()),
                    HirKind::Class(_) if one_byte(part).is_some() => run.extend(one_byte(part)),
                    _ => {
                        if !run.is_empty() {
                            options.push(vec![std::mem::take(&mut run)]);
                        }
                        options.extend(required(part));
                    }
                }
            }
            if !run.is_empty() {
                options.push(vec![run]);
            }
            options.into_iter().max_by(|a, b| {
                let shortest = |set: &Vec<Vec<u8>>| set.iter().map(Vec::len).min().unwrap_or(0);
                shortest(a)
                    .cmp(&shortest(b))
                    .then_with(|| b.len().cmp(&a.len()))
            })
        }
        HirKind::Empty | HirKind::Look(_) | HirKind::Repetition(_) => None,
    }
}

/// The one ASCII character, lower-cased, that a class matches in an ASCII string, ignoring case
/// (`[kK]`, and `(?i)k`, which also holds the Kelvin sign); `None` for any other class.
fn one_byte(hir: &Hir) -> Option<u8> {
    let HirKind::Class(class) = hir.kind() else {
        return None;
    };
    let mut ascii: Vec<u8> = Vec::new();
    let mut add = |start: u32, end: u32| {
        for c in start..=end.min(0x7F) {
            ascii.push(c as u8);
            if ascii.len() > 2 {
                break;
            }
        }
    };
    match class {
        Class::Unicode(u) => u
            .ranges()
            .iter()
            .for_each(|r| add(r.start() as u32, r.end() as u32)),
        Class::Bytes(b) => b
            .ranges()
            .iter()
            .for_each(|r| add(r.start().into(), r.end().into())),
    }
    match ascii.as_slice() {
        [one] => Some(one.to_ascii_lowercase()),
        [a, b] if a.eq_ignore_ascii_case(b) => Some(a.to_ascii_lowercase()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(pattern: &str) -> Option<Vec<String>> {
        let hir = regex_syntax::Parser::new().parse(pattern).unwrap();
        required(&hir).map(|set| {
            set.into_iter()
                .map(|l| String::from_utf8(l).unwrap())
                .collect()
        })
    }

    #[test]
    fn a_regex_requires_its_longest_literal_run() {
        assert_eq!(of("(?i)all_?reduce"), Some(vec!["reduce".into()]));
        assert_eq!(
            of("^nccl\\w*Kernel_AllReduce"),
            Some(vec!["kernel_allreduce".into()])
        );
        assert_eq!(
            of("at::native::\\S*(sbtopk|mbtopk|[Tt]op[Kk])").unwrap(),
            ["at::native::"]
        );
        assert_eq!(of("(?i)(one|two)shot_?all_?reduce").unwrap(), ["reduce"]);
        assert_eq!(
            of("^[^(]*(?i:gemm|gemv|matmul)").unwrap(),
            ["gemm", "gemv", "matmul"]
        );
        assert_eq!(of("[sdhi]\\d{3,5}gemm").unwrap(), ["gemm"]);
        assert_eq!(of("(?i)rotary|(^|_|::)rope_").unwrap(), ["rotary", "rope_"]);
        assert_eq!(of("(?i)task"), Some(vec!["task".into()]));
        assert_eq!(of("\\w+"), None);
        assert_eq!(of("a|\\d"), None);
        assert_eq!(of("x?"), None);
    }

    #[test]
    fn only_rules_whose_literals_a_name_holds_are_candidates() {
        let rules = super::super::Taxonomy::from_toml_str(
            r#"
            [[rule]]
            regex = '(?i)all_?reduce'
            category = "comm"
            [[rule]]
            contains = "gemm"
            category = "dense_gemm"
            [[rule]]
            regex = '^\w+$'
            category = "other"
            "#,
            "test",
        )
        .unwrap();
        let p = Prefilter::new(&rules);
        let c = p.candidates("my_ALLREDUCE_kernel", None);
        assert!(c.may_match(0) && !c.may_match(1) && c.may_match(2));
        let c = p.candidates("x", Some("ns::gemm<1>"));
        assert!(!c.may_match(0) && c.may_match(1) && c.may_match(2));
        // (?i)k also matches the Kelvin sign: a name that is not ASCII tries every rule.
        assert!(p.candidates("all_reduce_\u{212A}", None).may_match(1));
    }
}
