//! Installing and pinning: the GitHub Action's script run locally against
//! the fixtures (the built binary instead of a download), `cargo lockaudit`,
//! a mistyped subcommand, and every published install path naming the
//! version in Cargo.toml and the release asset names the release workflow
//! builds. Covers #15.

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

#[test]
fn every_install_path_names_the_version_in_cargo_toml() {
    let v = version();
    let readme = read("README.md");
    for needle in [
        format!("lockaudit/lockaudit@v{v}"),
        format!("rev: v{v}"),
        format!("--version {v} --locked"),
        format!("cli:lockaudit:{v}"),
        format!("releases/download/v{v}/lockaudit-v{v}-x86_64-unknown-linux-musl.tar.gz"),
    ] {
        assert!(readme.contains(&needle), "README lacks `{needle}`");
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
    assert!(read("action.yml").contains(&format!("default: \"{v}\"")));
    assert!(read(".pre-commit-hooks.yaml").contains(&format!("rev: v{v}")));
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
