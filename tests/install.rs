//! Installing and pinning: the GitHub Action's script run locally against
//! the fixtures (the built binary instead of a download, or its own source
//! built when no release exists), `cargo lockaudit`, a mistyped
//! subcommand, the README offering only what works before a release, and
//! the release asset names the release workflow builds. Covers #15 and #25.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{cargo_lockaudit, copy_dir, lockaudit};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn version() -> String {
    read("Cargo.toml")
        .lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .expect("Cargo.toml has a version")
        .to_string()
}

/// Runs scripts/action.sh as the action does, with LOCKAUDIT_BIN standing
/// in for the download; returns (script exit code, stdout, outputs).
#[cfg(unix)]
fn run_action(dir: &Path, envs: &[(&str, &str)]) -> (i32, String, String) {
    let tmp = tempfile::tempdir().unwrap();
    let outputs = tmp.path().join("outputs");
    fs::write(&outputs, "").unwrap();
    let mut cmd = Command::new("bash");
    cmd.arg(root().join("scripts/action.sh"))
        .current_dir(dir)
        .env("LOCKAUDIT_BIN", common::bin())
        .env("INPUT_VERSION", version())
        .env("RUNNER_TEMP", tmp.path())
        .env("GITHUB_OUTPUT", &outputs)
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("GITHUB_BASE_REF")
        .env_remove("INPUT_NEW_SINCE")
        .env_remove("INPUT_ARGS");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("bash runs");
    let outputs_text = fs::read_to_string(&outputs).unwrap();
    let sarif = outputs_text
        .lines()
        .find_map(|l| l.strip_prefix("sarif-file="))
        .map(|p| fs::read_to_string(p).expect("the SARIF file exists"));
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        format!("{outputs_text}{}", sarif.unwrap_or_default()),
    )
}

/// A copy of a fixture project outside any repository, so that paths in
/// the annotations are from the project's own root.
#[cfg(unix)]
fn copy_project(name: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&common::project(name), tmp.path());
    tmp
}

#[cfg(unix)]
#[test]
fn the_action_script_reports_findings_through_its_exit_code_output() {
    let unannotated = copy_project("unannotated");
    let annotated = copy_project("annotated");
    let (code, stdout, outputs) = run_action(
        unannotated.path(),
        &[("INPUT_PATHS", "src"), ("INPUT_SARIF", "true")],
    );
    assert_eq!(code, 0, "the script itself succeeds:\n{stdout}");
    assert!(outputs.contains("exit-code=1\n"), "{outputs}");
    assert!(
        stdout.contains("::error file=src/lib.rs,line=2,"),
        "{stdout}"
    );
    assert!(outputs.contains("sarif-file="), "{outputs}");
    assert!(
        outputs.contains("\"ruleId\": \"missing-purpose\""),
        "{outputs}"
    );

    let (code, stdout, outputs) = run_action(
        annotated.path(),
        &[("INPUT_PATHS", "."), ("INPUT_SARIF", "false")],
    );
    assert_eq!(code, 0, "{stdout}");
    assert!(outputs.contains("exit-code=0\n"), "{outputs}");
    assert!(!outputs.contains("sarif-file="), "{outputs}");

    // A bad argument is exit 2, which the action's last step turns into a
    // failed job like any other non-zero code.
    let (_, _, outputs) = run_action(annotated.path(), &[("INPUT_ARGS", "--fail-on sometimes")]);
    assert!(outputs.contains("exit-code=2\n"), "{outputs}");
}

#[test]
fn cargo_lockaudit_runs_the_same_commands() {
    let dir = root().join("fixtures/projects/unannotated");
    let direct = lockaudit(&dir, &["check", "--format", "short"]);
    // What cargo runs for `cargo lockaudit check --format short`.
    let via_cargo = cargo_lockaudit(&dir, &["lockaudit", "check", "--format", "short"]);
    assert_eq!(direct.code, 1, "{direct:?}");
    assert_eq!(via_cargo.code, 1, "{via_cargo:?}");
    assert_eq!(direct.stdout, via_cargo.stdout);
    assert!(via_cargo.stdout.contains("missing-purpose"));
}

#[test]
fn a_mistyped_subcommand_is_an_error_with_a_suggestion_not_a_path() {
    let tmp = tempfile::tempdir().unwrap();
    let out = lockaudit(tmp.path(), &["chek"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("did you mean `check`?"), "{out:?}");
    // A directory of that name is a path to audit, as before.
    fs::create_dir(tmp.path().join("chek")).unwrap();
    let out = lockaudit(tmp.path(), &["chek"]);
    assert_eq!(out.code, 0, "{out:?}");
}

/// The README's text from the heading `start` to the next heading of the
/// same or a higher level.
fn section<'a>(text: &'a str, start: &str) -> &'a str {
    let level = start.chars().take_while(|c| *c == '#').count();
    let at = text
        .find(&format!("\n{start}\n"))
        .unwrap_or_else(|| panic!("README lacks `{start}`"))
        + 1;
    let body = &text[at + start.len()..];
    let end = body
        .match_indices("\n#")
        .find(|(i, _)| {
            let hashes = body[i + 1..].chars().take_while(|c| *c == '#').count();
            hashes <= level && body[i + 1 + hashes..].starts_with(' ')
        })
        .map_or(body.len(), |(i, _)| i);
    &text[at..at + start.len() + end]
}

/// No release exists, so the README offers only what works today as
/// available (building from source with `--locked`), and every release
/// path (the tag, the download, binstall, crates.io) stands under "Once a
/// `v*` tag is published" or in a paragraph saying so, with the version in
/// Cargo.toml.
#[test]
fn install_offers_only_what_works_today_and_marks_the_release_paths() {
    let v = version();
    let readme = read("README.md");
    let install = section(&readme, "## Install");
    let later = section(&readme, "### Once a `v*` tag is published");
    let today = &install[..install
        .find(later)
        .expect("the release paths are in Install")];
    for needle in [
        "cargo install --locked --path .",
        "cargo install --locked --git https://github.com/lockaudit/lockaudit",
        "lockaudit/lockaudit@<commit>",
        "language: system",
    ] {
        assert!(today.contains(needle), "Install lacks `{needle}`:\n{today}");
    }
    for released in ["releases/download", "binstall", "--tag", "@v", "rev: v"] {
        assert!(
            !today.contains(released),
            "Install offers `{released}` as available today:\n{today}"
        );
    }
    for needle in [
        format!("lockaudit/lockaudit@v{v}"),
        format!("rev: v{v}"),
        format!("--tag v{v}"),
        format!("binstall lockaudit --version {v}"),
        format!("releases/download/v{v}/lockaudit-v{v}-x86_64-unknown-linux-musl.tar.gz"),
    ] {
        assert!(later.contains(&needle), "the release paths lack `{needle}`");
    }
    // Anywhere else, a release is named only in a paragraph that says it
    // does not exist yet.
    let outside = readme.replace(later, "");
    for paragraph in outside.split("\n\n") {
        for released in [
            format!("@v{v}"),
            format!("rev: v{v}"),
            "releases/download".into(),
        ] {
            if paragraph.contains(&released) {
                let words = paragraph.split_whitespace().collect::<Vec<_>>().join(" ");
                assert!(
                    words.contains("nce a `v*` tag is published"),
                    "`{released}` offered without saying no release exists yet:\n{paragraph}"
                );
            }
        }
    }
    // No other version is offered anywhere a user copies from.
    for (file, text) in [
        ("README.md", readme.clone()),
        (".pre-commit-hooks.yaml", read(".pre-commit-hooks.yaml")),
        ("action.yml", read("action.yml")),
    ] {
        for (i, _) in text.match_indices("v0.") {
            let rest: String = text[i + 1..]
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            assert_eq!(rest.trim_end_matches('.'), v, "{file} offers v{rest}");
        }
    }
    let hooks = read(".pre-commit-hooks.yaml");
    assert!(hooks.contains("rev: <commit>"), "{hooks}");
    assert!(hooks.contains("language: system"), "{hooks}");
    assert!(read("action.yml").contains(&format!("default: \"{v}\"")));
}

/// The licence files the crate's `license` names, and a changelog with an
/// Unreleased section, exist and ship in the package.
#[test]
fn licences_and_changelog_exist_and_ship() {
    let cargo = read("Cargo.toml");
    assert!(cargo.contains("license = \"MIT OR Apache-2.0\""));
    let mit = read("LICENSE-MIT");
    assert!(mit.starts_with("MIT License"), "{mit}");
    assert!(mit.contains("Copyright (c) The lockaudit authors"));
    let apache = read("LICENSE-APACHE");
    assert!(apache.contains("Apache License") && apache.contains("Version 2.0, January 2004"));
    assert!(apache.contains("END OF TERMS AND CONDITIONS"));
    let changelog = read("CHANGELOG.md");
    assert!(changelog.contains("Keep a Changelog"));
    assert!(changelog.contains("## [Unreleased]"));
    for file in ["LICENSE-MIT", "LICENSE-APACHE", "CHANGELOG.md"] {
        assert!(
            cargo.contains(&format!("\"{file}\"")),
            "Cargo.toml `include` lacks {file}"
        );
    }
}

/// The minimum Rust version is stated where a user reads it, and the
/// script that checks it uses that toolchain.
#[test]
fn the_minimum_rust_version_is_stated_and_checked_by_the_script() {
    let cargo = read("Cargo.toml");
    let msrv = cargo
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .expect("Cargo.toml has a rust-version");
    let readme = read("README.md");
    assert!(
        readme.contains(&format!("Rust {msrv} or newer")),
        "README does not state the minimum Rust version {msrv}"
    );
    let script = read("scripts/msrv.sh");
    assert!(
        script.contains("rust-version"),
        "the script reads the version from Cargo.toml"
    );
    assert!(script.contains("CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS=fallback"));
    assert!(script.contains("--locked"));
}

#[test]
fn release_assets_binstall_and_the_action_agree_on_names() {
    let release = read(".github/workflows/release.yml");
    let cargo = read("Cargo.toml");
    let action = read("scripts/action.sh");
    // The tag is `v{version}`, so these three spell the same file name.
    assert!(release.contains("name=\"lockaudit-${GITHUB_REF_NAME}-${{ matrix.target }}\""));
    assert!(cargo.contains(
        "/releases/download/v{ version }/{ name }-v{ version }-{ target }{ archive-suffix }"
    ));
    assert!(action.contains("name=\"lockaudit-v$VERSION-$t\""));
    assert!(action.contains("releases/download/v$VERSION/$name.$ext"));
    for target in [
        "x86_64-unknown-linux-musl",
        "aarch64-unknown-linux-musl",
        "aarch64-apple-darwin",
        "x86_64-apple-darwin",
        "x86_64-pc-windows-msvc",
    ] {
        assert!(release.contains(&format!("target: {target},")), "{target}");
        assert!(action.contains(&format!("echo {target}")), "{target}");
    }
}

/// With no release to download (none is published yet), the action builds
/// lockaudit from its own source, the commit `uses:` pins, with
/// `cargo install --locked --path`. Stand-ins for `curl` (every download
/// fails, as it does before a release exists) and `cargo` (records its
/// arguments and installs the binary under test) show what it runs.
#[cfg(unix)]
#[test]
fn the_action_builds_its_own_source_with_locked_when_no_release_exists() {
    use std::os::unix::fs::PermissionsExt;
    let project = copy_project("unannotated");
    let bin = tempfile::tempdir().unwrap();
    let log = bin.path().join("cargo-args");
    let write_tool = |name: &str, body: &str| {
        let p = bin.path().join(name);
        fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    };
    write_tool("curl", "exit 22");
    write_tool(
        "cargo",
        &format!(
            "echo \"$PWD\" > '{log}'\nfor a in \"$@\"; do echo \"$a\" >> '{log}'; done\n\
             while [ $# -gt 0 ]; do [ \"$1\" = --root ] && root=$2; shift; done\n\
             mkdir -p \"$root/bin\" && ln -s '{real}' \"$root/bin/lockaudit\"",
            log = log.display(),
            real = env!("CARGO_BIN_EXE_lockaudit"),
        ),
    );
    let tmp = tempfile::tempdir().unwrap();
    let outputs = tmp.path().join("outputs");
    fs::write(&outputs, "").unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .arg(root().join("scripts/action.sh"))
        .current_dir(project.path())
        .env("PATH", path)
        .env("GITHUB_ACTION_PATH", root())
        .env("INPUT_VERSION", version())
        .env("INPUT_PATHS", "src")
        .env("RUNNER_TEMP", tmp.path())
        .env("GITHUB_OUTPUT", &outputs)
        .env_remove("LOCKAUDIT_BIN")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("GITHUB_BASE_REF")
        .env_remove("INPUT_NEW_SINCE")
        .env_remove("INPUT_ARGS")
        .env_remove("INPUT_SARIF")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let args = fs::read_to_string(&log).expect("cargo was run");
    let args: Vec<&str> = args.lines().collect();
    // Run from outside the audited checkout, so its `.cargo/config.toml`
    // cannot reach the build.
    assert_eq!(Path::new(args[0]), tmp.path(), "{args:?}");
    assert_eq!(args[1], "install", "{args:?}");
    assert!(args.contains(&"--locked"), "{args:?}");
    let at = args.iter().position(|a| *a == "--path").expect("--path");
    assert_eq!(Path::new(args[at + 1]), root(), "{args:?}");
    assert!(
        stderr.contains("building it from the action's source"),
        "{stderr}"
    );
    // The binary it built is the one that audited.
    let outputs = fs::read_to_string(&outputs).unwrap();
    assert!(outputs.contains("exit-code=1\n"), "{outputs}");
}
