//! Hostile input: every file below gets a defined outcome (a `parse-error`
//! finding, a skip with a note on stderr, or exit 2 for a path that cannot
//! be read), never a panic, a hang or a silently shorter report. Also: a
//! panic in one file loses no other file, and property tests for what an
//! edit that changes nothing must not change.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use lockaudit::config::Settings;
use lockaudit::engine::Engine;
use lockaudit::finding::Finding;
use lockaudit::pack::PackSet;
use proptest::prelude::*;

use common::{lockaudit, lockaudit_with, Run};

/// A file with one certain finding, to prove the rest of a run survives.
const WITNESS: &str = "use redis::Commands;

fn release_lock(con: &mut redis::Connection, lock_key: &str) -> redis::RedisResult<()> {
    con.del(lock_key)?;
    Ok(())
}
";

const WITNESS_LINE: &str = "witness.rs:4:9: error[unowned-release]";

/// A directory holding the witness and one hostile file.
fn with_hostile(name: &str, bytes: &[u8]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("witness.rs"), WITNESS).unwrap();
    fs::write(dir.path().join(name), bytes).unwrap();
    dir
}

fn short(dir: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["check", "--format", "short", "--no-prefilter"];
    args.extend_from_slice(extra);
    args.push(".");
    lockaudit(dir, &args)
}

fn assert_parse_error(name: &str, bytes: &[u8], position: &str, message: &str) {
    let dir = with_hostile(name, bytes);
    let r = short(dir.path(), &[]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.contains(WITNESS_LINE), "{r:?}");
    let expected =
        format!("{name}:{position}: error[parse-error]: file was not audited: {message}");
    assert!(
        r.stdout.lines().any(|l| l.starts_with(&expected)),
        "expected `{expected}` in\n{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("2 findings (2 errors) in 2 files"),
        "{r:?}"
    );
    assert!(!r.stderr.contains("panicked"), "{r:?}");
}

#[test]
fn twenty_thousand_nested_parentheses() {
    let src = format!(
        "fn f() -> u32 {{ let lock = {}1{}; lock }}\n",
        "(".repeat(20_000),
        ")".repeat(20_000)
    );
    assert_parse_error(
        "parens.rs",
        src.as_bytes(),
        // The `let` is a level too: its value runs on.
        "1:282",
        "brackets, generics, prefix operators, closures or control flow nest deeper than 256 levels",
    );
}

#[test]
fn twenty_thousand_nested_blocks() {
    let src = format!(
        "fn f() {{\n{}{}\n}}\n",
        "{".repeat(20_000),
        "}".repeat(20_000)
    );
    assert_parse_error(
        "blocks.rs",
        src.as_bytes(),
        "2:256",
        "brackets, generics, prefix operators, closures or control flow nest deeper than 256 levels",
    );
}

#[test]
fn twenty_thousand_prefix_operators_and_generics() {
    let src = format!("fn f() -> bool {{\n    {}true\n}}\n", "!".repeat(20_000));
    assert_parse_error(
        "nots.rs",
        src.as_bytes(),
        "2:260",
        "brackets, generics, prefix operators, closures or control flow nest deeper than 256 levels",
    );
    let src = format!(
        "type Lock = {}u8{};\n",
        "Vec<".repeat(20_000),
        ">".repeat(20_000)
    );
    assert_parse_error(
        "generics.rs",
        src.as_bytes(),
        "1:1040",
        "brackets, generics, prefix operators, closures or control flow nest deeper than 256 levels",
    );
}

/// No brackets at all, but a syntax tree 2,000 levels deep: the extractor
/// stops at its own bound instead of the stack's.
#[test]
fn a_flat_expression_with_two_thousand_terms() {
    let src = format!(
        "fn lock_count() -> u32 {{\n    let n = 1;\n    {}\n}}\n",
        vec!["n"; 2_000].join(" + ")
    );
    assert_parse_error(
        "flat.rs",
        src.as_bytes(),
        "3:1",
        "an expression here nests deeper than 1000 levels",
    );
    let chain: String = (0..2_000)
        .map(|i| format!("if lock == {i} {{ {i} }} else "))
        .collect();
    let src = format!("fn f(lock: u32) -> u32 {{\n    {chain}{{ 0 }}\n}}\n");
    assert_parse_error(
        "else_if.rs",
        src.as_bytes(),
        "2:1",
        "an expression here nests deeper than 1000 levels",
    );
}

/// A 5 MB line is audited, and a finding after it has the right column
/// (the file stays under the 8 MB `max-file-size`).
#[test]
fn a_five_megabyte_line() {
    let mut src = String::from("use redis::Commands;\n");
    src.push_str(&format!(
        "const BLOB: &str = \"{}\";\n",
        "é".repeat(2_500_000)
    ));
    src.push_str(&format!(
        "fn release_lock(con: &mut redis::Connection, lock_key: &str) -> redis::RedisResult<()> {{ let _ = BLOB; {} con.del(lock_key) }}\n",
        "let _x = 1; ".repeat(200_000)
    ));
    let dir = with_hostile("long.rs", src.as_bytes());
    let r = short(dir.path(), &[]);
    assert_eq!(r.code, 1, "{r:?}");
    let col = "fn release_lock(con: &mut redis::Connection, lock_key: &str) -> redis::RedisResult<()> { let _ = BLOB; ".chars().count()
        + "let _x = 1; ".len() * 200_000
        + " con.".len()
        + 1;
    let expected = format!("long.rs:3:{col}: error[unowned-release]");
    assert!(r.stdout.contains(&expected), "{expected} in {}", &r.stdout);
    assert!(r.stdout.contains(WITNESS_LINE), "{r:?}");
}

#[test]
fn binary_bytes() {
    // Bytes 0 to 127 are ASCII (with a line feed at 10); 128 is not UTF-8.
    let mut bytes = b"fn main() {}\n".to_vec();
    bytes.extend((0..=255u8).cycle().take(4096));
    assert_parse_error(
        "blob.rs",
        &bytes,
        "3:118",
        "not UTF-8 text (invalid byte at offset 141)",
    );
}

#[test]
fn latin1_text() {
    // "// Verrou distribué" in ISO-8859-1.
    let bytes = b"fn main() {}\n// Verrou distribu\xe9\n";
    assert_parse_error(
        "latin1.rs",
        bytes,
        "2:19",
        "not UTF-8 text (invalid byte at offset 31)",
    );
}

#[test]
fn a_byte_order_mark_is_not_text() {
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend_from_slice(WITNESS.as_bytes());
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("witness.rs"), &bytes).unwrap();
    let r = short(dir.path(), &[]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.contains(WITNESS_LINE), "{r:?}");
    let r = lockaudit(
        dir.path(),
        &["check", "--no-prefilter", "--color", "never", "."],
    );
    assert!(r.stdout.contains("    con.del(lock_key)?;"), "{r:?}");
    assert!(!r.stdout.contains('\u{feff}'), "{r:?}");
}

#[test]
fn empty_and_blank_files() {
    let dir = with_hostile("empty.rs", b"");
    fs::write(dir.path().join("blank.rs"), "\n\n   \n").unwrap();
    let r = short(dir.path(), &[]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout
            .ends_with("1 finding (1 error) in 1 file; 3 files audited\n"),
        "{r:?}"
    );
}

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap().success();
    assert!(ok, "mkfifo {}", path.display());
}

/// A FIFO is never opened (opening one blocks until a writer comes).
#[test]
fn fifos_are_skipped_with_a_note() {
    let dir = with_hostile("plain.rs", b"fn main() {}\n");
    mkfifo(&dir.path().join("pipe.rs"));
    let r = short(dir.path(), &[]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.contains("; 2 files audited"), "{r:?}");
    assert!(
        r.stderr.contains("pipe.rs: not a regular file, skipped"),
        "{r:?}"
    );
    // Named on the command line: the same.
    let r = lockaudit(dir.path(), &["check", "pipe.rs", "witness.rs"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr
            .contains("pipe.rs: not a regular file or directory, skipped"),
        "{r:?}"
    );
}

#[test]
fn devices_are_skipped_with_a_note() {
    let dir = with_hostile("plain.rs", b"fn main() {}\n");
    let r = lockaudit(
        dir.path(),
        &["check", "--format", "short", "/dev/null", "witness.rs"],
    );
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr
            .contains("/dev/null: not a regular file or directory, skipped"),
        "{r:?}"
    );
    assert!(r.stdout.contains(WITNESS_LINE), "{r:?}");
}

/// Reports written to a device are written into it, not renamed over it.
#[test]
fn output_to_a_device_keeps_the_device() {
    use std::os::unix::fs::FileTypeExt;
    let dir = with_hostile("plain.rs", b"fn main() {}\n");
    let r = lockaudit(
        dir.path(),
        &["check", "--format", "json", "--output", "/dev/null", "."],
    );
    assert_eq!(r.code, 1, "{r:?}");
    let meta = fs::metadata("/dev/null").unwrap();
    assert!(
        meta.file_type().is_char_device(),
        "/dev/null is still a device"
    );
}

/// A report written where a symbolic link stands replaces the link and
/// leaves its target alone: a checkout must not steer the report onto a
/// file outside it (see tests/untrusted.rs).
#[test]
fn output_over_a_symlink_replaces_the_link() {
    let dir = with_hostile("plain.rs", b"fn main() {}\n");
    let reports = dir.path().join("reports");
    fs::create_dir(&reports).unwrap();
    fs::write(reports.join("real.json"), "old").unwrap();
    std::os::unix::fs::symlink("reports/real.json", dir.path().join("latest.json")).unwrap();
    let r = lockaudit(
        dir.path(),
        &["check", "--format", "json", "--output", "latest.json", "."],
    );
    assert_eq!(r.code, 1, "{r:?}");
    let link = dir.path().join("latest.json");
    assert!(fs::symlink_metadata(&link).unwrap().is_file());
    let written = fs::read_to_string(&link).unwrap();
    assert!(written.contains("\"unowned-release\""), "{written}");
    assert_eq!(
        fs::read_to_string(reports.join("real.json")).unwrap(),
        "old"
    );
}

#[test]
fn symlink_loops_are_not_followed() {
    let dir = with_hostile("plain.rs", b"fn main() {}\n");
    std::os::unix::fs::symlink("loop_b", dir.path().join("loop_a")).unwrap();
    std::os::unix::fs::symlink("loop_a", dir.path().join("loop_b")).unwrap();
    std::os::unix::fs::symlink(".", dir.path().join("self_dir")).unwrap();
    std::os::unix::fs::symlink("witness.rs", dir.path().join("alias.rs")).unwrap();
    let r = short(dir.path(), &[]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout
            .ends_with("1 finding (1 error) in 1 file; 2 files audited\n"),
        "{r:?}"
    );
    assert!(
        r.stderr.contains("alias.rs: symbolic link not followed"),
        "{r:?}"
    );
    // A loop named on the command line cannot be read: exit 2.
    let r = lockaudit(dir.path(), &["check", "loop_a"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("loop_a: cannot read:"), "{r:?}");
}

/// The walk's threads find entries in any order; the configs of a tree
/// are found in the order of their directories' paths whatever the
/// threads do, so their warnings come in that order, and so do the notes
/// about skipped links; what a config excludes is dropped with its notes.
#[test]
fn the_walk_says_what_it_finds_in_path_order_whatever_the_threads() {
    let dir = with_hostile("plain.rs", b"fn main() {}\n");
    let dirs = ["zeta", "alpha", "mid/inner", "mid", "beta/deep/er", "gamma"];
    for d in dirs {
        let at = dir.path().join(d);
        fs::create_dir_all(&at).unwrap();
        fs::write(at.join("real.rs"), WITNESS).unwrap();
        fs::write(at.join("lockaudit.yaml"), "max-file-size: 99999999999\n").unwrap();
        std::os::unix::fs::symlink("real.rs", at.join("alias.rs")).unwrap();
    }
    // gamma's config excludes its `skipped/`, whose link is not said.
    fs::write(
        dir.path().join("gamma/lockaudit.yaml"),
        "max-file-size: 99999999999\nexclude:\n  - skipped\n",
    )
    .unwrap();
    fs::create_dir_all(dir.path().join("gamma/skipped")).unwrap();
    fs::write(dir.path().join("gamma/skipped/real.rs"), WITNESS).unwrap();
    std::os::unix::fs::symlink("real.rs", dir.path().join("gamma/skipped/alias.rs")).unwrap();
    let said = |jobs: &str| {
        let r = short(dir.path(), &["--jobs", jobs]);
        assert_eq!(r.code, 1, "{r:?}");
        assert!(r.stdout.ends_with("8 files audited\n"), "{r:?}");
        assert!(!r.stderr.contains("skipped/alias.rs"), "{r:?}");
        r.stderr
            .lines()
            .filter(|l| l.starts_with("warning:") || l.contains("symbolic link not followed"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let one = said("1");
    // A directory before what is in it, then its siblings by name.
    let mut in_order: Vec<&Path> = dirs.iter().map(Path::new).collect();
    in_order.sort();
    let expected: Vec<String> = in_order
        .iter()
        .map(|d| format!("warning: {}/lockaudit.yaml:", d.display()))
        .chain(
            in_order
                .iter()
                .map(|d| format!("note: ./{}/alias.rs: symbolic link", d.display())),
        )
        .collect();
    assert_eq!(one.len(), expected.len(), "{one:?}");
    for (said, expected) in one.iter().zip(&expected) {
        assert!(said.starts_with(expected), "{one:?}");
    }
    for _ in 0..3 {
        assert_eq!(said("2"), one);
    }
}

fn is_root() -> bool {
    let out = Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

/// Runs as an unprivileged user when the tests run as root (root reads
/// everything), so that a mode of 000 means what it says.
fn unprivileged(cmd: &mut Command) {
    if is_root() {
        use std::os::unix::process::CommandExt;
        cmd.uid(65534).gid(65534);
    }
}

fn open_up(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    for p in [dir.to_path_buf(), dir.join("witness.rs")] {
        let mode = if p.is_dir() { 0o755 } else { 0o644 };
        fs::set_permissions(&p, fs::Permissions::from_mode(mode)).unwrap();
    }
}

#[test]
fn unreadable_files_fail_the_run() {
    use std::os::unix::fs::PermissionsExt;
    let dir = with_hostile("secret.rs", b"fn main() {}\n");
    open_up(dir.path());
    let secret = dir.path().join("secret.rs");
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o000)).unwrap();
    if is_root() && !binary_reachable_by_nobody() {
        eprintln!("skipped: the test binary is not reachable by uid 65534");
        return;
    }
    let args = ["check", "--format", "short", "--no-prefilter", "."];
    let r = lockaudit_with(dir.path(), &args, unprivileged);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("secret.rs: Permission denied"), "{r:?}");
    assert!(
        r.stdout.contains(WITNESS_LINE),
        "the other file is still audited: {r:?}"
    );
    // An unreadable directory: also exit 2, never a shorter report.
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o644)).unwrap();
    let sub = dir.path().join("sealed");
    fs::create_dir(&sub).unwrap();
    fs::write(sub.join("inner.rs"), WITNESS).unwrap();
    fs::set_permissions(&sub, fs::Permissions::from_mode(0o000)).unwrap();
    let r = lockaudit_with(dir.path(), &args, unprivileged);
    // Excluded, it is never entered: no error.
    let mut excluded = args.to_vec();
    excluded.splice(1..1, ["--exclude", "sealed"]);
    let quiet = lockaudit_with(dir.path(), &excluded, unprivileged);
    // Excluded by a config, the same.
    fs::write(dir.path().join("lockaudit.yaml"), "exclude:\n  - sealed\n").unwrap();
    let by_config = lockaudit_with(dir.path(), &args, unprivileged);
    fs::remove_file(dir.path().join("lockaudit.yaml")).unwrap();
    fs::set_permissions(&sub, fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(by_config.code, 1, "{by_config:?}");
    assert!(!by_config.stderr.contains("sealed"), "{by_config:?}");
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("sealed"), "{r:?}");
    assert!(r.stdout.contains(WITNESS_LINE), "{r:?}");
    assert_eq!(quiet.code, 1, "{quiet:?}");
    assert!(!quiet.stderr.contains("sealed"), "{quiet:?}");
}

/// Whether every directory above the binary lets others through.
fn binary_reachable_by_nobody() -> bool {
    use std::os::unix::fs::PermissionsExt;
    Path::new(env!("CARGO_BIN_EXE_lockaudit"))
        .ancestors()
        .skip(1)
        .all(|d| fs::metadata(d).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
        && std::env::temp_dir()
            .ancestors()
            .all(|d| fs::metadata(d).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
}

/// A file deleted between the walk and the read is skipped with a note.
#[test]
fn files_that_vanish_during_the_run() {
    let dir = with_hostile("gone.rs", b"fn main() {}\n");
    let common = lockaudit::cli::CommonArgs::default();
    let prepared = lockaudit::session::prepare(&[dir.path().to_path_buf()], &common).unwrap();
    assert_eq!(prepared.files.len(), 2);
    fs::remove_file(dir.path().join("gone.rs")).unwrap();
    let audit = lockaudit::session::audit(&prepared, false).unwrap();
    assert_eq!(audit.files, 1);
    assert!(audit.unreadable.is_empty(), "{:?}", audit.unreadable);
    assert_eq!(audit.findings.len(), 1);
}

/// A panic inside one file's audit is an internal-error finding on that
/// file; every other file is still audited; the run exits 2.
#[test]
fn a_panic_loses_no_other_file() {
    let dir = with_hostile("crash.rs", b"fn main() {}\n");
    for i in 0..20 {
        fs::write(dir.path().join(format!("w{i:02}.rs")), WITNESS).unwrap();
    }
    let r = lockaudit_with(
        dir.path(),
        &[
            "check",
            "--format",
            "short",
            "--no-prefilter",
            "--jobs",
            "2",
            ".",
        ],
        |c| {
            c.env("LOCKAUDIT_INTERNAL_PANIC_ON", "crash.rs")
                .env("RUST_BACKTRACE", "0");
        },
    );
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stdout.contains("crash.rs:1:1: error[parse-error]: internal error: file was not audited: lockaudit crashed on it (forced by LOCKAUDIT_INTERNAL_PANIC_ON)"),
        "{r:?}"
    );
    assert!(
        r.stdout
            .ends_with("22 findings (22 errors) in 22 files; 22 files audited\n"),
        "{r:?}"
    );
    // JSON says so too, and every witness is there.
    let r = lockaudit_with(
        dir.path(),
        &["check", "--format", "json", "--no-prefilter", "."],
        |c| {
            c.env("LOCKAUDIT_INTERNAL_PANIC_ON", "crash.rs")
                .env("RUST_BACKTRACE", "0");
        },
    );
    assert_eq!(r.code, 2);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let n = v["findings"].as_array().unwrap().len();
    assert_eq!(n, 22, "{}", r.stdout);
}

// ---------------------------------------------------------------------------
// Properties.

fn fixture_texts() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/checks");
    let mut out = Vec::new();
    for check in fs::read_dir(&root).unwrap() {
        let check = check.unwrap().path();
        for f in fs::read_dir(&check).unwrap() {
            let f: PathBuf = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "rs")
                && f.parent() != Some(&root.join("parse-error"))
            {
                let text = fs::read_to_string(&f).unwrap();
                let rel = f.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap();
                out.push((rel.to_string_lossy().into_owned(), text));
            }
        }
    }
    out.sort();
    out
}

fn audit_text(path: &str, text: &str) -> Vec<Finding> {
    let packs = PackSet::builtin();
    let settings = Settings::default();
    let engine = Engine::new(&packs, &settings);
    engine.check_bytes(path, text.as_bytes(), false).findings
}

/// What must survive an edit that only moves lines: everything but lines.
fn shape(f: &Finding) -> (String, String, usize, String, Option<String>) {
    (
        f.check.as_str().to_string(),
        f.message.clone(),
        f.span.start.column,
        f.fingerprint.clone(),
        f.suppressed.clone(),
    )
}

/// Inserts `insert` before the 0-based line `at` of `text`, and returns the
/// new text with the number of lines inserted.
fn insert_lines(text: &str, at: usize, insert: &str) -> (String, usize) {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let at = at.min(lines.len());
    let mut out = String::new();
    for l in &lines[..at] {
        out.push_str(l);
    }
    out.push_str(insert);
    for l in &lines[at..] {
        out.push_str(l);
    }
    (out, insert.matches('\n').count())
}

/// Where blank lines or comment lines may go without changing the code:
/// before a line that starts an item, outside any string, and not between
/// the item and the comment or attribute block above it (a blank line
/// there detaches a `lock-purpose:` annotation, as the SPEC says).
fn safe_gaps(text: &str) -> Vec<usize> {
    let mut gaps = vec![0];
    let mut in_raw = false;
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let prev = if i == 0 { "" } else { lines[i - 1].trim() };
        let detached = prev.is_empty() || prev == "}" || prev.ends_with(';');
        let quotes = line.matches("r#\"").count() + line.matches("\"#").count();
        if quotes % 2 == 1 {
            in_raw = !in_raw;
        }
        let t = line.trim_start();
        let starts_item = t.starts_with("fn ")
            || t.starts_with("pub fn ")
            || t.starts_with("impl ")
            || t.starts_with("struct ")
            || t.starts_with("use ")
            || t.starts_with("async fn ");
        if starts_item && detached && !in_raw && !line.contains('"') {
            gaps.push(i);
        }
    }
    gaps
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    /// Blank lines or comments above code move findings down and change
    /// nothing else: not their columns, messages, suppressions or
    /// fingerprints.
    #[test]
    #[ignore = "costly (about 30 s): .ci/run runs it; cargo test -- --ignored"]
    fn inserting_blank_lines_or_comments_moves_findings_only(
        pick in 0usize..1000,
        gap in 0usize..1000,
        blank in 1usize..4,
        comment in proptest::option::of("[a-z ]{0,30}"),
    ) {
        let files = fixture_texts();
        let (path, text) = &files[pick % files.len()];
        let gaps = safe_gaps(text);
        let at = gaps[gap % gaps.len()];
        let mut insert = "\n".repeat(blank);
        if let Some(c) = &comment {
            insert.push_str(&format!("// {c}\n"));
        }
        let before = audit_text(path, text);
        let (edited, added) = insert_lines(text, at, &insert);
        let after = audit_text(path, &edited);
        prop_assert_eq!(before.len(), after.len(), "{} at line {}", path, at);
        for (b, a) in before.iter().zip(&after) {
            prop_assert_eq!(shape(b), shape(a), "{} at line {}", path, at);
            let expected = if b.span.start.line > at { b.span.start.line + added } else { b.span.start.line };
            prop_assert_eq!(a.span.start.line, expected, "{} at line {}", path, at);
        }
    }
}

proptest! {
    // Each case runs the binary twice.
    #![proptest_config(ProptestConfig { cases: 6, .. ProptestConfig::default() })]

    /// The order files are named in never changes the output.
    #[test]
    #[ignore = "costly (about 30 s): .ci/run runs it; cargo test -- --ignored"]
    fn file_order_never_changes_the_output(seed in any::<u64>()) {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files: Vec<String> = fixture_texts().into_iter().map(|(p, _)| p).take(12).collect();
        let base = {
            let mut args = vec!["check".to_string(), "--format".into(), "json".into()];
            args.extend(files.iter().cloned());
            let a: Vec<&str> = args.iter().map(String::as_str).collect();
            lockaudit(root, &a).stdout
        };
        // A seeded shuffle.
        let mut s = seed | 1;
        for i in (1..files.len()).rev() {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            files.swap(i, (s % (i as u64 + 1)) as usize);
        }
        let mut args = vec!["check".to_string(), "--format".into(), "json".into()];
        args.extend(files.iter().cloned());
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let shuffled = lockaudit(root, &a).stdout;
        prop_assert_eq!(base, shuffled);
    }
}

/// The properties above are only as strong as the findings they move.
#[test]
fn the_property_fixtures_have_findings() {
    let files = fixture_texts();
    let total: usize = files.iter().map(|(p, t)| audit_text(p, t).len()).sum();
    assert!(
        files.len() > 20 && total > 40,
        "{} files, {total} findings",
        files.len()
    );
}

/// Runs lockaudit on one generated file under an address-space cap (via
/// `ulimit -v` in `sh`, so the cap applies to the binary alone) and returns
/// the run: a model whose cost grows faster than its input dies here.
fn capped_run(name: &str, text: &str, cap_mb: u64) -> Run {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join(name), text).unwrap();
    let script = format!("ulimit -v {}; exec \"$0\" \"$@\"", cap_mb * 1024);
    let out = Command::new("sh")
        .args(["-c", &script, env!("CARGO_BIN_EXE_lockaudit")])
        .args([
            "check",
            "--no-prefilter",
            "--format",
            "short",
            "--fail-on",
            "never",
            name,
        ])
        .current_dir(dir.path())
        .output()
        .expect("sh runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Strings reachable from a local were copied once per path to
/// them, so nested tuples of `let`s grew as k⁵ (980 bytes took 2.3 GB).
#[test]
fn nested_lets_cost_linear_memory() {
    let mut text = String::from(
        "fn f(con: &mut redis::Connection) {\n    let a0 = (\"lock:a\", \"lock:b\");\n",
    );
    for i in 1..12 {
        let p = i - 1;
        text.push_str(&format!(
            "    let a{i} = (a{p}, a{p}, a{p}, a{p}, a{p}, a{p}, a{p}, a{p});\n"
        ));
    }
    for _ in 0..20 {
        text.push_str(
            "    let _: () = redis::cmd(\"SET\").arg(a11).arg(\"x\").query(con).unwrap();\n",
        );
    }
    text.push_str("}\n");
    let run = capped_run("nested.rs", &text, 512);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

/// A large constant used at many call sites is one string, and
/// a text pattern is matched against it once.
#[test]
fn a_large_constant_at_many_sites_is_read_once() {
    let mut text = String::from("const Q: &str = \"SELECT ");
    text.push_str(&"x, ".repeat(100_000));
    text.push_str("1\";\nasync fn f(pool: &sqlx::PgPool) {\n");
    for _ in 0..2_000 {
        text.push_str("    let _ = sqlx::query(Q).execute(pool).await;\n");
    }
    text.push_str("}\n");
    let run = capped_run("big_const.rs", &text, 512);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

/// One local used at many call sites, each asking for the
/// strings under it, in a function of ordinary size.
#[test]
fn one_local_at_many_call_sites() {
    let mut text =
        String::from("use redis::Commands;\nfn f(con: &mut redis::Connection, id: u64) {\n");
    text.push_str("    let base = format!(\"lock:{id}\");\n");
    for i in 0..40 {
        text.push_str(&format!(
            "    let k{i} = if id > {i} {{ (base.clone(), \"a{i}\") }} else {{ (base.clone(), \"b{i}\") }};\n"
        ));
    }
    for i in 0..40 {
        for j in 0..5 {
            text.push_str(&format!(
                "    let _: bool = con.set_nx(&k{i}.0, (k{j}, k{i}, base.clone())).unwrap_or(false);\n"
            ));
        }
    }
    text.push_str("}\n");
    let run = capped_run("many_sites.rs", &text, 512);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

/// A pipeline of many commands is matched window by window, not
/// once per command over the whole chain.
#[test]
fn a_long_pipeline_is_linear() {
    let mut text =
        String::from("fn f(con: &mut redis::Connection) {\n    let _: () = redis::pipe()");
    for i in 0..2_500 {
        text.push_str(&format!(
            ".cmd(\"SET\").arg(\"cache:{i}\").arg({i}).ignore()"
        ));
    }
    text.push_str(".query(con).unwrap();\n}\n");
    let run = capped_run("pipeline.rs", &text, 1024);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

/// A source that counts how many times a run reads each file, and notes
/// what it reads once told that the file phase is over.
#[derive(Default)]
struct CountingSource {
    reads: std::sync::Mutex<std::collections::BTreeMap<PathBuf, usize>>,
    files_read: std::sync::atomic::AtomicBool,
    late: std::sync::Mutex<Vec<PathBuf>>,
}

impl lockaudit::source::Source for CountingSource {
    fn read(&self, path: &Path, limit: u64) -> std::io::Result<Result<Vec<u8>, u64>> {
        *self
            .reads
            .lock()
            .unwrap()
            .entry(path.to_path_buf())
            .or_default() += 1;
        if self.files_read.load(std::sync::atomic::Ordering::SeqCst) {
            self.late.lock().unwrap().push(path.to_path_buf());
        }
        lockaudit::source::read_capped(path, limit)
    }

    fn files_read(&self) {
        self.files_read
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// What a counted run found (check, file, line), how many times it read
/// each file, and the files its walk chose.
type Counted = (
    Vec<(String, String, usize)>,
    std::collections::BTreeMap<PathBuf, usize>,
    Vec<PathBuf>,
);

/// Runs the session over `paths` through a counting source.
fn counted_audit(paths: &[PathBuf], prefilter: bool) -> Counted {
    let common = lockaudit::cli::CommonArgs {
        no_prefilter: !prefilter,
        ..Default::default()
    };
    let prepared = lockaudit::session::prepare(paths, &common).unwrap();
    let source = CountingSource::default();
    let audit = lockaudit::session::audit_from(&prepared, false, &source).unwrap();
    // The crate phase reads nothing: every file it works on was read in
    // the file phase, those of a crate the walk covered in part included.
    assert!(
        source.files_read.load(std::sync::atomic::Ordering::SeqCst),
        "the run never ended its file phase"
    );
    assert_eq!(
        source.late.lock().unwrap().as_slice(),
        &[] as &[PathBuf],
        "read by the crate phase"
    );
    let found = audit
        .findings
        .iter()
        .map(|f| {
            (
                f.check.as_str().to_string(),
                f.path.clone(),
                f.span.start.line,
            )
        })
        .collect();
    (found, source.reads.into_inner().unwrap(), prepared.files)
}

/// Whether `deep-chains`' outermost caller (`runner.rs`) has the ignored
/// result only the crate passes find there.
fn outermost_caller_told(found: &[(String, String, usize)]) -> bool {
    found
        .iter()
        .any(|(check, path, _)| check == "ignored-acquire-result" && path.ends_with("runner.rs"))
}

/// Each file is read once per run, however its crate's files reach each
/// other: the crate passes audit a wrapper's callers, its definer and the
/// functions a fencing check follows from the bytes the first audit held,
/// with the pre-filter (which skips the callers at first) and without. A
/// run that names one file of a crate reads the rest of the crate once
/// too, before the crate phase starts: that phase reads nothing. The
/// passes did their work: the findings that only they make are there.
#[test]
fn every_file_is_read_once_per_run() {
    let projects = Path::new("fixtures/projects");
    let mut crossing = 0;
    for entry in fs::read_dir(projects).unwrap() {
        let dir = entry.unwrap().path();
        if !dir.join("Cargo.toml").is_file() {
            continue;
        }
        for prefilter in [true, false] {
            let (found, reads, walked) = counted_audit(std::slice::from_ref(&dir), prefilter);
            for f in &walked {
                assert_eq!(
                    reads.get(f),
                    Some(&1),
                    "{} (pre-filter: {prefilter})",
                    f.display()
                );
            }
            for (f, n) in &reads {
                assert_eq!(*n, 1, "{} read {n} times", f.display());
            }
            crossing += usize::from(
                found
                    .iter()
                    .any(|(check, _, _)| check == "ignored-acquire-result"),
            );
        }
    }
    assert!(crossing >= 4, "{crossing} runs found what the passes find");
    // The outermost callers of `deep-chains`, whose findings only the
    // passes make, with the pre-filter on and off.
    let deep = projects.join("deep-chains");
    for prefilter in [true, false] {
        let (found, reads, _) = counted_audit(std::slice::from_ref(&deep), prefilter);
        assert!(outermost_caller_told(&found), "{found:?}");
        assert!(
            found
                .iter()
                .any(|(check, _, _)| check == "unfenced-correctness-lock"),
            "{found:?}"
        );
        assert!(reads.values().all(|&n| n == 1), "{reads:?}");
    }
    // One file named, or a directory inside the crate: the passes audit
    // the rest of its crate, each file read once.
    for (named, walks) in [("src/runner.rs", 1), ("src", 15)] {
        let (found, reads, walked) = counted_audit(&[deep.join(named)], true);
        assert_eq!(walked.len(), walks);
        assert!(reads.len() >= 15, "{reads:?}");
        assert!(reads.values().all(|&n| n == 1), "{named}: {reads:?}");
        assert!(outermost_caller_told(&found), "{found:?}");
    }
}

/// A module the walk did not choose (an ignored file here) that a `mod`
/// declaration reaches is audited in a later round. When it is the file
/// that offers its crate a wrapper, the crate's other files were held for
/// it, not let go after the first round and read again by the passes.
#[test]
fn a_module_the_walk_skipped_keeps_its_crate_held() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(dir.path().join("Cargo.toml"), "[package]\nname = \"app\"\n").unwrap();
    fs::write(dir.path().join(".ignore"), "/src/locks.rs\n").unwrap();
    fs::write(src.join("lib.rs"), "mod jobs;\nmod locks;\n").unwrap();
    fs::write(
        src.join("locks.rs"),
        "pub fn acquire_lock(con: &mut redis::Connection, key: &str, me: &str) -> redis::RedisResult<bool> {\n    \
         let won: Option<String> = redis::cmd(\"SET\").arg(key).arg(me).arg(\"NX\").arg(\"PX\").arg(30_000).query(con)?;\n    \
         Ok(won.is_some())\n}\n",
    )
    .unwrap();
    fs::write(
        src.join("jobs.rs"),
        "use crate::locks::acquire_lock;\n\n\
         // lock-purpose: efficiency — a duplicate digest is harmless\n\
         pub fn digest(con: &mut redis::Connection) {\n    \
         let _ = acquire_lock(con, \"lock:digest\", \"worker-1\");\n}\n",
    )
    .unwrap();
    for prefilter in [true, false] {
        let (found, reads, walked) = counted_audit(&[dir.path().to_path_buf()], prefilter);
        assert!(
            !walked.iter().any(|f| f.ends_with("locks.rs")),
            "{walked:?}"
        );
        assert!(
            found
                .iter()
                .any(|(check, path, _)| check == "ignored-acquire-result"
                    && path.ends_with("jobs.rs")),
            "{found:?}"
        );
        assert_eq!(reads.len(), 3, "{reads:?}");
        assert!(reads.values().all(|&n| n == 1), "{reads:?}");
    }
}

/// `check --fix` audits again only the crates holding a file it rewrote,
/// and takes a rewritten file's text from what it wrote: the other files
/// of those crates are read once more, another crate's files not at all.
/// What it reports is what a fresh run over the fixed tree reports.
#[test]
fn a_fix_audits_again_only_the_crates_it_changed() {
    let dir = tempfile::tempdir().unwrap();
    common::copy_dir(&common::project("fixable"), &dir.path().join("fixable"));
    common::copy_dir(&common::project("wrapped"), &dir.path().join("wrapped"));
    let quiet = dir.path().join("fixable/src/quiet.rs");
    fs::write(&quiet, "pub fn nothing() {}\n").unwrap();
    let paths = [dir.path().to_path_buf()];
    let common_args = lockaudit::cli::CommonArgs::default();
    let prepared = lockaudit::session::prepare(&paths, &common_args).unwrap();
    let first = lockaudit::session::audit(&prepared, false).unwrap();
    let applied = lockaudit::commands::fix::apply(&prepared, &first, &paths).unwrap();
    assert!(applied.fixes > 0, "{:?}", applied.skipped);
    let written: Vec<&PathBuf> = applied.written.iter().map(|(p, _)| p).collect();
    assert!(!written.is_empty());
    let source = CountingSource::default();
    let after =
        lockaudit::session::audit_after_fix(&prepared, first, &applied.written, &source).unwrap();
    let reads = source.reads.into_inner().unwrap();
    assert!(
        reads
            .keys()
            .all(|f| f.starts_with(dir.path().join("fixable")) && !written.contains(&f)),
        "{reads:?}"
    );
    assert_eq!(reads.get(&quiet), Some(&1), "{reads:?}");
    // The same as a fresh run over the fixed tree.
    let again = lockaudit::session::prepare(&paths, &common_args).unwrap();
    let fresh = lockaudit::session::audit(&again, false).unwrap();
    let seen = |a: &lockaudit::session::Audit| {
        a.findings
            .iter()
            .map(|f| {
                (
                    f.check.as_str().to_string(),
                    f.path.clone(),
                    f.span.start.line,
                    f.message.clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(seen(&after), seen(&fresh));
    assert!(
        after.findings.iter().any(|f| f.path.contains("wrapped")),
        "the other crate's findings stand"
    );
    let sorted = |a: &lockaudit::session::Audit| {
        let mut v: Vec<(String, bool)> = a
            .audited
            .iter()
            .cloned()
            .zip(a.audited_parsed.iter().copied())
            .collect();
        v.sort();
        v
    };
    assert_eq!(sorted(&after), sorted(&fresh));
    assert_eq!((after.files, after.parsed), (fresh.files, fresh.parsed));
    let mut texts: Vec<&String> = after.sources.keys().collect();
    let mut fresh_texts: Vec<&String> = fresh.sources.keys().collect();
    texts.sort();
    fresh_texts.sort();
    assert_eq!(texts, fresh_texts);
}
