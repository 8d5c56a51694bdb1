//! What the test suites share: running the built binary, the fixture
//! projects, and the `//~` markers that fixtures, fixture projects and the
//! pack tests are written with.
//!
//! Each suite compiles this module on its own (`mod common;`) and uses a
//! part of it, hence the `dead_code` allowance.
#![allow(dead_code)]

pub mod fixture;
pub mod guarded;
pub mod markers;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root.
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The built `lockaudit` binary.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_lockaudit")
}

/// The outcome of one run of the binary.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `lockaudit ARGS` in `dir`, with no colour, width or test-only
/// settings from the environment leaking in.
pub fn lockaudit(dir: &Path, args: &[&str]) -> Run {
    lockaudit_with(dir, args, |_| {})
}

/// As [`lockaudit`], after `setup` has had the command (environment,
/// standard input, privileges).
pub fn lockaudit_with(dir: &Path, args: &[&str], setup: impl FnOnce(&mut Command)) -> Run {
    run_binary(bin(), dir, args, None, setup)
}

/// As [`lockaudit`], with these environment variables set and `stdin`
/// (when given) on standard input.
pub fn lockaudit_input(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    stdin: Option<&str>,
) -> Run {
    run_binary(bin(), dir, args, stdin, |cmd| {
        cmd.envs(env.iter().copied());
    })
}

/// Runs `cargo-lockaudit ARGS` (what cargo runs for `cargo lockaudit`) in
/// `dir`, as [`lockaudit`] runs `lockaudit`.
pub fn cargo_lockaudit(dir: &Path, args: &[&str]) -> Run {
    run_binary(
        env!("CARGO_BIN_EXE_cargo-lockaudit"),
        dir,
        args,
        None,
        |_| {},
    )
}

fn run_binary(
    bin: &str,
    dir: &Path,
    args: &[&str],
    stdin: Option<&str>,
    setup: impl FnOnce(&mut Command),
) -> Run {
    use std::io::Write;
    use std::process::Stdio;
    let mut cmd = Command::new(bin);
    cmd.args(args)
        .current_dir(dir)
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("COLUMNS")
        .env_remove("GITHUB_BASE_REF")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("LOCKAUDIT_INTERNAL_PANIC_ON")
        .env_remove("LOCKAUDIT_INTERNAL_WRITE_PAUSE_MS");
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    setup(&mut cmd);
    let mut child = cmd.spawn().expect("the lockaudit binary runs");
    if let (Some(text), Some(mut input)) = (stdin, child.stdin.take()) {
        // A run that stops reading early is the test's to judge.
        let _ = input.write_all(text.as_bytes());
    }
    let out = child.wait_with_output().expect("the lockaudit binary runs");
    Run {
        code: out
            .status
            .code()
            .expect("lockaudit exits with a code, not a signal"),
        stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
    }
}

/// As [`lockaudit`], with these environment variables set.
pub fn lockaudit_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    lockaudit_with(dir, args, |cmd| {
        cmd.envs(env.iter().copied());
    })
}

/// Runs `git ARGS` in `dir` as a test author, with no signing, `main` as
/// the first branch, local clones allowed and no `GIT_DIR` from outside;
/// a failure fails the test.
pub fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.com",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "protocol.file.allow=always",
        ])
        .args(args)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Whether a report on standard error has a problem whose message contains
/// `message` at `place` (`file:line:col`, or its end), in the findings'
/// style: `error: message` (wrapped lines joined), then ` --> …place`.
pub fn has_problem(stderr: &str, place: &str, message: &str) -> bool {
    let lines: Vec<&str> = stderr.lines().collect();
    (0..lines.len()).any(|i| {
        let Some(first) = lines[i].strip_prefix("error: ") else {
            return false;
        };
        let mut text = first.to_string();
        for line in &lines[i + 1..] {
            if let Some(at) = line.trim_start().strip_prefix("--> ") {
                return text.contains(message) && at.ends_with(place);
            }
            if !line.starts_with("    ") {
                return false;
            }
            text.push(' ');
            text.push_str(line.trim());
        }
        false
    })
}

/// A fixture project's directory.
pub fn project(name: &str) -> PathBuf {
    root().join("fixtures/projects").join(name)
}

/// A fresh copy of a fixture project in a temporary directory.
pub fn copy_project(name: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&project(name), tmp.path());
    tmp
}

pub fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Every file under `dir` whose name ends in `.{ext}`, sorted, not looking
/// into the directories `skip` accepts.
pub fn files_under(dir: &Path, ext: &str, skip: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                if !skip(&p) {
                    stack.push(p);
                }
            } else if p.extension().is_some_and(|x| x == ext) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// `path` relative to `base`, with `/` separators.
pub fn rel_to(path: &Path, base: &Path) -> String {
    path.strip_prefix(base)
        .unwrap()
        .to_string_lossy()
        .replace('\\', "/")
}

/// `path` relative to the repository root, with `/` separators.
pub fn rel(path: &Path) -> String {
    rel_to(path, root())
}

/// A SARIF log with what depends on the machine or on the checks'
/// documentation replaced: the `%SRCROOT%` directory is `file:///ROOT/`,
/// each rule's help is a placeholder (the documentation has its own tests).
pub fn normalise_sarif(text: &str) -> String {
    let mut log: serde_json::Value = serde_json::from_str(text).expect("SARIF is JSON");
    let run = &mut log["runs"][0];
    let root = run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
        .as_str()
        .expect("%SRCROOT% has a uri");
    assert!(
        root.starts_with("file:///") && root.ends_with('/'),
        "{root}"
    );
    run["originalUriBaseIds"]["%SRCROOT%"]["uri"] = serde_json::Value::from("file:///ROOT/");
    for rule in run["tool"]["driver"]["rules"].as_array_mut().unwrap() {
        for key in ["text", "markdown"] {
            assert!(!rule["help"][key].as_str().unwrap().is_empty());
            rule["help"][key] = serde_json::Value::from("(the check's documentation)");
        }
    }
    let mut out = serde_json::to_string_pretty(&log).unwrap();
    out.push('\n');
    out
}
