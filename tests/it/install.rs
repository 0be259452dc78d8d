//! `.github/install.sh`, the action's installer, run for real with bash and curl against a file
//! server on 127.0.0.1 laid out like GitHub's release downloads, with assets packed by
//! `.github/package.sh` as release.yml packs them. No network: the server is local, and `cargo`
//! (the source-build fallback) is a stand-in on PATH that records its arguments.
#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

const REPO: &str = "acme/tracegate";
const VERSION: &str = env!("CARGO_PKG_VERSION");
const RELEASE_BINARY: &str = "#!/bin/sh\necho 'tracegate (release stand-in)'\n";

/// A static file server: GET /PATH answers ROOT/PATH, or 404. Records every path asked for.
struct Server {
    url: String,
    root: PathBuf,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn start(root: &Path) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (log, dir) = (requests.clone(), root.to_path_buf());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    continue;
                }
                // Skip the headers.
                let mut header = String::new();
                while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
                    header.clear();
                }
                let path = line.split(' ').nth(1).unwrap_or("/").to_string();
                log.lock().unwrap().push(path.clone());
                let file = dir.join(path.trim_start_matches('/'));
                let (status, body) = match std::fs::read(&file) {
                    Ok(body) if !path.contains("..") => ("200 OK", body),
                    _ => ("404 Not Found", b"Not Found".to_vec()),
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(&body);
            }
        });
        Server {
            url,
            root: root.to_path_buf(),
            requests,
        }
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }

    /// Where release TAG's assets are served from.
    fn release_dir(&self, tag: &str) -> PathBuf {
        self.root.join(REPO).join("releases/download").join(tag)
    }
}

fn target() -> String {
    format!("{}-unknown-linux-musl", std::env::consts::ARCH)
}

fn asset() -> String {
    format!("tracegate-{}.tar.gz", target())
}

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn write_executable(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Packs BINARY_TEXT as release TAG's asset with .github/package.sh, as release.yml does.
fn publish(server: &Server, tag: &str, binary_text: &str) {
    let work = tempfile::tempdir().unwrap();
    let binary = work.path().join("tracegate");
    write_executable(&binary, binary_text);
    crate::common::run_std_ok(
        Command::new("bash")
            .arg(manifest_dir().join(".github/package.sh"))
            .arg(&binary)
            .arg(target())
            .arg(server.release_dir(tag)),
    );
}

struct Install {
    code: i32,
    stdout: String,
    stderr: String,
    /// The installed binary's text, if any.
    installed: Option<String>,
    /// Each `cargo` call's arguments, one line each.
    cargo_calls: Vec<String>,
    /// What the script wrote to $GITHUB_OUTPUT.
    github_output: String,
}

/// Runs install.sh as action.yml does, at action ref REF, with `cargo` a recording stand-in.
fn install(server: &Server, reference: &str, extra_env: &[(&str, &str)]) -> Install {
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("root");
    let bin_dir = work.path().join("fake-bin");
    let cargo_log = work.path().join("cargo.log");
    // `cargo install ... --root ROOT` puts a binary at ROOT/bin/tracegate, as the real one does.
    write_executable(
        &bin_dir.join("cargo"),
        &format!(
            r#"#!/usr/bin/env bash
echo "$*" >> '{log}'
while [ $# -gt 0 ]; do
    if [ "$1" = --root ]; then root="$2"; fi
    shift
done
mkdir -p "$root/bin"
printf '#!/bin/sh\necho "tracegate (built from source)"\n' > "$root/bin/tracegate"
chmod 755 "$root/bin/tracegate"
"#,
            log = cargo_log.display()
        ),
    );
    let github_output = work.path().join("github_output");
    std::fs::write(&github_output, "").unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("bash");
    cmd.arg(manifest_dir().join(".github/install.sh"))
        .env("PATH", path)
        .env("TRACEGATE_SOURCE", manifest_dir())
        .env("TRACEGATE_REF", reference)
        .env("TRACEGATE_REPOSITORY", REPO)
        .env("TRACEGATE_RELEASES_URL", &server.url)
        .env("TRACEGATE_INSTALL_ROOT", &root)
        .env("GITHUB_OUTPUT", &github_output);
    for name in [
        "TRACEGATE_VERSION",
        "TRACEGATE_BUILD_FROM_SOURCE",
        "TRACEGATE_TARGET",
        "GITHUB_SERVER_URL",
        "http_proxy",
        "https_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "all_proxy",
    ] {
        cmd.env_remove(name);
    }
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    Install {
        code: out.status.code().unwrap(),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
        installed: std::fs::read_to_string(root.join("bin/tracegate")).ok(),
        cargo_calls: std::fs::read_to_string(&cargo_log)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect(),
        github_output: std::fs::read_to_string(&github_output).unwrap(),
    }
}

fn asset_path(tag: &str) -> String {
    format!("/{REPO}/releases/download/{tag}/{}", asset())
}

fn source_build() -> String {
    format!(
        "install --locked --path {} --root ",
        manifest_dir().display()
    )
}

#[test]
fn good_checksum_installs_the_release_binary() {
    let files = tempfile::tempdir().unwrap();
    let server = Server::start(files.path());
    let tag = format!("v{VERSION}");
    publish(&server, &tag, RELEASE_BINARY);

    let run = install(&server, &tag, &[]);
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    assert_eq!(run.installed.as_deref(), Some(RELEASE_BINARY));
    assert!(
        run.cargo_calls.is_empty(),
        "built anyway: {:?}",
        run.cargo_calls
    );
    assert_eq!(run.github_output, "installed-from=release\n");
    assert!(
        run.stderr.contains("tracegate (release stand-in)"),
        "{}",
        run.stderr
    );
    let asked = server.requests();
    assert_eq!(
        asked,
        [asset_path(&tag), format!("{}.sha256", asset_path(&tag))]
    );
}

#[test]
fn bad_checksum_is_refused_without_falling_back() {
    let files = tempfile::tempdir().unwrap();
    let server = Server::start(files.path());
    let tag = format!("v{VERSION}");
    publish(&server, &tag, RELEASE_BINARY);
    // The asset replaced after its checksum was published.
    let sha = std::fs::read(server.release_dir(&tag).join(format!("{}.sha256", asset()))).unwrap();
    publish(&server, &tag, "#!/bin/sh\necho 'tampered'\n");
    std::fs::write(
        server.release_dir(&tag).join(format!("{}.sha256", asset())),
        sha,
    )
    .unwrap();

    let run = install(&server, &tag, &[]);
    assert_eq!(run.code, 1, "stderr: {}", run.stderr);
    assert!(run.stderr.contains("does not match"), "{}", run.stderr);
    assert!(
        run.stdout
            .contains("::error title=tracegate install::refusing"),
        "{}",
        run.stdout
    );
    assert_eq!(run.installed, None, "a binary was installed");
    assert!(
        run.cargo_calls.is_empty(),
        "fell back: {:?}",
        run.cargo_calls
    );
    assert_eq!(run.github_output, "");
}

#[test]
fn missing_checksum_file_is_refused() {
    let files = tempfile::tempdir().unwrap();
    let server = Server::start(files.path());
    let tag = format!("v{VERSION}");
    publish(&server, &tag, RELEASE_BINARY);
    std::fs::remove_file(server.release_dir(&tag).join(format!("{}.sha256", asset()))).unwrap();

    let run = install(&server, &tag, &[]);
    assert_eq!(run.code, 1, "stderr: {}", run.stderr);
    assert!(run.stderr.contains("HTTP 404"), "{}", run.stderr);
    assert_eq!(run.installed, None);
    assert!(
        run.cargo_calls.is_empty(),
        "fell back: {:?}",
        run.cargo_calls
    );
}

#[test]
fn missing_asset_falls_back_to_building_from_source() {
    let files = tempfile::tempdir().unwrap();
    let server = Server::start(files.path());
    let tag = format!("v{VERSION}");

    let run = install(&server, &tag, &[]);
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    assert!(run.stderr.contains("HTTP 404"), "{}", run.stderr);
    assert_eq!(run.cargo_calls.len(), 1, "{:?}", run.cargo_calls);
    assert!(
        run.cargo_calls[0].starts_with(&source_build()),
        "{:?}",
        run.cargo_calls
    );
    assert!(run.installed.unwrap().contains("built from source"));
    assert_eq!(run.github_output, "installed-from=source\n");
    assert_eq!(server.requests(), [asset_path(&tag)]);
}

#[test]
fn a_moving_major_tag_installs_the_release_of_its_cargo_version() {
    let files = tempfile::tempdir().unwrap();
    let server = Server::start(files.path());
    let tag = format!("v{VERSION}");
    publish(&server, &tag, RELEASE_BINARY);
    let major = format!("v{}", VERSION.split('.').next().unwrap());

    let run = install(&server, &major, &[]);
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    assert_eq!(run.installed.as_deref(), Some(RELEASE_BINARY));
    assert_eq!(server.requests()[0], asset_path(&tag));
}

#[test]
fn a_branch_ref_or_build_from_source_builds_without_asking_the_server() {
    let files = tempfile::tempdir().unwrap();
    let server = Server::start(files.path());
    let tag = format!("v{VERSION}");
    publish(&server, &tag, RELEASE_BINARY);

    for (reference, env) in [
        ("main", &[][..]),
        ("", &[][..]),
        (&tag[..], &[("TRACEGATE_BUILD_FROM_SOURCE", "true")][..]),
    ] {
        let run = install(&server, reference, env);
        assert_eq!(run.code, 0, "ref {reference:?}: {}", run.stderr);
        assert_eq!(run.cargo_calls.len(), 1, "ref {reference:?}");
        assert!(run.cargo_calls[0].starts_with(&source_build()));
        assert_eq!(run.github_output, "installed-from=source\n");
    }
    assert_eq!(server.requests(), Vec::<String>::new());
}
