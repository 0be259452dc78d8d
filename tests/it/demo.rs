//! `demo` checks all of its arguments before it generates anything, and leaves no directory.

use crate::common::{self, tracegate};

#[test]
fn demo_refuses_a_bad_injection_at_once_and_leaves_nothing_behind() {
    let tmp = tempfile::tempdir().unwrap();
    for args in [
        vec!["demo", "--inject", "bogus=2"],
        vec!["demo", "--scenario", "no-such-scenario"],
    ] {
        let out = tracegate()
            .env("TMPDIR", tmp.path())
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        // Refused before the clean half ran: nothing generated, nothing printed.
        assert!(
            out.stdout.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(!stderr.contains("demo: synthetic"), "{args:?}: {stderr}");
        assert_eq!(
            std::fs::read_dir(tmp.path()).unwrap().count(),
            0,
            "{args:?}"
        );
    }
}

#[test]
fn demo_removes_its_temporary_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tracegate()
        .env("TMPDIR", tmp.path())
        .arg("demo")
        .output()
        .unwrap();
    common::assert_exit(&out, 0);
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}
