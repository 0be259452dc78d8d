//! Names as people read them, one family for every table, list and sentence: a kernel name made
//! readable ([`untruncated_short_name`]), cut in the middle so that the function and the tail
//! stay ([`short_name`]), and, within one table or list, labels that keep two different kernels
//! apart ([`distinct_labels`]); an image pair shortened to the part that differs
//! ([`image_labels`]).

use std::collections::HashMap;

use super::readable;

/// Longest kernel name shown in a table, a list or a sentence; the JSON keeps full names.
pub(crate) const NAME_WIDTH: usize = 96;

/// A kernel name made readable for people: demangled, no `void ` prefix, no parameter list, and
/// at most [`NAME_WIDTH`] characters, cut in the middle (see [`cut_middle`]).
pub(crate) fn short_name(name: &str) -> String {
    cut_middle(&untruncated_short_name(name), NAME_WIDTH, None)
}

/// [`short_name`] without the cut to [`NAME_WIDTH`].
#[cfg_attr(not(feature = "testing"), allow(unreachable_pub))] // public through `testing`
pub fn untruncated_short_name(name: &str) -> String {
    let readable = readable(name);
    // Control characters shown escaped: a name cannot break a line of any report.
    let readable = crate::text::printable(&readable).into_owned();
    let name = readable.as_str();
    let mut shown = name.strip_prefix("void ").unwrap_or(name);
    // Only C++ signatures carry a parameter list; "Memcpy DtoH (Device -> Host)" keeps its words.
    if shown.ends_with(')') && (name.starts_with("void ") || shown.contains("::")) {
        // Drop the parameter list: the last balanced "(...)" group at the end.
        let mut depth = 0i32;
        for (i, c) in shown.char_indices().rev() {
            match c {
                ')' => depth += 1,
                '(' => {
                    depth -= 1;
                    if depth == 0 {
                        if i > 0 {
                            shown = &shown[..i];
                        }
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    shown.to_string()
}

/// Whether a cut may start right after `c`: after a space, a comma or an opening bracket.
fn boundary(c: char) -> bool {
    matches!(c, ' ' | ',' | '<' | '(')
}

/// `text` in at most `width` characters (at least 16), cut in the middle: the head through the
/// first `<` (the function, at most half the width), `…`, and the tail, which holds the last
/// template arguments. With `focus` (a character index where this name differs from another),
/// a window around it is kept too: `head…window…tail`, so that the arguments that differ show.
pub(crate) fn cut_middle(text: &str, width: usize, focus: Option<usize>) -> String {
    let c: Vec<char> = text.chars().collect();
    let n = c.len();
    let width = width.max(16);
    if n <= width {
        return text.to_string();
    }
    let head_len = c
        .iter()
        .position(|&x| x == '<')
        .map_or(width / 3, |p| p + 1)
        .min(width / 2);
    let head: String = c[..head_len].iter().collect();
    // Characters after the head and one `…`.
    let rest = width - head_len - 1;
    let plain = || {
        let tail: String = c[n - rest..].iter().collect();
        format!("{head}…{tail}")
    };
    let Some(f) = focus else {
        return plain();
    };
    if f < head_len || f >= n - rest {
        // The difference is in the head or in the tail kept anyway.
        return plain();
    }
    let tail_len = rest / 3;
    let window = rest - tail_len - 1;
    // Start a little before the difference, at a word when one is near.
    let mut from = f.saturating_sub(window / 4).max(head_len);
    let earliest = from.saturating_sub(12).max(head_len);
    let mut k = from;
    while k > earliest && !boundary(c[k - 1]) {
        k -= 1;
    }
    if k > head_len && boundary(c[k - 1]) {
        from = k;
    }
    // `from <= f < n - rest` keeps the window clear of the tail.
    let to = (from + window).min(n - tail_len);
    let middle: String = c[from..to].iter().collect();
    let tail: String = c[n - tail_len..].iter().collect();
    let gap = if from > head_len { "…" } else { "" };
    let gap2 = if to < n - tail_len { "…" } else { "" };
    format!("{head}{gap}{middle}{gap2}{tail}")
}

/// Index of the first character where `a` and `b` differ.
fn first_difference(a: &[char], b: &[char]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The texts the labels are cut from: [`untruncated_short_name`], except where two different
/// names read the same that way (overloads differing in their parameters only): then the
/// readable name with its parameters, then the raw name escaped, then a ` [k]` suffix.
fn full_texts(names: &[&str]) -> Vec<String> {
    let mut full: Vec<String> = names.iter().map(|n| untruncated_short_name(n)).collect();
    let levels: [fn(&str) -> String; 2] = [
        |n| crate::text::printable(&readable(n)).into_owned(),
        |n| crate::text::printable(n).into_owned(),
    ];
    for level in levels.iter().map(Some).chain([None]) {
        // Texts shared by different names.
        let mut owners: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, t) in full.iter().enumerate() {
            owners.entry(t.as_str()).or_default().push(i);
        }
        let clashes: Vec<Vec<usize>> = owners
            .into_values()
            .filter(|ix| ix.iter().any(|&i| names[i] != names[ix[0]]))
            .collect();
        if clashes.is_empty() {
            break;
        }
        for ix in clashes {
            match level {
                Some(f) => {
                    for i in ix {
                        full[i] = f(names[i]);
                    }
                }
                None => {
                    // Number the different names of the clash, in order of appearance.
                    let mut seen: Vec<&str> = Vec::new();
                    for i in ix {
                        let k = match seen.iter().position(|s| *s == names[i]) {
                            Some(k) => k,
                            None => {
                                seen.push(names[i]);
                                seen.len() - 1
                            }
                        };
                        if k > 0 {
                            full[i] = format!("{} [{}]", full[i], k + 1);
                        }
                    }
                }
            }
        }
    }
    full
}

/// Labels for the names of one table or list: each [`short_name`]-like, cut in the middle to
/// `width` characters, and no two different names ever alike. Where cut names would read the
/// same, each keeps a window around where it differs from the others; where that is not enough,
/// the cut widens until they differ (at worst to the whole readable name). The same name always
/// gets the same label.
#[cfg_attr(not(feature = "testing"), allow(unreachable_pub))] // public through `testing`
pub fn distinct_labels(names: &[&str], width: usize) -> Vec<String> {
    distinct(full_texts(names), width)
}

/// [`distinct_labels`] for texts already readable (a table's column of names): cut as they
/// are, different texts never alike.
pub(crate) fn distinct_cuts(texts: &[&str], width: usize) -> Vec<String> {
    distinct(texts.iter().map(|t| t.to_string()).collect(), width)
}

fn distinct(full: Vec<String>, width: usize) -> Vec<String> {
    let chars: Vec<Vec<char>> = full.iter().map(|t| t.chars().collect()).collect();
    let longest = chars.iter().map(Vec::len).max().unwrap_or(0);
    let mut w = width.max(16);
    loop {
        let mut labels: Vec<String> = full.iter().map(|t| cut_middle(t, w, None)).collect();
        // Different texts that got one label: each keeps where it differs from the others.
        let mut groups: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, l) in labels.iter().enumerate() {
            groups.entry(l.as_str()).or_default().push(i);
        }
        let mut refocus: Vec<(usize, usize)> = Vec::new();
        for ix in groups.values() {
            for &i in ix {
                let focus = ix
                    .iter()
                    .filter(|&&j| full[j] != full[i])
                    .map(|&j| first_difference(&chars[i], &chars[j]))
                    .min();
                if let Some(f) = focus {
                    refocus.push((i, f));
                }
            }
        }
        for (i, f) in refocus {
            labels[i] = cut_middle(&full[i], w, Some(f));
        }
        if w >= longest || all_distinct(&full, &labels) {
            return labels;
        }
        w += (width / 4).max(8);
    }
}

/// Whether different texts have different labels.
fn all_distinct(full: &[String], labels: &[String]) -> bool {
    let mut owner: HashMap<&str, &str> = HashMap::new();
    full.iter()
        .zip(labels)
        .all(|(f, l)| *owner.entry(l.as_str()).or_insert(f.as_str()) == f.as_str())
}

/// Two names of one kernel (old, new) shortened so that each still shows where they differ:
/// [`distinct_labels`] of the pair.
pub(crate) fn distinguishing_names(old: &str, new: &str) -> (String, String) {
    let mut labels = distinct_labels(&[old, new], NAME_WIDTH).into_iter();
    let a = labels.next().unwrap_or_default();
    let b = labels.next().unwrap_or_default();
    (a, b)
}

/// An image pair (before, after) cut to the part that differs, for a headline or a narrow
/// table: the common repository (up to the last `:` or `/` before the first difference) and
/// the common tail from a `-` or `_` on are dropped, so `lmsysorg/sglang:v0.5.8-rocm700` →
/// `lmsysorg/sglang:v0.5.9-rocm700` reads `v0.5.8 → v0.5.9`. The full names belong in a
/// folded section or a line beside the table.
pub(crate) fn image_labels(old: &str, new: &str) -> (String, String) {
    let (a, b): (Vec<char>, Vec<char>) = (old.chars().collect(), new.chars().collect());
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let start = a[..common]
        .iter()
        .rposition(|&c| c == ':' || c == '/')
        .map_or(0, |i| i + 1);
    let (a, b) = (&a[start..], &b[start..]);
    let tail = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
        .min(a.len().min(b.len()));
    // The tail kept from its first separator on, so a tag is not cut inside a word.
    let cut = a[a.len() - tail..]
        .iter()
        .position(|&c| c == '-' || c == '_')
        .map_or(0, |i| tail - i);
    let keep = |s: &[char]| -> String { s[..s.len() - cut].iter().collect() };
    let (x, y) = (keep(a), keep(b));
    if x.is_empty() || y.is_empty() {
        (a.iter().collect(), b.iter().collect())
    } else {
        (x, y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The MI355X run's two MoE GEMMs, and the renamed one of `--inject rename-moe`.
    const MOE_GATE: &str = "void ck::kernel_moe_mxgemm_2lds<ck::GridwiseMoeGemmMX_BPreshuffle<ck::tensor_layout::gemm::RowMajor, ck::tensor_layout::gemm::ColumnMajor, ck::f4x2_pk_t, ck::e8m0_bexp_t, ck::bhalf_t, float, 32, 256, 128, 16, 16, true, 1>, true, 2, (ck::TailNumber)2>";
    const MOE_DOWN: &str = "void ck::kernel_moe_mxgemm_2lds<ck::GridwiseMoeGemmMX_BPreshuffle<ck::tensor_layout::gemm::RowMajor, ck::tensor_layout::gemm::ColumnMajor, ck::f4x2_pk_t, ck::e8m0_bexp_t, ck::bhalf_t, float, 32, 128, 256, 16, 16, false, 1>, true, 2, (ck::TailNumber)2>";

    #[test]
    fn a_long_name_is_cut_in_the_middle_keeping_function_and_tail() {
        let s = short_name(MOE_GATE);
        assert_eq!(s.chars().count(), NAME_WIDTH, "{s}");
        assert!(s.starts_with("ck::kernel_moe_mxgemm_2lds<…"), "{s}");
        assert!(s.ends_with(", true, 2, (ck::TailNumber)2>"), "{s}");
        // Short names stay whole.
        assert_eq!(short_name("nvjet_tst_64x32"), "nvjet_tst_64x32");
        let long = "Cijk_".to_string() + &"A".repeat(200) + "_tail";
        let cut = short_name(&long);
        assert_eq!(cut.chars().count(), NAME_WIDTH);
        assert!(cut.starts_with("Cijk_") && cut.ends_with("A_tail") && cut.contains('…'));
    }

    #[test]
    fn the_mi355x_moe_pair_reads_apart_and_each_shows_its_arguments() {
        // The head alone (the old cut) reads the same for both.
        let head = |n: &str| {
            untruncated_short_name(n)
                .chars()
                .take(NAME_WIDTH - 1)
                .collect::<String>()
        };
        assert_eq!(head(MOE_GATE), head(MOE_DOWN));
        assert_ne!(short_name(MOE_GATE), short_name(MOE_DOWN));
        let labels = distinct_labels(&[MOE_GATE, MOE_DOWN, MOE_GATE], NAME_WIDTH);
        assert_ne!(labels[0], labels[1], "{labels:?}");
        assert_eq!(labels[0], labels[2], "one name, one label");
        for l in &labels {
            assert!(l.chars().count() <= NAME_WIDTH, "{l}");
            assert!(l.starts_with("ck::kernel_moe_mxgemm_2lds<"), "{l}");
        }
        assert!(labels[0].contains("32, 256, 128"), "{}", labels[0]);
        assert!(labels[1].contains("32, 128, 256"), "{}", labels[1]);
        // The renamed kernel: one more template argument at the end.
        let renamed = MOE_GATE.replace("(ck::TailNumber)2>", "(ck::TailNumber)2, 1>");
        let (old, new) = distinguishing_names(MOE_GATE, &renamed);
        assert_ne!(old, new);
        assert!(new.ends_with("(ck::TailNumber)2, 1>"), "{new}");
    }

    #[test]
    fn names_that_differ_far_from_both_ends_keep_a_window_on_the_difference() {
        let name = |arg: &str| {
            format!(
                "ck::gemm<{}, {arg}, {}>",
                "ck::Layout::RowMajor, ".repeat(6),
                "ck::Sequence<1, 2, 4>, ".repeat(6)
            )
        };
        let (a, b) = (name("Tile<256, 128>"), name("Tile<128, 256>"));
        assert_eq!(short_name(&a), short_name(&b), "head and tail alike");
        let labels = distinct_labels(&[&a, &b], NAME_WIDTH);
        assert_ne!(labels[0], labels[1]);
        assert!(labels[0].contains("Tile<256, 128>"), "{}", labels[0]);
        assert!(labels[1].contains("Tile<128, 256>"), "{}", labels[1]);
        for l in &labels {
            assert!(l.starts_with("ck::gemm<…"), "{l}");
            assert!(l.ends_with("4>, >"), "{l}");
            assert_eq!(l.chars().count(), NAME_WIDTH, "{l}");
        }
    }

    #[test]
    fn overloads_and_names_that_read_the_same_get_different_labels() {
        let names = ["void f<int>(int)", "void f<int>(float)", "f<int>"];
        let labels = distinct_labels(&names, NAME_WIDTH);
        assert_eq!(labels[0], "void f<int>(int)");
        assert_eq!(labels[1], "void f<int>(float)");
        assert_eq!(labels[2], "f<int>");
        // Escaping makes two raw names alike: numbered.
        let labels = distinct_labels(&["a\nb", "a\\nb"], NAME_WIDTH);
        assert_ne!(labels[0], labels[1], "{labels:?}");
    }

    #[test]
    fn an_image_pair_is_cut_to_the_tag_that_differs() {
        let tags = |a: &str, b: &str| image_labels(a, b);
        assert_eq!(
            tags(
                "lmsysorg/sglang:v0.5.8-rocm700-mi35x",
                "lmsysorg/sglang:v0.5.9-rocm700-mi35x"
            ),
            ("v0.5.8".into(), "v0.5.9".into())
        );
        assert_eq!(
            tags("lmsysorg/sglang:v0.5.4", "lmsysorg/sglang:v0.5.5"),
            ("v0.5.4".into(), "v0.5.5".into())
        );
        assert_eq!(
            tags("a/x:v1-cuda", "b/x:v1-cuda"),
            ("a/x:v1".into(), "b/x:v1".into())
        );
        // A tail that differs only in its suffix is kept whole.
        assert_eq!(
            tags("img:v1-rocm", "img:v1-cuda"),
            ("v1-rocm".into(), "v1-cuda".into())
        );
        // Different repositories: the names as given.
        assert_eq!(tags("a/b:1", "c/d:2"), ("a/b:1".into(), "c/d:2".into()));
        assert_eq!(
            tags("r@sha256:aa", "r@sha256:bb"),
            ("aa".into(), "bb".into())
        );
    }

    proptest! {
        #[test]
        fn different_names_never_share_a_label(
            names in proptest::collection::vec("[ab<>, :]{0,3}[a-c<>(), ]{0,160}", 1..8),
            width in 16usize..120,
        ) {
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let labels = distinct_labels(&refs, width);
            for i in 0..refs.len() {
                for j in 0..refs.len() {
                    prop_assert_eq!(refs[i] == refs[j], labels[i] == labels[j],
                        "{:?} {:?} -> {:?} {:?}", refs[i], refs[j], labels[i], labels[j]);
                }
            }
        }

        #[test]
        fn a_cut_keeps_to_its_width(text in "[a-z<>, ]{0,300}", width in 16usize..200, focus in proptest::option::of(0usize..300)) {
            let cut = cut_middle(&text, width, focus);
            prop_assert!(cut.chars().count() <= width.max(16), "{:?}", cut);
            if text.chars().count() <= width.max(16) {
                prop_assert_eq!(cut, text);
            }
        }
    }
}
