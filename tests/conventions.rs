//! The command-line conventions users of ruff, clippy and semgrep reach
//! for: `--select`, `--extend-select` and `--ignore` with
//! did-you-mean, `--statistics`, `--stdin-filename`, `completions`,
//! `manpage`, colour through NO_COLOR / CLICOLOR / CLICOLOR_FORCE, and
//! `test-pack`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

mod common;

use common::Run;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// lockaudit in `dir`, with no colour variables from the caller's
/// environment unless `envs` sets them, `stdin` on standard input.
fn run(dir: &Path, args: &[&str], envs: &[(&str, &str)], stdin: Option<&str>) -> Run {
    let mut all = vec![("TERM", "xterm-256color")];
    all.extend_from_slice(envs);
    common::lockaudit_input(dir, args, &all, stdin)
}

fn stdout(o: &Run) -> String {
    o.stdout.clone()
}

fn stderr(o: &Run) -> String {
    o.stderr.clone()
}

/// Count of unsuppressed findings per check in a JSON report.
fn counts(json: &str) -> BTreeMap<String, usize> {
    let v: serde_json::Value = serde_json::from_str(json).expect("JSON report");
    let mut out = BTreeMap::new();
    for f in v["findings"].as_array().unwrap() {
        if f["suppressed"] == false {
            *out.entry(f["check"].as_str().unwrap().to_string())
                .or_default() += 1;
        }
    }
    out
}

fn fixtures_json(args: &[&str]) -> BTreeMap<String, usize> {
    let mut all = vec![
        "check",
        "--format",
        "json",
        "--fail-on",
        "never",
        "fixtures/",
    ];
    all.extend_from_slice(args);
    let o = run(&root(), &all, &[], None);
    assert_eq!(Some(o.code), Some(0), "{}", stderr(&o));
    counts(&stdout(&o))
}

#[test]
fn select_ignore_and_extend_select_choose_the_checks_that_run() {
    let all = fixtures_json(&[]);
    assert!(all.len() > 3, "the fixtures find several checks: {all:?}");
    assert!(all.contains_key("unowned-release") && all.contains_key("missing-purpose"));

    let only = fixtures_json(&["--select", "unowned-release"]);
    assert_eq!(only.keys().collect::<Vec<_>>(), ["unowned-release"]);
    assert_eq!(only["unowned-release"], all["unowned-release"]);

    // Comma-separated and repeatable; --ignore wins over --select.
    let two = fixtures_json(&[
        "--select",
        "unowned-release,missing-purpose",
        "--select",
        "lock-without-expiry",
        "--ignore",
        "missing-purpose",
    ]);
    let mut want: Vec<&str> = ["unowned-release", "lock-without-expiry"]
        .into_iter()
        .filter(|c| all.contains_key(*c))
        .collect();
    want.sort();
    assert_eq!(two.keys().map(String::as_str).collect::<Vec<_>>(), want);

    let ignored = fixtures_json(&["--ignore", "missing-purpose"]);
    assert!(!ignored.contains_key("missing-purpose"));
    // The other checks are unchanged, except that a suppression naming an
    // ignored check is idle rather than unused.
    let mut rest = all.clone();
    rest.remove("missing-purpose");
    let mut ignored = ignored;
    assert!(ignored.remove("unused-suppression") <= rest.remove("unused-suppression"));
    assert_eq!(ignored, rest, "the other checks are unchanged");

    // `all` selects everything.
    assert_eq!(fixtures_json(&["--select", "all"]), all);
}

#[test]
fn extend_select_turns_on_a_check_the_config_turns_off() {
    let tmp = tempfile::tempdir().unwrap();
    fs::create_dir(tmp.path().join(".git")).unwrap();
    fs::write(
        tmp.path().join("lockaudit.yaml"),
        "checks:\n  missing-purpose: off\n",
    )
    .unwrap();
    fs::copy(
        root().join("fixtures/projects/unannotated/src/lib.rs"),
        tmp.path().join("lib.rs"),
    )
    .unwrap();
    let args = ["check", "--format", "json", "--fail-on", "never"];
    let o = run(tmp.path(), &args, &[], None);
    assert!(!counts(&stdout(&o)).contains_key("missing-purpose"));
    let mut more = args.to_vec();
    more.extend(["--extend-select", "missing-purpose"]);
    let o = run(tmp.path(), &more, &[], None);
    let c = counts(&stdout(&o));
    assert!(c.get("missing-purpose").is_some_and(|n| *n > 0), "{c:?}");
    // At its default severity, an error: the default gate fails.
    let o = run(
        tmp.path(),
        &["check", "--extend-select", "missing-purpose"],
        &[],
        None,
    );
    assert_eq!(Some(o.code), Some(1), "{}", stderr(&o));
}

#[test]
fn an_unknown_check_id_is_exit_2_with_a_suggestion() {
    for flag in ["--select", "--ignore", "--extend-select"] {
        let o = run(
            &root(),
            &["check", flag, "unowned-relase", "fixtures/"],
            &[],
            None,
        );
        let err = stderr(&o);
        assert_eq!(Some(o.code), Some(2), "{flag}: {err}");
        assert!(
            err.contains("did you mean `unowned-release`?"),
            "{flag}: {err}"
        );
        assert!(o.stdout.is_empty(), "{flag}: nothing audited");
    }
}

#[test]
fn statistics_count_the_findings_of_each_check() {
    let all = fixtures_json(&[]);
    let o = run(&root(), &["check", "--statistics", "fixtures/"], &[], None);
    // The exit code is the one the findings give.
    assert_eq!(Some(o.code), Some(1));
    let text = stdout(&o);
    let mut seen = BTreeMap::new();
    let mut last = usize::MAX;
    for line in text.lines() {
        let mut parts = line.split_whitespace();
        let n: usize = parts.next().unwrap().parse().expect("a count first");
        let id = parts.next().unwrap().to_string();
        assert!(n <= last, "most frequent first:\n{text}");
        last = n;
        seen.insert(id, n);
    }
    assert_eq!(seen, all, "{text}");

    let o = run(
        &root(),
        &["check", "--statistics", "--format", "json", "fixtures/"],
        &[],
        None,
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let from_json: BTreeMap<String, usize> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["check"].as_str().unwrap().to_string(),
                r["count"].as_u64().unwrap() as usize,
            )
        })
        .collect();
    assert_eq!(from_json, all);

    // With --select, only the selected check is counted.
    let o = run(
        &root(),
        &[
            "check",
            "--statistics",
            "--select",
            "unowned-release",
            "fixtures/",
        ],
        &[],
        None,
    );
    let text = stdout(&o);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.contains("unowned-release"), "{text}");
}

#[test]
fn stdin_filename_audits_standard_input_as_that_file() {
    let tmp = tempfile::tempdir().unwrap();
    fs::create_dir(tmp.path().join(".git")).unwrap();
    fs::create_dir_all(tmp.path().join("svc/src")).unwrap();
    let source =
        fs::read_to_string(root().join("fixtures/projects/unannotated/src/lib.rs")).unwrap();
    let o = run(
        tmp.path(),
        &[
            "check",
            "--format",
            "short",
            "--stdin-filename",
            "svc/src/lib.rs",
        ],
        &[],
        Some(&source),
    );
    let out = stdout(&o);
    assert_eq!(Some(o.code), Some(1), "{}", stderr(&o));
    assert!(out.contains("svc/src/lib.rs:2:"), "{out}");
    assert!(out.contains("missing-purpose"), "{out}");
    assert!(!tmp.path().join("svc/src/lib.rs").exists());

    // `-` as the path is the same; the human report quotes stdin's text.
    let o = run(
        tmp.path(),
        &["check", "--stdin-filename", "svc/src/lib.rs", "-"],
        &[],
        Some(&source),
    );
    assert_eq!(Some(o.code), Some(1));
    let first: String = source
        .lines()
        .nth(1)
        .unwrap()
        .trim()
        .chars()
        .take(40)
        .collect();
    assert!(stdout(&o).contains(&first), "{}", stdout(&o));

    // The config that governs the named path applies.
    fs::write(
        tmp.path().join("svc/lockaudit.yaml"),
        "checks:\n  missing-purpose: off\n",
    )
    .unwrap();
    let o = run(
        tmp.path(),
        &[
            "check",
            "--format",
            "short",
            "--stdin-filename",
            "svc/src/lib.rs",
        ],
        &[],
        Some(&source),
    );
    assert!(!stdout(&o).contains("missing-purpose"), "{}", stdout(&o));

    // A broken config there is exit 2.
    fs::write(tmp.path().join("svc/lockaudit.yaml"), "chekcs: {}\n").unwrap();
    let o = run(
        tmp.path(),
        &["check", "--stdin-filename", "svc/src/lib.rs"],
        &[],
        Some(&source),
    );
    assert_eq!(Some(o.code), Some(2), "{}", stderr(&o));

    // Paths as well as standard input is a usage error.
    let o = run(
        tmp.path(),
        &["check", "--stdin-filename", "a.rs", "svc"],
        &[],
        Some(""),
    );
    assert_eq!(Some(o.code), Some(2));
    assert!(stderr(&o).contains("give no PATHS"), "{}", stderr(&o));
}

#[test]
fn completions_and_the_man_page_come_from_the_command_line_definition() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let o = run(&root(), &["completions", shell], &[], None);
        assert_eq!(Some(o.code), Some(0), "{shell}: {}", stderr(&o));
        let text = stdout(&o);
        for word in ["lockaudit", "select", "stdin-filename", "test-pack"] {
            assert!(text.contains(word), "{shell} completion lacks {word}");
        }
    }
    let o = run(&root(), &["completions", "tcsh"], &[], None);
    assert_eq!(Some(o.code), Some(2));

    let o = run(&root(), &["manpage"], &[], None);
    assert_eq!(Some(o.code), Some(0));
    let man = stdout(&o);
    assert!(
        man.starts_with(".ie") || man.contains(".TH lockaudit"),
        "{man}"
    );
    assert!(man.contains(".TH lockaudit 1"), "{man}");
    for word in ["inventory", "test\\-pack", "completions"] {
        assert!(man.contains(word), "the man page lacks {word}");
    }
}

/// Whether the human report of the unannotated project has ANSI colour,
/// with stdout a pipe (not a terminal).
fn coloured(envs: &[(&str, &str)], extra: &[&str]) -> bool {
    let dir = root().join("fixtures/projects/unannotated");
    let mut args = vec!["check"];
    args.extend_from_slice(extra);
    let o = run(&dir, &args, envs, None);
    assert_eq!(Some(o.code), Some(1), "{}", stderr(&o));
    stdout(&o).contains("\x1b[")
}

#[test]
fn colour_honours_no_color_clicolor_and_clicolor_force() {
    // A pipe gets no colour by default, or with CLICOLOR=1.
    assert!(!coloured(&[], &[]));
    assert!(!coloured(&[("CLICOLOR", "1")], &[]));
    // CLICOLOR_FORCE (set and not empty, as anstream reads it) colours
    // even a pipe; empty does not force; CLICOLOR=0 turns colour off.
    assert!(coloured(&[("CLICOLOR_FORCE", "1")], &[]));
    assert!(!coloured(&[("CLICOLOR_FORCE", "")], &[]));
    assert!(!coloured(&[("CLICOLOR", "0")], &["--color", "auto"]));
    // NO_COLOR wins over CLICOLOR_FORCE, as in cargo and clap.
    assert!(!coloured(
        &[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")],
        &[]
    ));
    // The flag wins over the environment both ways.
    assert!(coloured(&[("NO_COLOR", "1")], &["--color", "always"]));
    assert!(!coloured(&[("CLICOLOR_FORCE", "1")], &["--color", "never"]));
}

/// A pack directory with the Acme pack and a fixture marked as `marks`
/// says (the line and the markers to append to it).
fn pack_dir(marks: &[(usize, &str)]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    fs::copy(
        root().join("fixtures/packs/custom/acme-locks.yaml"),
        tmp.path().join("acme-locks.yaml"),
    )
    .unwrap();
    let src = fs::read_to_string(root().join("fixtures/projects/acme/src/billing.rs")).unwrap();
    let mut lines: Vec<String> = src.lines().map(str::to_string).collect();
    for (line, mark) in marks {
        lines[line - 1].push_str(&format!(" //~ {mark}"));
    }
    fs::write(tmp.path().join("billing.rs"), lines.join("\n") + "\n").unwrap();
    tmp
}

#[test]
fn test_pack_passes_when_the_markers_match_and_lists_the_differences_when_not() {
    let good = pack_dir(&[
        (15, "36 missing-purpose"),
        (35, "unfenced-correctness-lock"),
    ]);
    let o = run(good.path(), &["test-pack", "acme-locks.yaml"], &[], None);
    let out = stdout(&o);
    assert_eq!(Some(o.code), Some(0), "{out}{}", stderr(&o));
    assert!(
        out.contains("1 fixture passed, 2 expected findings found"),
        "{out}"
    );

    // A marker with nothing to meet, and a finding nobody marked.
    let bad = pack_dir(&[(15, "missing-purpose"), (47, "lock-without-expiry")]);
    let o = run(bad.path(), &["test-pack", "acme-locks.yaml"], &[], None);
    let out = stdout(&o);
    assert_eq!(Some(o.code), Some(1), "{out}");
    assert!(
        out.contains("billing.rs:47: missing: lock-without-expiry"),
        "{out}"
    );
    assert!(
        out.contains("billing.rs:35:36: extra: unfenced-correctness-lock:"),
        "{out}"
    );
    assert!(
        !out.contains("billing.rs:15"),
        "a met marker is not listed: {out}"
    );
    assert!(out.contains("1 of 1 fixture failed"), "{out}");

    // A wrong column is a miss too.
    let col = pack_dir(&[(15, "9 missing-purpose"), (35, "unfenced-correctness-lock")]);
    let o = run(col.path(), &["test-pack", "acme-locks.yaml"], &[], None);
    assert_eq!(Some(o.code), Some(1), "{}", stdout(&o));
}

#[test]
fn test_pack_reports_a_bad_pack_a_bad_marker_and_no_fixtures_as_exit_2() {
    let dir = pack_dir(&[(15, "missing-purpse")]);
    let o = run(dir.path(), &["test-pack", "acme-locks.yaml"], &[], None);
    assert_eq!(Some(o.code), Some(2));
    assert!(
        stderr(&o).contains("did you mean `missing-purpose`"),
        "{}",
        stderr(&o)
    );

    let empty = tempfile::tempdir().unwrap();
    fs::copy(
        root().join("fixtures/packs/custom/acme-locks.yaml"),
        empty.path().join("p.yaml"),
    )
    .unwrap();
    let o = run(empty.path(), &["test-pack", "p.yaml"], &[], None);
    assert_eq!(Some(o.code), Some(2));
    assert!(stderr(&o).contains("no fixtures"), "{}", stderr(&o));

    fs::write(empty.path().join("broken.yaml"), "apis: [\n").unwrap();
    fs::write(empty.path().join("a.rs"), "fn main() {}\n").unwrap();
    let o = run(empty.path(), &["test-pack", "broken.yaml"], &[], None);
    assert_eq!(Some(o.code), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("broken.yaml"), "{}", stderr(&o));
}

/// The progress line is drawn on a terminal once the run is slow (the
/// delay is 0 here) and cleared before the report; piped, nothing.
#[test]
fn a_progress_line_only_on_a_terminal() {
    let dir = common::project("unannotated");
    let env = [("LOCKAUDIT_INTERNAL_PROGRESS_AFTER_MS", "0")];
    let piped = common::lockaudit_env(&dir, &["check", "-q", "."], &env);
    assert!(!piped.stderr.contains("auditing"), "{piped:?}");
    // util-linux `script` runs the command on a pseudo-terminal.
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: no `script` to give the run a terminal");
        return;
    }
    let out = std::process::Command::new("script")
        .args([
            "-qec",
            &format!("'{}' check -q . >/dev/null", common::bin()),
            "/dev/null",
        ])
        .current_dir(&dir)
        .env("LOCKAUDIT_INTERNAL_PROGRESS_AFTER_MS", "0")
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    let tty = String::from_utf8_lossy(&out.stdout);
    assert!(tty.contains("auditing") && tty.contains("files"), "{tty:?}");
    // Cleared: the last thing drawn erases the line.
    assert!(tty.trim_end().ends_with("\u{1b}[2K"), "{tty:?}");
}
