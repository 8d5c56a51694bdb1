//! What people read when something is wrong: "did you mean" for mistyped
//! check ids, config keys, severities, pack fields and format names; error
//! markers under the key that is wrong; `--config` and `--output` paths
//! that cannot be used; `--color always` into a file; `rules` with the
//! config's severities.

mod common;

use std::fs;
use std::path::Path;

use common::lockaudit;

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

const LOCK: &str = "pub fn take(con: &mut redis::Connection, k: &str) -> redis::RedisResult<bool> {\n    let reply: Option<String> = redis::cmd(\"SET\").arg(k).arg(\"me\").arg(\"NX\").arg(\"PX\").arg(5_000).query(con)?;\n    Ok(reply.is_some())\n}\n";

/// The column (0-based, in characters of the source line) where the
/// carets under source line `line_no` of a report start, and how many.
fn marker(stderr: &str, line_no: usize) -> (usize, usize) {
    let lines: Vec<Vec<char>> = stderr.lines().map(|l| l.chars().collect()).collect();
    let at = (0..lines.len().saturating_sub(1))
        .find(|&i| {
            let s: String = lines[i].iter().collect();
            let next: String = lines[i + 1].iter().collect();
            s.trim_start().starts_with(&format!("{line_no} |")) && next.contains('^')
        })
        .unwrap_or_else(|| panic!("no source line {line_no}:\n{stderr}"));
    let text_start = lines[at].iter().position(|c| *c == '|').unwrap() + 2;
    let start = lines[at + 1]
        .iter()
        .position(|c| *c == '^')
        .unwrap_or_else(|| panic!("no marker:\n{stderr}"));
    let width = lines[at + 1].iter().filter(|c| **c == '^').count();
    (start - text_start, width)
}

#[test]
fn config_errors_suggest_the_near_name_and_mark_the_wrong_key() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        &dir.join("lockaudit.yaml"),
        "checks:\n  unowned-relase: error\n  missing-purpose: eror\nexlude: []\n",
    );
    write(&dir.join("src/lib.rs"), LOCK);
    let run = lockaudit(dir, &["check", "."]);
    assert_eq!(run.code, 2, "{run:?}");
    let e = &run.stderr;
    assert!(
        common::has_problem(e, "lockaudit.yaml:2:3", "unknown check id `unowned-relase`"),
        "{e}"
    );
    assert!(e.contains("did you mean `unowned-release`?"), "{e}");
    assert!(
        common::has_problem(e, "lockaudit.yaml:3:20", "`eror` is not a severity"),
        "{e}"
    );
    assert!(e.contains("did you mean `error`?"), "{e}");
    assert!(
        common::has_problem(e, "lockaudit.yaml:4:1", "unknown key `exlude`"),
        "{e}"
    );
    assert!(e.contains("did you mean `exclude`?"), "{e}");
    // The markers: under the key `unowned-relase` (column 2, 0-based), under
    // the value `eror`, under `exlude` alone (6 wide, not the whole line).
    assert_eq!(marker(e, 2), (2, "unowned-relase".len()), "{e}");
    assert_eq!(marker(e, 3), (19, "eror".len()), "{e}");
    assert_eq!(marker(e, 4), (0, "exlude".len()), "{e}");
}

/// A fact about a backend the packs do not know is an error at its name,
/// with the nearest name; a fact without a reason is one at the reason.
#[test]
fn backend_facts_name_a_known_backend_and_give_a_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        &dir.join("lockaudit.yaml"),
        "backends:
  redsi:
    consensus: true
    reason: \"MemoryDB\"
  etcd:
    consensus: false
    reason: \"  \"
",
    );
    write(&dir.join("src/lib.rs"), LOCK);
    let run = lockaudit(dir, &["check", "."]);
    assert_eq!(run.code, 2, "{run:?}");
    let e = &run.stderr;
    assert!(
        common::has_problem(e, "lockaudit.yaml:2:3", "unknown backend `redsi`"),
        "{e}"
    );
    assert!(e.contains("did you mean `redis`?"), "{e}");
    assert!(
        common::has_problem(
            e,
            "lockaudit.yaml:7:13",
            "the fact about `etcd` gives no reason"
        ),
        "{e}"
    );
    assert_eq!(marker(e, 2), (2, "redsi".len()), "{e}");
}

#[test]
fn unknown_check_ids_in_explain_and_allow_get_a_suggestion() {
    let tmp = tempfile::tempdir().unwrap();
    let run = lockaudit(tmp.path(), &["explain", "unowned-relase"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("did you mean `unowned-release`?"),
        "{}",
        run.stderr
    );
    let run = lockaudit(tmp.path(), &["explain", "zzz"]);
    assert!(!run.stderr.contains("did you mean"), "{}", run.stderr);

    write(
        &tmp.path().join("src/lib.rs"),
        &format!("// lockaudit: allow(mising-purpose) reviewed\n{LOCK}"),
    );
    let run = lockaudit(tmp.path(), &["check", "--format", "json", "."]);
    assert!(
        run.stdout.contains("names an unknown check"),
        "{}",
        run.stdout
    );
    let human = lockaudit(tmp.path(), &["check", "--color", "never", "."]);
    assert!(
        human.stdout.contains("did you mean `missing-purpose`?"),
        "{}",
        human.stdout
    );
}

#[test]
fn pack_fields_and_values_get_a_suggestion() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(&dir.join("lockaudit.yaml"), "rules:\n  - pack.yaml\n");
    write(
        &dir.join("pack.yaml"),
        "backend: acme\ncrates: [acme]\nconsensus: true\napis:\n  - id: acme.release\n    role: release\n    match: { method: release, args: 1 }\n    owner_checked: true\n",
    );
    write(&dir.join("src/lib.rs"), LOCK);
    let run = lockaudit(dir, &["check", "."]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("unknown field `owner_checked`"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("did you mean `owner-checked`?"),
        "{}",
        run.stderr
    );
}

#[test]
fn format_names_get_a_suggestion() {
    let tmp = tempfile::tempdir().unwrap();
    let run = lockaudit(tmp.path(), &["check", "--format", "jsn"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("'json'"), "{}", run.stderr);
}

#[test]
fn unusable_config_and_output_paths_say_what_is_wrong() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(&dir.join("src/lib.rs"), LOCK);
    let run = lockaudit(dir, &["check", "--config", "src", "."]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("--config src: is a directory"),
        "{}",
        run.stderr
    );
    #[cfg(unix)]
    {
        let run = lockaudit(dir, &["check", "--config", "/dev/null", "."]);
        assert_eq!(run.code, 2);
        assert!(run.stderr.contains("not a regular file"), "{}", run.stderr);
    }
    let run = lockaudit(dir, &["check", "--config", "nope.yaml", "."]);
    assert!(
        run.stderr.contains("--config nope.yaml: no such file"),
        "{}",
        run.stderr
    );

    let run = lockaudit(dir, &["check", "--output", "out/report.txt", "."]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr,
        "error: out/report.txt: cannot write: the directory out does not exist\n"
    );
    assert!(
        !run.stderr.contains(".lockaudit-"),
        "no temporary file named"
    );
}

#[test]
fn color_always_is_honoured_with_output() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(&dir.join("src/lib.rs"), LOCK);
    lockaudit(
        dir,
        &["check", "--color", "always", "--output", "c.txt", "."],
    );
    let text = fs::read_to_string(dir.join("c.txt")).unwrap();
    assert!(
        text.contains("\u{1b}[1;31merror[missing-purpose]"),
        "{text}"
    );
    lockaudit(dir, &["check", "--output", "plain.txt", "."]);
    assert!(!fs::read_to_string(dir.join("plain.txt"))
        .unwrap()
        .contains('\u{1b}'));
}

#[test]
fn rules_shows_the_severities_the_config_sets() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        &dir.join("lockaudit.yaml"),
        "checks:\n  missing-purpose: warning\n  unowned-renewal: off\n  parse-error: error\n",
    );
    let run = lockaudit(dir, &["rules"]);
    assert_eq!(run.code, 0, "{run:?}");
    let line = |id: &str| {
        run.stdout
            .lines()
            .find(|l| l.starts_with(&format!("{id} ")))
            .unwrap()
            .split_whitespace()
            .nth(1)
            .unwrap()
            .to_string()
    };
    assert_eq!(line("missing-purpose"), "warning*");
    assert_eq!(line("unowned-renewal"), "off*");
    // Set to its default: not an override.
    assert_eq!(line("parse-error"), "error");
    assert_eq!(line("unowned-release"), "error");
    assert!(
        run.stdout.contains("* set by lockaudit.yaml: missing-purpose (default error), unowned-renewal (default error)"),
        "{}",
        run.stdout
    );
    let json: serde_json::Value =
        serde_json::from_str(&lockaudit(dir, &["rules", "--format", "json"]).stdout).unwrap();
    let mp = json
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "missing-purpose")
        .unwrap();
    assert_eq!(mp["severity"], "warning");
    assert_eq!(mp["default_severity"], "error");
    assert_eq!(mp["overridden"], true);
}

/// A broken config is exit 2 even when no `.rs` file under it is audited:
/// named as the directory, or met by the walk below the named one. A valid
/// config with nothing to audit is a clean run.
#[test]
fn a_broken_config_with_nothing_to_audit_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        &tmp.path().join("docs/lockaudit.yaml"),
        "checks:\n  nope: error\n",
    );
    write(&tmp.path().join("docs/guide.md"), "# guide\n");
    write(&tmp.path().join("src/lib.rs"), "pub fn f() {}\n");
    for (dir, arg) in [
        (tmp.path().join("docs"), "."),
        (tmp.path().to_path_buf(), "."),
        (tmp.path().to_path_buf(), "docs"),
    ] {
        let r = lockaudit(&dir, &["check", arg]);
        assert_eq!(r.code, 2, "{arg} from {}: {r:?}", dir.display());
        assert!(r.stderr.contains("lockaudit.yaml:2:3"), "{}", r.stderr);
    }
    write(
        &tmp.path().join("docs/lockaudit.yaml"),
        "checks:\n  missing-purpose: error\n",
    );
    let r = lockaudit(tmp.path(), &["check", "."]);
    assert_eq!(r.code, 0, "{r:?}");
}
