//! One version scheme: the release workflow creates tags `vX.Y.Z` equal to Cargo.toml's
//! version, and every `tracegate@vX.Y.Z` a user is told to copy (the README, the examples, the
//! action's own metadata) is the tag of this version, one the release workflow would create.

use std::path::Path;

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)).unwrap()
}

/// A GitHub Actions filter pattern as a regex, for the characters release.yml's uses: `[...]`
/// sets, `+` (one or more of the previous), and literal text.
fn filter_regex(pattern: &str) -> regex::Regex {
    let mut re = String::from("^");
    let mut in_set = false;
    for c in pattern.chars() {
        match c {
            '[' => {
                in_set = true;
                re.push(c);
            }
            ']' => {
                in_set = false;
                re.push(c);
            }
            '+' if !in_set => re.push('+'),
            '*' | '?' | '!' if !in_set => panic!("filter pattern {pattern:?}: {c} not handled"),
            c if in_set => re.push(c),
            c => re.push_str(&regex::escape(&c.to_string())),
        }
    }
    re.push('$');
    regex::Regex::new(&re).unwrap()
}

/// release.yml's tag patterns (`tags: [...]` under `on: push:`).
fn release_tag_patterns() -> Vec<String> {
    let release = read(".github/workflows/release.yml");
    let line = release
        .lines()
        .find(|l| l.trim_start().starts_with("tags:"))
        .expect("release.yml triggers on tags");
    let list = line.split_once('[').unwrap().1.rsplit_once(']').unwrap().0;
    list.split(',')
        .map(|p| p.trim().trim_matches('"').to_string())
        .collect()
}

#[test]
fn the_release_workflow_makes_the_tag_of_cargo_tomls_version() {
    let tag = format!("v{VERSION}");
    let patterns = release_tag_patterns();
    assert!(
        patterns.iter().any(|p| filter_regex(p).is_match(&tag)),
        "{tag} matches none of release.yml's tag patterns {patterns:?}"
    );
    // A tag the pattern takes that is not of this version is refused by the workflow itself.
    let release = read(".github/workflows/release.yml");
    assert!(
        release.contains(r#"if [ "$GITHUB_REF_NAME" != "v$version" ]"#),
        "release.yml checks the tag against Cargo.toml's version"
    );
    // The patterns are exact versions: no moving tag (v1) is ever published.
    for p in &patterns {
        assert!(!filter_regex(p).is_match("v1"), "{p}");
        assert!(!filter_regex(p).is_match("v1.2"), "{p}");
    }
}

#[test]
fn every_tracegate_ref_users_copy_is_this_versions_release_tag() {
    let uses = regex::Regex::new(r"tracegate@([A-Za-z0-9._/-]+)").unwrap();
    let patterns: Vec<regex::Regex> = release_tag_patterns()
        .iter()
        .map(|p| filter_regex(p))
        .collect();
    let mut files = vec!["README.md".to_string(), "action.yml".to_string()];
    for entry in
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/workflows")).unwrap()
    {
        let name = entry.unwrap().file_name().into_string().unwrap();
        files.push(format!("examples/workflows/{name}"));
    }
    let mut seen = 0;
    for file in &files {
        for c in uses.captures_iter(&read(file)) {
            let r = c[1].trim_end_matches('.');
            // `@REF` in prose stands for any ref; every concrete one is a version tag.
            if r.eq_ignore_ascii_case("ref") {
                continue;
            }
            seen += 1;
            assert_eq!(r, format!("v{VERSION}"), "{file}: tracegate@{r}");
            assert!(
                patterns.iter().any(|p| p.is_match(r)),
                "{file}: {r} is not a tag release.yml creates"
            );
        }
    }
    // The README's snippet and the copyable example at least.
    assert!(seen >= 2, "{seen} refs found in {files:?}");
    let readme = read("README.md");
    assert!(
        readme.contains(&format!("uses: OWNER/tracegate@v{VERSION}")),
        "the README's Action snippet uses v{VERSION}"
    );
    assert!(
        read("examples/workflows/external-gate.yml")
            .contains(&format!("uses: OWNER/tracegate@v{VERSION}")),
        "the copyable example uses v{VERSION}"
    );
}
