//! lockaudit on a checkout a stranger controls: every file, file name,
//! symlink, config and rule pack below is hostile. Each test runs the
//! binary under a memory cap and a timeout: a run that writes outside its
//! report, reads outside the repository, prints a forged line, aborts, or
//! takes too much memory or time fails here.

use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::guarded::{run, run_with, Run, TIMEOUT};

/// A file with one certain finding (`unowned-release` at 4:9).
const WITNESS: &str = "use redis::Commands;

fn release_lock(con: &mut redis::Connection, lock_key: &str) -> redis::RedisResult<()> {
    con.del(lock_key)?;
    Ok(())
}
";

/// A repository (it has `.git`) holding the witness.
fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join(".git")).unwrap();
    fs::write(dir.path().join("witness.rs"), WITNESS).unwrap();
    dir
}

fn symlink(target: impl AsRef<Path>, link: impl AsRef<Path>) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

fn mode(p: &Path) -> u32 {
    fs::metadata(p).unwrap().permissions().mode() & 0o777
}

fn assert_no_forged_line(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    for line in text.lines() {
        assert!(
            !line.trim_start().starts_with("::"),
            "{what}: a line starts a workflow command: {line:?}\n{text}"
        );
    }
    let bad = bytes
        .iter()
        .position(|&b| (b < 0x20 && b != b'\n') || b == 0x7f);
    assert!(
        bad.is_none(),
        "{what}: a raw control byte at {bad:?}:\n{text}"
    );
    for c in ['\u{85}', '\u{9b}', '\u{202e}'] {
        assert!(!text.contains(c), "{what}: a raw {c:?}:\n{text}");
    }
}

// ---------------------------------------------------------------------
// 1. Output never written through a committed symlink.

/// A program outside the repository, as `~/.cargo/bin/cargo` would be.
fn outside_program() -> (tempfile::TempDir, std::path::PathBuf) {
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("cargo");
    fs::write(&target, "#!/bin/sh\necho real cargo\n").unwrap();
    fs::set_permissions(&target, fs::Permissions::from_mode(0o755)).unwrap();
    (outside, target)
}

#[test]
fn output_and_baseline_replace_a_committed_symlink() {
    let dir = repo();
    let (_outside, target) = outside_program();
    symlink(&target, dir.path().join("lockaudit.sarif"));
    symlink(&target, dir.path().join("baseline.json"));
    symlink("/dev/null", dir.path().join("devnull.json"));
    let r = run(
        dir.path(),
        &[
            "check",
            "--format",
            "sarif",
            "--output",
            "lockaudit.sarif",
            ".",
        ],
    );
    assert_eq!(r.code, Some(1), "{r:?}");
    let r = run(
        dir.path(),
        &["check", "--write-baseline", "baseline.json", "."],
    );
    assert_eq!(r.code, Some(0), "{r:?}");
    let r = run(
        dir.path(),
        &["check", "--format", "json", "--output", "devnull.json", "."],
    );
    assert_eq!(r.code, Some(1), "{r:?}");
    // The target is untouched, and keeps its bits.
    assert_eq!(
        fs::read_to_string(&target).unwrap(),
        "#!/bin/sh\necho real cargo\n"
    );
    assert_eq!(mode(&target), 0o755);
    for (name, needle) in [
        ("lockaudit.sarif", "\"version\": \"2.1.0\""),
        ("baseline.json", "unowned-release"),
        ("devnull.json", "unowned-release"),
    ] {
        let p = dir.path().join(name);
        let meta = fs::symlink_metadata(&p).unwrap();
        assert!(meta.is_file(), "{name} is now a regular file");
        assert_eq!(mode(&p) & 0o111, 0, "{name} is not executable");
        assert!(fs::read_to_string(&p).unwrap().contains(needle), "{name}");
    }
    use std::os::unix::fs::FileTypeExt;
    assert!(fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
}

#[test]
fn a_device_named_directly_is_written_in_place() {
    let dir = repo();
    let r = run(
        dir.path(),
        &["check", "--format", "json", "--output", "/dev/stdout", "."],
    );
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stdout.contains("\"unowned-release\""), "{r:?}");
}

#[test]
fn an_executable_report_loses_its_execute_bits() {
    let dir = repo();
    let report = dir.path().join("report.json");
    fs::write(&report, "old").unwrap();
    fs::set_permissions(&report, fs::Permissions::from_mode(0o755)).unwrap();
    let r = run(
        dir.path(),
        &["check", "--format", "json", "--output", "report.json", "."],
    );
    assert_eq!(r.code, Some(1), "{r:?}");
    assert_eq!(mode(&report), 0o644);
}

/// The fixable project's source: three exact fixes for `check --fix`.
fn fixable() -> String {
    fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/projects/fixable/src/lib.rs"),
    )
    .unwrap()
}

/// An acquisition without a purpose, for `annotate --write`.
const ACQUIRE: &str = "use redis::Commands;\nfn f(con: &mut redis::Connection) -> redis::RedisResult<()> {\n    let _: bool = con.set_nx(\"lock:a\", 1)?;\n    Ok(())\n}\n";

/// A committed link to a directory below the repository root never
/// redirects a write: not a report, a baseline, a fix or an annotation.
/// Links outside the repository (the caller's own) are followed.
#[test]
fn a_symlinked_parent_directory_never_redirects_a_write() {
    let dir = repo();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("lib.rs"), fixable()).unwrap();
    fs::write(outside.path().join("acquire.rs"), ACQUIRE).unwrap();
    symlink(outside.path(), dir.path().join("out"));
    fs::create_dir(dir.path().join("deep")).unwrap();
    symlink(outside.path(), dir.path().join("deep/out"));
    for args in [
        &["check", "--format", "sarif", "--output", "out/r.sarif", "."][..],
        &["check", "--output", "deep/out/r.txt", "."],
        &["check", "--output", "out/../r.txt", "."],
        &["check", "--write-baseline", "out/b.json", "."],
        &["inventory", "--output", "out/i.txt", "."],
    ] {
        let r = run(dir.path(), args);
        assert_eq!(r.code, Some(2), "{args:?}: {r:?}");
        assert!(
            r.stderr
                .contains("is a symbolic link inside the repository"),
            "{args:?}: {r:?}"
        );
    }
    let r = run(dir.path(), &["check", "--fix", "out/lib.rs"]);
    assert!(
        r.stderr
            .contains("out is a symbolic link inside the repository"),
        "{r:?}"
    );
    let r = run(
        dir.path(),
        &[
            "annotate",
            "--purpose",
            "efficiency",
            "--write",
            "out/acquire.rs",
        ],
    );
    assert_eq!(r.code, Some(2), "{r:?}");
    let mut left: Vec<String> = fs::read_dir(outside.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["acquire.rs", "lib.rs"]);
    assert_eq!(
        fs::read_to_string(outside.path().join("lib.rs")).unwrap(),
        fixable()
    );
    assert_eq!(
        fs::read_to_string(outside.path().join("acquire.rs")).unwrap(),
        ACQUIRE
    );
    assert!(!dir.path().join("r.txt").exists());

    // The twins: a real directory inside, and a link outside the
    // repository, are written.
    fs::create_dir(dir.path().join("reports")).unwrap();
    let r = run(dir.path(), &["check", "--output", "reports/r.txt", "."]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(dir.path().join("reports/r.txt").is_file());
    let caller = tempfile::tempdir().unwrap();
    symlink(outside.path(), caller.path().join("mine"));
    let report = caller.path().join("mine/r.txt");
    let r = run(
        dir.path(),
        &["check", "--output", report.to_str().unwrap(), "."],
    );
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(outside.path().join("r.txt").is_file());
}

/// A read-only file is refused by every writer, and left as it is; a
/// replaced file keeps its permissions.
#[test]
fn read_only_files_are_refused_and_permissions_kept() {
    let dir = repo();
    let d = dir.path();
    fs::write(d.join("lib.rs"), fixable()).unwrap();
    fs::write(d.join("acquire.rs"), ACQUIRE).unwrap();
    let r = run(d, &["check", "--write-baseline", "b.json", "."]);
    assert_eq!(r.code, Some(0), "{r:?}");
    fs::copy(d.join("b.json"), d.join("stale.json")).unwrap();
    fs::write(d.join("ro.txt"), "kept").unwrap();
    let read_only = ["ro.txt", "b.json", "stale.json", "lib.rs", "acquire.rs"];
    for f in read_only {
        fs::set_permissions(d.join(f), fs::Permissions::from_mode(0o444)).unwrap();
    }
    let before: Vec<Vec<u8>> = read_only
        .iter()
        .map(|f| fs::read(d.join(f)).unwrap())
        .collect();
    for args in [
        &["check", "--output", "ro.txt", "."][..],
        &["check", "--write-baseline", "b.json", "."],
        &["check", "--update-baseline", "stale.json", "."],
        &[
            "annotate",
            "--purpose",
            "efficiency",
            "--write",
            "acquire.rs",
        ],
    ] {
        let r = run(d, args);
        assert_eq!(r.code, Some(2), "{args:?}: {r:?}");
        assert!(
            r.stderr.contains("read-only: not replaced"),
            "{args:?}: {r:?}"
        );
    }
    let r = run(d, &["check", "--fix", "lib.rs"]);
    assert!(
        r.stderr.contains("lib.rs: cannot write: read-only")
            && r.stderr.contains("applied 0 fixes"),
        "{r:?}"
    );
    for (f, b) in read_only.iter().zip(&before) {
        assert_eq!(&fs::read(d.join(f)).unwrap(), b, "{f} changed");
        assert_eq!(mode(&d.join(f)), 0o444, "{f}");
    }

    // The twins: writable files are replaced and keep their bits.
    for (f, m) in [
        ("lib.rs", 0o640),
        ("acquire.rs", 0o600),
        ("stale.json", 0o640),
    ] {
        fs::set_permissions(d.join(f), fs::Permissions::from_mode(m)).unwrap();
    }
    let r = run(d, &["check", "--fix", "lib.rs"]);
    assert!(r.stderr.contains("applied 3 fixes"), "{r:?}");
    let r = run(
        d,
        &[
            "annotate",
            "--purpose",
            "efficiency",
            "--write",
            "acquire.rs",
        ],
    );
    assert_eq!(r.code, Some(0), "{r:?}");
    let r = run(d, &["check", "--update-baseline", "stale.json", "lib.rs"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_ne!(fixable(), fs::read_to_string(d.join("lib.rs")).unwrap());
    assert!(fs::read_to_string(d.join("acquire.rs"))
        .unwrap()
        .contains("lock-purpose: efficiency"));
    assert_eq!(mode(&d.join("lib.rs")), 0o640);
    assert_eq!(mode(&d.join("acquire.rs")), 0o600);
    assert_eq!(mode(&d.join("stale.json")), 0o640);
}

/// Runs lockaudit holding its written temporary file for a while, and
/// calls `change` once that file exists: the target changes between
/// the read and the replace.
fn while_writing(dir: &Path, args: &[&str], change: impl FnOnce()) -> Run {
    let d = dir.to_path_buf();
    let a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let runner = std::thread::spawn(move || {
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        run_with(&d, &a, |c| {
            c.env("LOCKAUDIT_INTERNAL_WRITE_PAUSE_MS", "2000");
        })
    });
    let start = Instant::now();
    let temporary = || {
        fs::read_dir(dir)
            .unwrap()
            .filter_map(Result::ok)
            .any(|e| e.file_name().to_string_lossy().starts_with(".lockaudit-"))
    };
    while !temporary() {
        assert!(start.elapsed() < TIMEOUT, "no temporary file appeared");
        std::thread::sleep(Duration::from_millis(5));
    }
    change();
    runner.join().unwrap()
}

/// A file changed on disk after lockaudit read it (an editor saved it, a
/// branch was switched) is left alone, not overwritten with edits made
/// to the old text.
#[test]
fn a_file_changed_since_it_was_read_is_left_alone() {
    let dir = repo();
    let d = dir.path();
    let lib = d.join("lib.rs");
    fs::write(&lib, fixable()).unwrap();
    let theirs = format!("{}\n// saved meanwhile\n", fixable());
    let r = while_writing(d, &["check", "--fix", "lib.rs"], || {
        fs::write(&lib, &theirs).unwrap();
    });
    assert!(r.stderr.contains("changed since it was read"), "{r:?}");
    assert!(r.stderr.contains("applied 0 fixes"), "{r:?}");
    assert_eq!(fs::read_to_string(&lib).unwrap(), theirs);

    let acquire = d.join("acquire.rs");
    fs::write(&acquire, ACQUIRE).unwrap();
    let theirs = format!("{ACQUIRE}// saved meanwhile\n");
    let r = while_writing(
        d,
        &[
            "annotate",
            "--purpose",
            "efficiency",
            "--write",
            "acquire.rs",
        ],
        || fs::write(&acquire, &theirs).unwrap(),
    );
    assert_eq!(r.code, Some(2), "{r:?}");
    assert_eq!(fs::read_to_string(&acquire).unwrap(), theirs);

    let r = run(d, &["check", "--write-baseline", "b.json", "."]);
    assert_eq!(r.code, Some(0), "{r:?}");
    let baseline = d.join("b.json");
    let theirs = fs::read_to_string(&baseline)
        .unwrap()
        .replacen('{', "{\n", 1);
    let r = while_writing(
        d,
        &["check", "--update-baseline", "b.json", "witness.rs"],
        || {
            fs::write(&baseline, &theirs).unwrap();
        },
    );
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(r.stderr.contains("changed since it was read"), "{r:?}");
    assert_eq!(fs::read_to_string(&baseline).unwrap(), theirs);

    // The twin: left to itself, the same fix is applied.
    fs::write(&lib, fixable()).unwrap();
    let r = run(d, &["check", "--fix", "lib.rs"]);
    assert!(r.stderr.contains("applied 3 fixes"), "{r:?}");
    assert_ne!(fs::read_to_string(&lib).unwrap(), fixable());
}

// ---------------------------------------------------------------------
// 3. Every printed path and piece of source text is escaped.

/// Names holding each control character a terminal or a CI runner reads.
const HOSTILE_NAMES: [&str; 10] = [
    "y\n::warning::X\n.rs",
    "cr\r::error::X.rs",
    "tab\t.rs",
    "esc\x1b]0;title\x07\x1b[31m.rs",
    "bell\x07.rs",
    "del\x7f.rs",
    "c1\u{85}next\u{9b}31m.rs",
    "bidi\u{202e}sr.txt.rs",
    "ff\x0c\x0b.rs",
    "x\u{2028}line.rs",
];

#[test]
fn file_names_with_control_characters_are_escaped_in_every_text_format() {
    let dir = repo();
    for name in HOSTILE_NAMES {
        fs::write(dir.path().join(name), WITNESS).unwrap();
    }
    for format in ["human", "short", "table"] {
        let r = run(dir.path(), &["check", "--format", format, "."]);
        assert_eq!(r.code, Some(1), "{format}: {r:?}");
        assert_no_forged_line(format, &r.raw_stdout);
        assert_no_forged_line(format, &r.raw_stderr);
        assert!(
            r.stdout.contains("y\\n::warning::X\\n.rs"),
            "{format}: {}",
            r.stdout
        );
        assert!(r.stdout.contains("esc\\x1b]0;title\\x07"), "{format}");
    }
    let r = run(dir.path(), &["check", "--format", "short", "."]);
    // Every hostile file was audited, under its escaped name.
    assert_eq!(
        r.stdout.matches("error[unowned-release]").count(),
        11,
        "{r:?}"
    );
    let r = run(dir.path(), &["inventory", "."]);
    assert_no_forged_line("inventory", &r.raw_stdout);
}

/// No workflow command of any form in a log line: `::name` at its start, or
/// the legacy `##[` (and `##vso[`) anywhere in it.
fn assert_no_command(what: &str, bytes: &[u8], own_commands: bool) {
    let text = String::from_utf8_lossy(bytes);
    for line in text.lines() {
        let t = line.trim_start();
        if own_commands && t.starts_with("::") {
            assert!(
                ["::error file=", "::warning file=", "::notice file="]
                    .iter()
                    .any(|c| t.starts_with(c)),
                "{what}: a forged command: {line:?}"
            );
        } else {
            // A command is `::` and its name; `::: path` (a secondary
            // location of the human format) is none.
            let named = t
                .strip_prefix("::")
                .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_alphabetic()));
            assert!(!named, "{what}: a command: {line:?}\n{text}");
        }
        assert!(
            !line.contains("##[") && !line.contains("##vso["),
            "{what}: a legacy command: {line:?}\n{text}"
        );
    }
}

/// A file name or a key holding `##[cmd]`, which a runner obeys anywhere
/// in a line, and `::` after leading white space: shown broken in every
/// format and on stderr; the report's own annotations still come through.
#[test]
fn legacy_workflow_commands_are_never_printed() {
    let dir = repo();
    let src = dir.path().join("src");
    fs::create_dir(&src).unwrap();
    fs::write(src.join("##[stop-commands]x.rs"), WITNESS).unwrap();
    fs::write(src.join("##vso[task.setvariable variable=a]b.rs"), WITNESS).unwrap();
    fs::write(src.join("zero\u{200b}width.rs"), WITNESS).unwrap();
    fs::write(src.join("a\\b.rs"), WITNESS).unwrap();
    fs::write(
        src.join("keys.rs"),
        "fn f(con: &mut redis::Connection) -> redis::RedisResult<()> {\n    \
         let _: () = redis::cmd(\"DEL\").arg(\"##[error file=README.md;line=1]FORGED\").query(con)?;\n    Ok(())\n}\n",
    )
    .unwrap();
    // Not UTF-8 in places, and a name the walker reports on stderr.
    fs::write(dir.path().join("##[error]note.rs.orig"), "x").unwrap();
    for format in ["human", "short", "table", "json", "sarif", "github"] {
        let r = run(
            dir.path(),
            &["check", "--format", format, "--no-prefilter", "."],
        );
        assert_eq!(r.code, Some(1), "{format}: {r:?}");
        assert_no_command(format, &r.raw_stdout, format == "github");
        assert_no_command(format, &r.raw_stderr, false);
        if format == "json" || format == "sarif" {
            let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
            assert!(v.to_string().contains("stop-commands"), "{format}");
        }
        if format == "github" {
            // The twin: the witness's annotation is there.
            assert!(
                r.stdout.contains("::error file=witness.rs,line=4,col=9"),
                "{}",
                r.stdout
            );
        }
        if format == "short" {
            assert!(
                r.stdout.contains("src/#\\x23[stop-commands]x.rs:4:9"),
                "{}",
                r.stdout
            );
            assert!(
                r.stdout.contains("zero\\u{200b}width.rs:4:9"),
                "{}",
                r.stdout
            );
            // A backslash in a name stays distinguishable from a folder.
            assert!(r.stdout.contains("src/a\\\\b.rs:4:9"), "{}", r.stdout);
            assert!(!r.stdout.contains("src/a/b.rs"), "{}", r.stdout);
        }
    }
    // The step summary: no command, no link or image.
    let summary = dir.path().join("../summary.md");
    let r = run_with(dir.path(), &["check", "--format", "github", "."], |c| {
        c.env("GITHUB_STEP_SUMMARY", &summary);
    });
    assert_eq!(r.code, Some(1), "{r:?}");
    let md = fs::read(&summary).unwrap();
    assert_no_command("summary", &md, false);
    let _ = fs::remove_file(&summary);
}

/// The `annotate` diff: a context line ` ::error::…` is a command once a
/// runner trims its leading space.
#[test]
fn annotate_diff_context_lines_are_no_commands() {
    let dir = repo();
    fs::write(
        dir.path().join("ctx.rs"),
        // The hostile lines are the diff's context: the three lines above
        // the acquisition and the two below it.
        "use redis::Commands;\nfn f(con: &mut redis::Connection) -> redis::RedisResult<()> {\n    let _s = r\"\n\
         ::error file=README.md::FORGED\n\u{3000}::error::WIDE\n\u{a0}\t::warning::NBSP\";\n\
         \x20   let _: bool = con.set_nx(\"lock:a\", 1)?;\n\
         \x20   let _t = \"##[warning]FORGED \u{e0041}\u{2066}\u{fe0f}\";\n    Ok(())\n}\n",
    )
    .unwrap();
    let r = run(
        dir.path(),
        &["annotate", "--purpose", "efficiency", "ctx.rs"],
    );
    assert!(r.stdout.contains("lock-purpose"), "{r:?}");
    assert_no_command("annotate", &r.raw_stdout, false);
    assert_no_command("annotate", &r.raw_stderr, false);
    assert_no_invisible("annotate", &r.stdout);
    // Shown, escaped, in the diff's context lines.
    for shown in [
        "\\x3a:error::WIDE",
        "\\x3a:warning::NBSP",
        "\\x3a:error file=README.md::FORGED",
        "#\\x23[warning]FORGED \\u{e0041}\\u{2066}\\u{fe0f}",
    ] {
        assert!(r.stdout.contains(shown), "{shown}: {r:?}");
    }
}

/// No character that shows nothing or reorders its neighbours: Unicode
/// format characters (tags, bidi controls, zero-width) and the rest of
/// the default-ignorable code points.
fn assert_no_invisible(what: &str, text: &str) {
    let bad = text.chars().find(|&c| {
        matches!(c,
            '\u{00ad}' | '\u{034f}' | '\u{061c}' | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}'
            | '\u{180b}'..='\u{180f}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}' | '\u{3164}' | '\u{fe00}'..='\u{fe0f}' | '\u{feff}'
            | '\u{ffa0}' | '\u{e0000}'..='\u{e0fff}')
    });
    assert!(bad.is_none(), "{what}: a raw {bad:?}:\n{text}");
}

/// `--update-baseline` names what it drops: the baseline's path and its
/// entries are escaped like every other text bound for a CI log.
#[test]
fn update_baseline_prints_dropped_entries_escaped() {
    let dir = repo();
    let name = "b##[stop-commands]\u{e0041}.json";
    let entry = |check: &str, path: &str, message: &str| serde_json::json!({ "fingerprint": "0000000000000001", "check": check, "path": path, "message": message });
    let baseline = serde_json::json!({ "version": 1, "findings": [
        entry("unowned-release", "witness.rs", "gone\n::error file=README.md::FORGED \u{2028}##[warning]x \u{e0041}\u{202e}"),
        entry("::error::c", "witness.rs", "m"),
    ]});
    fs::write(dir.path().join(name), baseline.to_string()).unwrap();
    let r = run(dir.path(), &["check", "--update-baseline", name, "."]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(r.stderr.contains("dropped 2 entries"), "{r:?}");
    assert!(
        r.stderr
            .contains("b#\\x23[stop-commands]\\u{e0041}.json: dropped"),
        "{r:?}"
    );
    assert!(
        r.stderr.contains("gone\\n::error file=README.md::FORGED"),
        "{r:?}"
    );
    assert_no_command("stderr", &r.raw_stderr, false);
    assert_no_forged_line("stderr", &r.raw_stderr);
    assert_no_invisible("stderr", &r.stderr);
}

/// A backslash in a directory name is part of the name on Unix: the
/// directory a run starts in, a repository's parent and a file above the
/// root keep it in every machine-readable path, never as a `/`.
#[test]
fn backslashes_in_directory_names_are_never_folder_separators() {
    let top = tempfile::tempdir().unwrap();
    let parent = top.path().join("p\\q");
    let repo = parent.join("repo");
    let sub = repo.join("x\\y");
    fs::create_dir_all(repo.join(".git")).unwrap();
    fs::create_dir_all(&sub).unwrap();
    fs::write(sub.join("w.rs"), WITNESS).unwrap();
    fs::write(parent.join("a\\b.rs"), WITNESS).unwrap();
    let r = run(&sub, &["check", "--format", "json", ".", "../../a\\b.rs"]);
    assert_eq!(r.code, Some(1), "{r:?}");
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let paths: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert!(paths.contains(&"x\\\\y/w.rs"), "{paths:?}");
    let above = format!(
        "{}/p\\\\q/a\\\\b.rs",
        fs::canonicalize(top.path()).unwrap().display()
    );
    assert!(paths.contains(&above.as_str()), "{paths:?}");
    let r = run(&sub, &["check", "--format", "sarif", "."]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stdout.contains("/p%5Cq/repo/\""), "{}", r.stdout);
    assert!(!r.stdout.contains("/p/q/"), "{}", r.stdout);
    // The twin: plain names are as they were.
    fs::create_dir(repo.join("plain")).unwrap();
    fs::write(repo.join("plain/w.rs"), WITNESS).unwrap();
    let r = run(&repo.join("plain"), &["check", "--format", "json", "."]);
    assert!(r.stdout.contains("\"path\": \"plain/w.rs\""), "{r:?}");
}

/// Names holding invisible characters are shown escaped in every format.
#[test]
fn invisible_characters_in_names_are_escaped_everywhere() {
    let dir = repo();
    for name in [
        "tag\u{e0041}.rs",
        "vs\u{fe0f}.rs",
        "iso\u{2066}.rs",
        "fill\u{3164}.rs",
    ] {
        fs::write(dir.path().join(name), WITNESS).unwrap();
    }
    for format in ["human", "short", "table", "json", "sarif", "github"] {
        let r = run(dir.path(), &["check", "--format", format, "."]);
        assert_eq!(r.code, Some(1), "{format}: {r:?}");
        assert_no_invisible(format, &r.stdout);
        assert_no_invisible(format, &r.stderr);
    }
    let r = run(dir.path(), &["check", "--format", "short", "."]);
    assert!(r.stdout.contains("tag\\u{e0041}.rs:4:9"), "{r:?}");
    assert!(r.stdout.contains("witness.rs:4:9"), "{r:?}");
}

/// The step summary links nothing: no Markdown link or image, and no
/// bare address GitHub's Markdown would turn into a link.
#[test]
fn the_step_summary_links_nothing() {
    let dir = repo();
    fs::write(
        dir.path().join("keys.rs"),
        "use redis::Commands;\nfn release_lock(con: &mut redis::Connection) -> redis::RedisResult<()> {\n    \
         con.del(\"me@evil.com www.evil.com https://evil.example [a](https://e.x) ![i](u) <https://e.x>\")?;\n    Ok(())\n}\n",
    )
    .unwrap();
    let summary = dir.path().join("../summary-links.md");
    let r = run_with(dir.path(), &["check", "--format", "github", "."], |c| {
        c.env("GITHUB_STEP_SUMMARY", &summary);
    });
    assert_eq!(r.code, Some(1), "{r:?}");
    let md = fs::read_to_string(&summary).unwrap();
    let _ = fs::remove_file(&summary);
    assert!(md.contains("| keys.rs:3:9 |"), "{md}");
    for linked in ["https:", "http:", "www.", "](", "![", "<https"] {
        assert!(!md.contains(linked), "`{linked}` in the summary:\n{md}");
    }
    assert!(
        md.matches('@').count() == md.matches("<wbr>@").count(),
        "{md}"
    );
    // The twin: the findings are all there.
    assert!(md.contains("| witness.rs:4:9 |"), "{md}");
}

#[test]
fn skip_notes_on_stderr_are_escaped() {
    let dir = repo();
    symlink(
        "witness.rs",
        dir.path()
            .join("x\n::error file=README.md,line=1::INJECTED\n.rs"),
    );
    let fifo = dir.path().join("f\n::stop-commands::tok\n.rs");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let r = run(dir.path(), &["check", "--format", "short", "."]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert_no_forged_line("stderr", &r.raw_stderr);
    assert!(
        r.stderr
            .contains("x\\n::error file=README.md,line=1::INJECTED\\n.rs: symbolic link"),
        "{r:?}"
    );
    assert!(r
        .stderr
        .contains("f\\n::stop-commands::tok\\n.rs: not a regular file"));
}

#[test]
fn control_characters_in_source_text_are_escaped() {
    let dir = repo();
    // A comment on the flagged line holds escape sequences, a carriage
    // return and a NUL; a string literal holds a bidi override.
    let text = WITNESS.replace(
        "    con.del(lock_key)?;",
        "    con.del(lock_key)?; // \x1b]8;;http://x\x07\x1b[2J\0 \r::error::forged \u{202e}",
    );
    fs::write(dir.path().join("witness.rs"), text).unwrap();
    let r = run(dir.path(), &["check", "--color", "never", "."]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert_no_forged_line("human", &r.raw_stdout);
    assert!(r
        .stdout
        .contains("// \\x1b]8;;http://x\\x07\\x1b[2J\\0 \\r::error::forged"));
    assert!(r.stdout.contains("unowned-release"));
}

/// Names that are not UTF-8 stay apart.
#[test]
fn names_that_are_not_utf8_are_lossless() {
    use std::os::unix::ffi::OsStrExt;
    let dir = repo();
    for name in [&b"\xff.rs"[..], &b"\xfe.rs"[..]] {
        fs::write(dir.path().join(std::ffi::OsStr::from_bytes(name)), WITNESS).unwrap();
    }
    let r = run(dir.path(), &["check", "--format", "json", "."]);
    assert_eq!(r.code, Some(1), "{r:?}");
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let findings = v["findings"].as_array().unwrap();
    let of = |path: &str| {
        findings
            .iter()
            .find(|f| f["path"] == path)
            .unwrap_or_else(|| panic!("{path} in {}", r.stdout))["fingerprint"]
            .clone()
    };
    assert_ne!(of("\\xff.rs"), of("\\xfe.rs"));
    let r = run(dir.path(), &["check", "--format", "sarif", "."]);
    // SARIF carries the name as a URI: the backslash is percent-encoded.
    assert!(
        r.stdout.contains("\"%5Cxff.rs\"") && r.stdout.contains("\"%5Cxfe.rs\""),
        "{}",
        r.stdout
    );
}

// ---------------------------------------------------------------------
// 2. Nothing outside the repository is read through a discovered config.

const SECRET: &str = "hunter2-do-not-print";

#[test]
fn a_discovered_config_linked_outside_is_not_read() {
    let dir = repo();
    symlink("/proc/self/environ", dir.path().join(".lockaudit.yaml"));
    let r = run_with(dir.path(), &["check", "."], |c| {
        c.env("LOCKAUDIT_TEST_SECRET", SECRET);
    });
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(
        !r.stderr.contains(SECRET) && !r.stdout.contains(SECRET),
        "{r:?}"
    );
    assert!(r.stderr.contains("outside the repository"), "{r:?}");

    // The same through a directory link, and to a file of another tree.
    let dir = repo();
    let outside = tempfile::tempdir().unwrap();
    fs::write(
        outside.path().join("lockaudit.yaml"),
        format!("{SECRET}: [\n"),
    )
    .unwrap();
    symlink(
        outside.path().join("lockaudit.yaml"),
        dir.path().join("lockaudit.yaml"),
    );
    let r = run(dir.path(), &["check", "."]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(!r.stderr.contains(SECRET), "{r:?}");
}

#[test]
fn rule_packs_named_by_a_discovered_config_stay_inside() {
    let outside = tempfile::tempdir().unwrap();
    let secret_pack = outside.path().join("pack.yaml");
    fs::write(&secret_pack, format!("{SECRET}: 1\n")).unwrap();
    for rules in [
        "/etc/passwd".to_string(),
        secret_pack.display().to_string(),
        "../../../../../../../../etc/passwd".to_string(),
        "linked.yaml".to_string(),
        "/proc/self/environ".to_string(),
    ] {
        let dir = repo();
        symlink(&secret_pack, dir.path().join("linked.yaml"));
        fs::write(
            dir.path().join("lockaudit.yaml"),
            format!("rules:\n  - {rules}\n"),
        )
        .unwrap();
        let r = run_with(dir.path(), &["check", "."], |c| {
            c.env("LOCKAUDIT_TEST_SECRET", SECRET);
        });
        assert_eq!(r.code, Some(2), "{rules}: {r:?}");
        assert!(
            common::has_problem(&r.stderr, "lockaudit.yaml:2:5", "rule pack")
                && flat(&r.stderr).contains("is not a regular file inside the repository"),
            "{rules}: {r:?}"
        );
        assert!(!r.stderr.contains(SECRET), "{rules}: {r:?}");
        assert!(!r.stderr.contains("root:x:0"), "{rules}: {r:?}");
    }
    // Named on the command line, a config is trusted wherever it and its
    // packs are.
    let dir = repo();
    let config = outside.path().join("trusted.yaml");
    fs::write(
        outside.path().join("own.yaml"),
        "backend: own\ndescription: d\nconsensus: false\napis: []\n",
    )
    .unwrap();
    fs::write(&config, "rules: [own.yaml]\n").unwrap();
    let r = run(
        dir.path(),
        &["check", "--config", config.to_str().unwrap(), "."],
    );
    assert_eq!(r.code, Some(1), "{r:?}");
}

/// stderr with a diagnostic's wrapped lines joined again.
fn flat(stderr: &str) -> String {
    stderr.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A config kept outside the repository, linked from its root as
/// `lockaudit.yaml`: it turns the witness's check off, and quotes a
/// secret when its YAML error is shown.
fn config_linked_outside(text: &str) -> (tempfile::TempDir, tempfile::TempDir) {
    let dir = repo();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("lockaudit.yaml"), text).unwrap();
    symlink(
        outside.path().join("lockaudit.yaml"),
        dir.path().join("lockaudit.yaml"),
    );
    (dir, outside)
}

const OFF: &str = "checks:\n  unowned-release: off\n";

/// `rules` and `lsp` discover configs as `check` does, and hold them to
/// the same containment: a config linked outside is not read.
#[test]
fn rules_and_the_language_server_read_no_config_outside_the_repository() {
    let (dir, _outside) = config_linked_outside(OFF);
    let r = run(dir.path(), &["rules"]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(r.stderr.contains("outside the repository"), "{r:?}");
    assert!(!r.stdout.contains("off*"), "{r:?}");
    let (dir, _outside) = config_linked_outside(&format!("{SECRET}: [\n"));
    let r = run(dir.path(), &["rules", "--format", "json"]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(
        !r.stderr.contains(SECRET) && !r.stdout.contains(SECRET),
        "{r:?}"
    );

    let (dir, _outside) = config_linked_outside(OFF);
    let r = lsp(dir.path(), &[("witness.rs", WITNESS.to_string())]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(r.stdout.contains("outside the repository"), "{r:?}");
    assert!(
        diagnostics(&r.stdout)
            .iter()
            .any(|m| m.contains("witness.rs") && m.contains("unowned-release")),
        "the defaults apply: {r:?}"
    );
    let (dir, _outside) = config_linked_outside(&format!("{SECRET}: [\n"));
    let r = lsp(dir.path(), &[("witness.rs", WITNESS.to_string())]);
    assert!(!r.stdout.contains(SECRET), "{r:?}");

    // The twins: a config inside the repository, linked or not, is read.
    let dir = repo();
    fs::create_dir(dir.path().join("ci")).unwrap();
    fs::write(dir.path().join("ci/lockaudit.yaml"), OFF).unwrap();
    symlink("ci/lockaudit.yaml", dir.path().join("lockaudit.yaml"));
    let r = run(dir.path(), &["rules"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(r.stdout.contains("off*"), "{r:?}");
    let r = lsp(dir.path(), &[("witness.rs", WITNESS.to_string())]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(!r.stdout.contains("unowned-release"), "{r:?}");
}

/// Whether a rule pack outside the repository exists or not, a
/// discovered config gets the same error: nothing tells it what is on
/// the runner.
#[test]
fn rule_pack_errors_do_not_reveal_what_exists_outside() {
    let outside = tempfile::tempdir().unwrap();
    // Names of one length: the error underlines the path.
    let exists = outside.path().join("present.yaml");
    fs::write(
        &exists,
        "backend: own\ndescription: d\nconsensus: false\napis: []\n",
    )
    .unwrap();
    let missing = outside.path().join("missing.yaml");
    let error_for = |rule: &str, link: Option<&Path>| {
        let dir = repo();
        if let Some(target) = link {
            symlink(target, dir.path().join("linked.yaml"));
        }
        fs::write(
            dir.path().join("lockaudit.yaml"),
            format!("rules:\n  - {rule}\n"),
        )
        .unwrap();
        let r = run(dir.path(), &["check", "."]);
        assert_eq!(r.code, Some(2), "{rule}: {r:?}");
        r.stderr.replace(rule, "PACK")
    };
    let named = error_for(&exists.display().to_string(), None);
    assert_eq!(named, error_for(&missing.display().to_string(), None));
    let linked = error_for("linked.yaml", Some(&exists));
    assert_eq!(linked, error_for("linked.yaml", Some(&missing)));
    assert_eq!(linked, error_for("linked.yaml", Some(Path::new("/etc"))));
    // The same answer for a pack missing inside: it says nothing more.
    assert_eq!(linked, error_for("linked.yaml", None));
    assert!(
        flat(&linked).contains("not a regular file inside the repository"),
        "{linked}"
    );

    // The twin: a pack inside the repository loads.
    let dir = repo();
    fs::create_dir(dir.path().join("packs")).unwrap();
    fs::copy(&exists, dir.path().join("packs/own.yaml")).unwrap();
    fs::write(
        dir.path().join("lockaudit.yaml"),
        "rules: [packs/own.yaml]\n",
    )
    .unwrap();
    let r = run(dir.path(), &["check", "."]);
    assert_eq!(r.code, Some(1), "{r:?}");
}

/// `.git` is not the repository's content: a config, a pack, a baseline
/// or a module that resolves into it is not read.
#[test]
fn files_under_dot_git_are_not_inside_the_repository() {
    let dir = repo();
    let git = dir.path().join(".git");
    fs::write(git.join("lockaudit.yaml"), OFF).unwrap();
    symlink(".git/lockaudit.yaml", dir.path().join("lockaudit.yaml"));
    let r = run(dir.path(), &["check", "."]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(flat(&r.stderr).contains("or into its `.git`"), "{r:?}");

    let dir = repo();
    let git = dir.path().join(".git");
    fs::write(
        git.join("pack.yaml"),
        "backend: own\ndescription: d\nconsensus: false\napis: []\n",
    )
    .unwrap();
    fs::write(
        dir.path().join("lockaudit.yaml"),
        "rules: [.git/pack.yaml]\n",
    )
    .unwrap();
    let r = run(dir.path(), &["check", "."]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(
        flat(&r.stderr).contains("not a regular file inside the repository"),
        "{r:?}"
    );

    let dir = repo();
    let git = dir.path().join(".git");
    fs::write(git.join("hidden.rs"), WITNESS).unwrap();
    fs::write(
        dir.path().join("witness.rs"),
        "#[path = \".git/hidden.rs\"]\nmod hidden;\n",
    )
    .unwrap();
    let r = run(dir.path(), &["check", "--format", "short", "."]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(!r.stdout.contains("hidden.rs"), "{r:?}");
    // The twin: the same module outside `.git` is audited.
    fs::create_dir(dir.path().join("kept")).unwrap();
    fs::write(dir.path().join("kept/hidden.rs"), WITNESS).unwrap();
    fs::write(
        dir.path().join("witness.rs"),
        "#[path = \"kept/hidden.rs\"]\nmod hidden;\n",
    )
    .unwrap();
    let r = run(dir.path(), &["check", "--format", "short", "witness.rs"]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stdout.contains("kept/hidden.rs:4:9"), "{r:?}");
}

/// A committed baseline that links outside the repository, or into
/// `.git`, is never read (nor echoed); one named outside by the caller
/// is read.
#[test]
fn a_baseline_linked_outside_is_not_read() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.json");
    fs::write(&secret, format!("{{\"{SECRET}\": [1, 2\n")).unwrap();
    let missing = outside.path().join("missing.json");
    let mut errors = Vec::new();
    for target in [
        secret.as_path(),
        missing.as_path(),
        Path::new(".git/b.json"),
    ] {
        let dir = repo();
        fs::write(dir.path().join(".git/b.json"), "{ not json").unwrap();
        symlink(target, dir.path().join("baseline.json"));
        for flag in ["--baseline", "--update-baseline"] {
            let r = run(dir.path(), &["check", flag, "baseline.json", "."]);
            assert_eq!(r.code, Some(2), "{target:?} {flag}: {r:?}");
            assert!(!r.stderr.contains(SECRET), "{r:?}");
            assert!(
                r.stderr
                    .contains("not a regular file inside the repository"),
                "{r:?}"
            );
            errors.push(r.stderr);
        }
        // Left as it was.
        assert!(fs::symlink_metadata(dir.path().join("baseline.json"))
            .unwrap()
            .file_type()
            .is_symlink());
    }
    assert!(errors.windows(2).all(|w| w[0] == w[1]), "{errors:?}");
    assert_eq!(
        fs::read_to_string(&secret).unwrap(),
        format!("{{\"{SECRET}\": [1, 2\n")
    );

    // The twins: a link inside the repository, and a file the caller
    // names outside it, are read.
    let dir = repo();
    let r = run(dir.path(), &["check", "--write-baseline", "kept.json", "."]);
    assert_eq!(r.code, Some(0), "{r:?}");
    symlink("kept.json", dir.path().join("baseline.json"));
    let r = run(dir.path(), &["check", "--baseline", "baseline.json", "."]);
    assert_eq!(r.code, Some(0), "{r:?}");
    let elsewhere = outside.path().join("elsewhere.json");
    fs::copy(dir.path().join("kept.json"), &elsewhere).unwrap();
    let r = run(
        dir.path(),
        &["check", "--baseline", elsewhere.to_str().unwrap(), "."],
    );
    assert_eq!(r.code, Some(0), "{r:?}");
}

#[test]
fn only_small_regular_files_are_read_as_config_pack_or_baseline() {
    // A pack that is a FIFO or a device, a baseline that never ends.
    let dir = repo();
    let fifo = dir.path().join("fifo.yaml");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    fs::write(dir.path().join("lockaudit.yaml"), "rules: [fifo.yaml]\n").unwrap();
    let r = run(dir.path(), &["check", "."]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(r.stderr.contains("not a regular file"), "{r:?}");

    let dir = repo();
    symlink("/dev/zero", dir.path().join("baseline.json"));
    let r = run(dir.path(), &["check", "--baseline", "baseline.json", "."]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(r.stderr.contains("not a regular file"), "{r:?}");

    let dir = repo();
    let mut big = String::from("exclude:\n");
    while big.len() <= 1 << 20 {
        big.push_str("  - \"vendor/**\"\n");
    }
    fs::write(dir.path().join("lockaudit.yaml"), big).unwrap();
    let r = run(dir.path(), &["check", "."]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(r.stderr.contains("larger than 1048576 bytes"), "{r:?}");
}

#[test]
fn a_yaml_error_quotes_one_short_line() {
    let dir = repo();
    let long = "x".repeat(100_000);
    fs::write(
        dir.path().join("lockaudit.yaml"),
        format!("# {SECRET}\nchecks:\n  missing-purpose: loud{long}\n# {SECRET}\n"),
    )
    .unwrap();
    let r = run(dir.path(), &["check", "."]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(r.stderr.contains("lockaudit.yaml:3:20"), "{r:?}");
    assert!(!r.stderr.contains(SECRET), "{r:?}");
    assert!(
        r.stderr.len() < 2000,
        "{} bytes: {}",
        r.stderr.len(),
        r.stderr
    );
}

// ---------------------------------------------------------------------
// 4. Small valid files never abort the run.

/// The shapes whose nesting syn follows with its stack, each repeated far
/// past the guard (sizes as found: up to 210 KB).
fn deep_shapes() -> Vec<(&'static str, String)> {
    vec![
        (
            "return.rs",
            format!("fn g() {{ {}1; }}\n", "return ".repeat(30_000)),
        ),
        (
            "closures.rs",
            format!("fn g() {{ let f = {}1; }}\n", "|x| ".repeat(20_000)),
        ),
        (
            "fn_ptr.rs",
            format!("type F = {}u8;\n", "fn() -> ".repeat(30_000)),
        ),
        (
            "raw_ptr.rs",
            format!("type P = {}u8;\n", "*const ".repeat(30_000)),
        ),
        (
            "qualified.rs",
            format!(
                "type Q = {}T{};\n",
                "<".repeat(20_000),
                " as A>::B".repeat(20_000)
            ),
        ),
        (
            "yield.rs",
            format!("fn g() {{ {}1; }}\n", "yield ".repeat(50_000)),
        ),
        (
            "break.rs",
            format!("fn g() {{ loop {{ {}1; }} }}\n", "break ".repeat(30_000)),
        ),
        (
            "refs.rs",
            format!("type R = {}u8;\n", "&'a ".repeat(30_000)),
        ),
        (
            "typed_closures.rs",
            format!("fn g() {{ {}1; }}\n", "move |x: u8| ".repeat(20_000)),
        ),
        (
            "assign.rs",
            format!("fn g() {{ {}1; }}\n", "x = ".repeat(30_000)),
        ),
        (
            "compound.rs",
            format!("fn g() {{ {}1; }}\n", "x += ".repeat(30_000)),
        ),
        (
            "struct_assign.rs",
            format!("fn g() {{ x = {}1; }}\n", "S {a: 1} + x = ".repeat(20_000)),
        ),
        (
            "ranges.rs",
            format!("fn g() {{ let _ = {}1; }}\n", ".. ".repeat(30_000)),
        ),
        // Control flow in condition position, `let` chains, closures with
        // several parameters, bindings: each aborted at 16,000 levels.
        ("while.rs", control("while ", 16_000)),
        ("if.rs", control("if ", 16_000)),
        ("match.rs", control("match ", 16_000)),
        ("for.rs", control("for x in ", 16_000)),
        (
            "if_let.rs",
            format!("pub fn g() {{ if {}x {{}} }}\n", "let a = ".repeat(16_000)),
        ),
        (
            "let_chain.rs",
            format!(
                "pub fn g() {{ if {}true {{}} }}\n",
                "let Some(a) = x && ".repeat(16_000)
            ),
        ),
        (
            "closures_two.rs",
            format!("pub fn g() {{ let f = {}1; }}\n", "|a, b| ".repeat(16_000)),
        ),
        (
            "closures_generic.rs",
            format!(
                "pub fn g() {{ let f = {}1; }}\n",
                "|a: Vec<A, B>| ".repeat(16_000)
            ),
        ),
        (
            "bindings.rs",
            format!("pub fn g() {{ let {}a = 1; }}\n", "a @ &".repeat(16_000)),
        ),
        (
            "turbofish.rs",
            format!(
                "pub fn g() {{ {}1; }}\n",
                "return f::<A, B>() + ".repeat(16_000)
            ),
        ),
    ]
}

/// `pub fn g(){ while while … x {} {} … }`.
fn control(word: &str, n: usize) -> String {
    format!("pub fn g() {{ {}x{} }}\n", word.repeat(n), " {}".repeat(n))
}

/// Chains syn parses in a loop into a tree as deep as the chain, which a
/// syntax error after it makes syn drop (600,000 links aborted).
fn long_chains() -> Vec<(&'static str, String)> {
    vec![
        (
            "sum.rs",
            format!("pub fn g() {{ let x = a{} + ; }}\n", "+a".repeat(600_000)),
        ),
        (
            "calls.rs",
            format!("pub fn g() {{ let x = a{} + ; }}\n", ".b()".repeat(600_000)),
        ),
        (
            "else_if.rs",
            format!(
                "pub fn g() {{ if a {{}} {} }}\n",
                "else if a {} ".repeat(600_000)
            ),
        ),
    ]
}

/// What the deep shapes are made of, as real code writes it, thousands of
/// times: all audited.
fn shallow_twin() -> String {
    let mut s = String::from(WITNESS);
    s.push_str("fn busy(v: Vec<(u8, u8)>, it: &mut dyn Iterator<Item = u8>) {\n");
    for _ in 0..2_000 {
        s.push_str(
            "    while let Some(x) = it.next() { if x > 0 && let Some(y) = f::<A, B>(x) { match y { a @ 1..=2 => return, _ => {} } } }\n    \
             for (a, b) in v.iter().rev() { let g = |a, b| a + b; let h = move |p: Vec<A, B>, q| q; if a == b { } else if a < b { } else { } }\n",
        );
    }
    s.push_str("}\n");
    s.push_str(&format!(
        "fn pipe() {{ let _ = redis::pipe(){}; }}\n",
        ".cmd(\"SET\").arg(\"k\")".repeat(8_000)
    ));
    s
}

#[test]
fn deeply_nested_shapes_are_parse_errors_not_aborts() {
    let dir = repo();
    for (name, text) in deep_shapes() {
        fs::write(dir.path().join(name), text).unwrap();
    }
    let r = run(
        dir.path(),
        &["check", "--format", "short", "--no-prefilter", "."],
    );
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(
        r.stdout.contains("witness.rs:4:9: error[unowned-release]"),
        "{r:?}"
    );
    for (name, _) in deep_shapes() {
        assert!(
            r.stdout.contains(&format!("{name}:1:"))
                && r.stdout.lines().any(|l| l.starts_with(name)
                    && l.contains("error[parse-error]")
                    && l.contains("nest deeper than 256 levels")),
            "{name}: {}",
            r.stdout
        );
    }
    let r = run(dir.path(), &["inventory", "--format", "json", "."]);
    assert_eq!(r.code, Some(0), "{r:?}");
}

#[test]
fn long_chains_are_parse_errors_not_aborts() {
    let dir = repo();
    for (name, text) in long_chains() {
        fs::write(dir.path().join(name), text).unwrap();
    }
    let r = run(
        dir.path(),
        &["check", "--format", "short", "--no-prefilter", "."],
    );
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(
        r.stdout.contains("witness.rs:4:9: error[unowned-release]"),
        "{r:?}"
    );
    for (name, _) in long_chains() {
        assert!(
            r.stdout.lines().any(|l| l.starts_with(name)
                && l.contains("error[parse-error]")
                && l.contains("chain more than 20000 links")),
            "{name}: {}",
            r.stdout
        );
    }
}

/// The language server parses an editor's buffer through the same guard:
/// a buffer deep enough to abort is a `parse-error` diagnostic, and the
/// next buffer is still served.
/// A language server session in `dir`, under the same cap and guard as
/// every run: initialize, open each document (a path under `dir`), shut
/// down. Returns the run, its messages on stdout.
fn lsp(dir: &Path, docs: &[(&str, String)]) -> Run {
    let mut input = String::new();
    let mut send = |body: serde_json::Value| {
        let text = body.to_string();
        input.push_str(&format!("Content-Length: {}\r\n\r\n{text}", text.len()));
    };
    send(
        serde_json::json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": { "capabilities": {} } }),
    );
    send(serde_json::json!({ "jsonrpc": "2.0", "method": "initialized", "params": {} }));
    let root = dir.display().to_string();
    for (name, text) in docs {
        send(
            serde_json::json!({ "jsonrpc": "2.0", "method": "textDocument/didOpen", "params": { "textDocument": {
            "uri": format!("file://{root}/{name}"), "languageId": "rust", "version": 1, "text": text } } }),
        );
    }
    send(serde_json::json!({ "jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": null }));
    send(serde_json::json!({ "jsonrpc": "2.0", "method": "exit", "params": null }));
    let messages = tempfile::NamedTempFile::new().unwrap();
    fs::write(messages.path(), input).unwrap();
    run_with(dir, &["lsp"], |c| {
        c.stdin(fs::File::open(messages.path()).unwrap());
    })
}

/// The `publishDiagnostics` messages of a session.
fn diagnostics(out: &str) -> Vec<&str> {
    out.split("Content-Length")
        .filter(|m| m.contains("publishDiagnostics"))
        .collect()
}

#[test]
fn the_language_server_is_guarded_too() {
    let dir = repo();
    let r = lsp(
        dir.path(),
        &[
            (
                "while.rs",
                format!("{WITNESS}{}", control("while ", 16_000)),
            ),
            (
                "closures.rs",
                format!(
                    "{WITNESS}pub fn g() {{ let f = {}1; }}\n",
                    "|a, b| ".repeat(16_000)
                ),
            ),
            ("witness.rs", WITNESS.to_string()),
        ],
    );
    let out = &r.stdout;
    assert_eq!(r.code, Some(0), "{r:?}");
    let diagnostics = diagnostics(out);
    for name in ["while.rs", "closures.rs"] {
        assert!(
            diagnostics
                .iter()
                .any(|m| m.contains(name) && m.contains("parse-error") && m.contains("256 levels")),
            "{name}: {out}"
        );
    }
    assert!(
        diagnostics
            .iter()
            .any(|m| m.contains("witness.rs") && m.contains("unowned-release")),
        "{out}"
    );
}

/// The same constructs, nested as code nests them, are audited.
#[test]
fn control_flow_closures_and_chains_at_real_depths_are_audited() {
    let dir = repo();
    fs::write(dir.path().join("twin.rs"), shallow_twin()).unwrap();
    let r = run(
        dir.path(),
        &["check", "--format", "short", "--no-prefilter", "."],
    );
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(
        r.stdout.contains("twin.rs:4:9: error[unowned-release]"),
        "{r:?}"
    );
    assert!(!r.stdout.contains("parse-error"), "{}", r.stdout);
}

/// A file named alone is judged knowing its crate, but a `Cargo.toml`
/// above the repository makes no crate: nothing outside the repository is
/// read for it. Inside the repository the same layout is followed.
#[test]
fn a_crate_above_the_repository_is_never_read() {
    let outer = tempfile::tempdir().unwrap();
    let helper = "pub fn acquire_lock(con: &mut redis::Connection, key: &str) -> redis::RedisResult<bool> {\n    let won: Option<String> = redis::cmd(\"SET\").arg(key).arg(\"me\").arg(\"NX\").arg(\"PX\").arg(9).query(con)?;\n    Ok(won.is_some())\n}\n";
    let caller = "fn run(con: &mut redis::Connection) {\n    let _ = crate::locks::acquire_lock(con, \"lock:x\");\n}\n";
    fs::write(
        outer.path().join("Cargo.toml"),
        "[package]\nname = \"outer\"\n",
    )
    .unwrap();
    fs::write(outer.path().join("locks.rs"), helper).unwrap();
    let repo = outer.path().join("repo");
    fs::create_dir_all(repo.join(".git")).unwrap();
    fs::write(repo.join("jobs.rs"), caller).unwrap();
    let r = run(&repo, &["check", "--format", "short", "jobs.rs"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(!r.stdout.contains("ignored-acquire-result"), "{r:?}");
    // The same two files inside the repository: the helper is followed.
    fs::write(repo.join("Cargo.toml"), "[package]\nname = \"inner\"\n").unwrap();
    fs::write(repo.join("locks.rs"), helper).unwrap();
    let r = run(&repo, &["check", "--format", "short", "jobs.rs"]);
    assert!(
        r.stdout
            .contains("jobs.rs:2:13: error[ignored-acquire-result]"),
        "{r:?}"
    );
}

/// The cross-file lookup of the fencing check reads only files the run
/// audits: a helper in an excluded file is unknown.
#[test]
fn the_cross_file_lookup_never_reads_excluded_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/projects/fenced-crate");
    let dir = repo();
    fs::create_dir(dir.path().join("src")).unwrap();
    for f in ["Cargo.toml", "src/lib.rs", "src/store.rs"] {
        fs::copy(root.join(f), dir.path().join(f)).unwrap();
    }
    let args = ["check", "--format", "short", "--no-prefilter", "src/lib.rs"];
    let r = run(dir.path(), &args);
    assert!(
        r.stdout
            .contains("src/lib.rs:17:23: error[unfenced-correctness-lock]"),
        "{r:?}"
    );
    fs::write(
        dir.path().join("lockaudit.yaml"),
        "exclude: [\"src/store.rs\"]\n",
    )
    .unwrap();
    let r = run(dir.path(), &args);
    assert!(!r.stdout.contains("unfenced-correctness-lock"), "{r:?}");
    // Deep code in a helper file is refused there too, not parsed.
    fs::remove_file(dir.path().join("lockaudit.yaml")).unwrap();
    let mut store = fs::read_to_string(dir.path().join("src/store.rs")).unwrap();
    store.push_str(&format!("fn deep() {{ {}1; }}\n", "return ".repeat(30_000)));
    fs::write(dir.path().join("src/store.rs"), store).unwrap();
    let r = run(dir.path(), &args);
    assert!(r.code.is_some(), "{r:?}");
}

use common::git;

/// `--new-since` parses the base revision through the same guard, and a
/// hostile `.git/config` executes nothing (held).
#[test]
fn new_since_is_guarded_and_runs_nothing_from_the_repository() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    git(d, &["init", "-q"]);
    fs::write(d.join("witness.rs"), WITNESS).unwrap();
    for (name, text) in deep_shapes() {
        fs::write(d.join(name), text).unwrap();
    }
    fs::create_dir_all(d.join("target")).unwrap();
    fs::create_dir_all(d.join(".hidden")).unwrap();
    fs::write(d.join("target/deep.rs"), deep_shapes()[0].1.clone()).unwrap();
    fs::write(d.join(".hidden/deep.rs"), deep_shapes()[1].1.clone()).unwrap();
    git(d, &["add", "-A", "-f"]);
    git(d, &["commit", "-q", "-m", "base"]);
    // Anything git would run from the repository leaves a mark.
    let mark = d.join("executed");
    let cmd = format!("touch {}", mark.display());
    for key in [
        "core.fsmonitor",
        "core.pager",
        "core.sshCommand",
        "diff.external",
    ] {
        git(d, &["config", key, &cmd]);
    }
    for hook in ["post-checkout", "pre-commit", "reference-transaction"] {
        let h = d.join(".git/hooks").join(hook);
        fs::write(&h, format!("#!/bin/sh\n{cmd}\n")).unwrap();
        fs::set_permissions(&h, fs::Permissions::from_mode(0o755)).unwrap();
    }
    fs::write(d.join("witness.rs"), format!("{WITNESS}\nfn more() {{}}\n")).unwrap();
    for rev in ["HEAD", "--output=/tmp/x", "HEAD;touch executed"] {
        let r = run(
            d,
            &[
                "check",
                "--format",
                "short",
                "--no-prefilter",
                "--new-since",
                rev,
                ".",
            ],
        );
        assert!(r.code.is_some(), "{rev}: {r:?}");
        if rev == "HEAD" {
            // The witness and the parse errors were all there before.
            assert_eq!(r.code, Some(0), "{r:?}");
            assert!(
                r.stdout.contains(&format!(
                    "{} already present at the base revision",
                    deep_shapes().len() + 1
                )),
                "{r:?}"
            );
        } else {
            assert_eq!(r.code, Some(2), "{rev}: {r:?}");
        }
    }
    assert!(!mark.exists(), "something from the repository ran");
}

fn git_out(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A repository with two commits of the witness: the base and a change.
fn two_commits() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    git(d, &["init", "-q"]);
    fs::write(d.join("witness.rs"), WITNESS).unwrap();
    git(d, &["add", "witness.rs"]);
    git(d, &["commit", "-q", "-m", "base"]);
    fs::write(d.join("witness.rs"), format!("{WITNESS}\nfn more() {{}}\n")).unwrap();
    git(d, &["commit", "-q", "-a", "-m", "change"]);
    dir
}

/// A partial clone whose base blob is missing, with a promisor remote
/// whose URL runs a command: reading the base would fetch the blob, and
/// the fetch would run it. lockaudit fetches nothing, runs nothing, and
/// says how to fetch; a hostile environment changes none of that.
#[test]
fn new_since_never_fetches_what_a_partial_clone_left_out() {
    let dir = two_commits();
    let d = dir.path();
    let blob = git_out(d, &["rev-parse", "HEAD~1:witness.rs"]);
    fs::remove_file(d.join(".git/objects").join(&blob[..2]).join(&blob[2..])).unwrap();
    let mark = d.join("MARKER");
    git(d, &["config", "core.repositoryformatversion", "1"]);
    git(d, &["config", "extensions.partialClone", "origin"]);
    git(d, &["config", "remote.origin.promisor", "true"]);
    git(
        d,
        &[
            "config",
            "remote.origin.url",
            &format!("ext::sh -c touch% {}", mark.display()),
        ],
    );
    git(d, &["config", "protocol.ext.allow", "always"]);
    // The trap is armed: git itself, asked for the blob, runs the command.
    let _ = Command::new("git")
        .args(["cat-file", "-p", &blob])
        .current_dir(d)
        .env_remove("GIT_NO_LAZY_FETCH")
        .env_remove("GIT_ALLOW_PROTOCOL")
        .output();
    assert!(
        mark.exists(),
        "git fetches the missing blob through `ext::`"
    );
    fs::remove_file(&mark).unwrap();
    let args = ["check", "--format", "short", "--new-since", "HEAD~1", "."];
    let r = run_with(d, &args, |c| {
        // Variables a caller may have set: none reaches git.
        c.env("GIT_CONFIG_PARAMETERS", "'protocol.allow'='always'")
            .env("GIT_CONFIG_COUNT", "1")
            .env("GIT_CONFIG_KEY_0", "protocol.ext.allow")
            .env("GIT_CONFIG_VALUE_0", "always");
    });
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(
        !mark.exists(),
        "lockaudit made git run the promisor's command"
    );
    assert!(r.stderr.contains("`git fetch"), "{r:?}");
    assert!(r.stderr.contains(&blob), "{r:?}");
    assert_no_command("stderr", &r.raw_stderr, false);

    // The twin: the same repository with nothing missing, run from a
    // caller whose environment points git elsewhere.
    let dir = two_commits();
    let elsewhere = tempfile::tempdir().unwrap();
    let r = run_with(dir.path(), &args, |c| {
        c.env("GIT_DIR", elsewhere.path())
            .env("GIT_WORK_TREE", elsewhere.path())
            .env("GIT_INDEX_FILE", elsewhere.path().join("index"))
            .env("GIT_OBJECT_DIRECTORY", elsewhere.path());
    });
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(
        r.stdout.contains("1 already present at the base revision"),
        "{r:?}"
    );
}

/// A git that never finishes (its alternates file is a FIFO nobody
/// writes) is stopped at the time limit: an error, not a hang.
#[test]
fn new_since_stops_a_git_that_never_finishes() {
    let dir = two_commits();
    let d = dir.path();
    fs::create_dir_all(d.join(".git/objects/info")).unwrap();
    mkfifo(&d.join(".git/objects/info/alternates"));
    let r = run_with(
        d,
        &["check", "--format", "short", "--new-since", "HEAD~1", "."],
        |c| {
            c.env("LOCKAUDIT_INTERNAL_GIT_TIME_LIMIT_MS", "1500");
        },
    );
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(r.stderr.contains("did not finish in 1.5 s"), "{r:?}");
}

// ---------------------------------------------------------------------
// 5. Memory stays bounded by the input.

#[test]
fn files_over_the_size_limit_are_a_note_and_never_read() {
    let dir = repo();
    // 50 MB that would take gigabytes to model: never read (sparse).
    let big = fs::File::create(dir.path().join("huge.rs")).unwrap();
    big.set_len(50 << 20).unwrap();
    let r = run(
        dir.path(),
        &["check", "--format", "short", "--fail-on", "error", "."],
    );
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(
        r.stdout.contains(
            "huge.rs:1:1: note[parse-error]: file was not audited: larger than 8388608 bytes (52428800 bytes)"
        ),
        "{r:?}"
    );
    assert!(
        r.stdout.contains("witness.rs:4:9: error[unowned-release]"),
        "{r:?}"
    );
    // The limit is the config's `max-file-size`; a note fails no gate
    // unless asked to.
    let dir = repo();
    fs::write(dir.path().join("lockaudit.yaml"), "max-file-size: 100\n").unwrap();
    let r = run(dir.path(), &["check", "--format", "short", "."]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(
        r.stdout.contains(
            "witness.rs:1:1: note[parse-error]: file was not audited: larger than 100 bytes"
        ),
        "{r:?}"
    );
    let r = run(
        dir.path(),
        &["check", "--format", "short", "--fail-on", "note", "."],
    );
    assert_eq!(r.code, Some(1), "{r:?}");
    fs::write(dir.path().join("lockaudit.yaml"), "max-file-size: 0\n").unwrap();
    let r = run(dir.path(), &["check", "."]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(
        common::has_problem(&r.stderr, "lockaudit.yaml:1:16", "`0` is not a file size"),
        "{r:?}"
    );
}

/// Nested tuples of `let`s under one command: the strings under the
/// argument are many more than the bytes of the file.
#[test]
fn nested_tuples_of_lets_stay_small() {
    let dir = repo();
    let mut body = String::from("    let a0 = \"lock\";\n");
    for i in 1..=40 {
        body.push_str(&format!(
            "    let a{i} = (a{p}, a{p}, a{p}, a{p});\n",
            p = i - 1
        ));
    }
    let src = format!(
        "fn f(con: &mut redis::Connection) -> redis::RedisResult<()> {{\n{body}    \
         let _: () = redis::cmd(\"SET\").arg(a40).arg(\"v\").arg(\"NX\").query(con)?;\n    Ok(())\n}}\n"
    );
    fs::write(dir.path().join("tuples.rs"), src).unwrap();
    let r = run(dir.path(), &["check", "--format", "short", "."]);
    assert!(matches!(r.code, Some(1)), "{r:?}");
}

/// One large `const` used at many query sites.
#[test]
fn a_large_const_at_many_sites_stays_small() {
    let dir = repo();
    let mut src = format!(
        "const Q: &str = \"SELECT pg_advisory_lock(1) {}\";\n",
        "x".repeat(128 << 10)
    );
    src.push_str("async fn f(pool: &sqlx::PgPool) {\n");
    for _ in 0..4_000 {
        src.push_str("    let _ = sqlx::query(Q).execute(pool).await;\n");
    }
    src.push_str("}\n");
    fs::write(dir.path().join("consts.rs"), src).unwrap();
    let r = run(dir.path(), &["check", "--format", "short", "."]);
    assert!(matches!(r.code, Some(1)), "{r:?}");
}

// ---------------------------------------------------------------------
// 7. Cost grows with the input, not faster. Every run here is under the
// address-space cap and the hang guard of `run_with`; how fast each shape
// runs, and how that grows with its size, is measured by
// `scripts/shapes.sh`, not here.

/// A pipeline of many commands: each command's view once held the whole
/// chain's method names and mentions (4,000 commands needed 3.6 GB).
#[test]
fn a_long_pipeline_is_linear() {
    let dir = repo();
    let mut chain = String::new();
    for i in 0..4_000 {
        chain.push_str(&format!(
            ".cmd(\"SET\").arg(\"lock:{i}\").arg(\"v\").ignore()"
        ));
    }
    let src = format!(
        "fn f(con: &mut redis::Connection) -> redis::RedisResult<()> {{\n    \
         let _: () = redis::pipe(){chain}.query(con)?;\n    Ok(())\n}}\n"
    );
    fs::write(dir.path().join("pipe.rs"), src).unwrap();
    let r = run(dir.path(), &["check", "--format", "short", "."]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(
        r.stdout.contains("witness.rs:4:9: error[unowned-release]"),
        "{r:?}"
    );
}

/// Thousands of correctness locks, each with an effect.
#[test]
fn thousands_of_locks_with_effects_are_linear() {
    let dir = repo();
    let mut src = String::from("use etcd_client::{Client, LockOptions};\n");
    src.push_str(
        "// lock-purpose: correctness — one writer\n\
         async fn f(client: &mut Client, db: &Db, lease: i64) -> Result<(), etcd_client::Error> {\n",
    );
    for i in 0..2_000 {
        src.push_str(&format!(
            "    let l{i} = client.lock(\"ledger/{i}\", Some(LockOptions::new().with_lease(lease))).await?;\n    write(&db, {i});\n"
        ));
    }
    src.push_str("    Ok(())\n}\n");
    fs::write(dir.path().join("locks.rs"), src).unwrap();
    let r = run(dir.path(), &["check", "--format", "short", "."]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(
        r.stdout.contains("witness.rs:4:9: error[unowned-release]"),
        "{r:?}"
    );
}

/// Thousands of correctness grants in one function, no effect, each only
/// asked for its key: every grant's token use is read from a bounded part
/// of the function, in `check` and in `inventory`.
#[test]
fn thousands_of_grants_without_effects_are_bounded() {
    let dir = repo();
    let mut src = String::from("use etcd_client::{Client, LockOptions};\n");
    src.push_str(
        "// lock-purpose: correctness — one writer\n\
         async fn f(client: &mut Client, lease: i64) -> Result<(), etcd_client::Error> {\n",
    );
    for i in 0..1_500 {
        src.push_str(&format!(
            "    let l{i} = client.lock(\"ledger/{i}\", Some(LockOptions::new().with_lease(lease))).await?;\n    keys.push(l{i}.key().to_vec());\n"
        ));
    }
    src.push_str("    Ok(())\n}\n");
    fs::write(dir.path().join("grants.rs"), src).unwrap();
    let r = run(dir.path(), &["check", "--format", "short", "."]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(
        r.stdout.contains("witness.rs:4:9: error[unowned-release]"),
        "{r:?}"
    );
    let r = run(dir.path(), &["inventory", "--format", "json", "."]);
    assert_eq!(r.code, Some(0), "{r:?}");
}

/// One call with hundreds of thousands of arguments.
#[test]
fn a_call_with_many_arguments_is_linear() {
    let dir = repo();
    let args = vec!["\"lock\""; 320_000].join(",");
    let src = format!(
        "fn f(con: &mut redis::Connection) -> redis::RedisResult<()> {{\n    \
         con.del(({args}))?;\n    Ok(())\n}}\n"
    );
    fs::write(dir.path().join("args.rs"), src).unwrap();
    let r = run(dir.path(), &["check", "--format", "short", "."]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(
        r.stdout.contains("witness.rs:4:9: error[unowned-release]"),
        "{r:?}"
    );
}

/// 2,000 findings on one 64 KB line: the human format shows the line
/// clipped around each finding, not whole 2,000 times.
#[test]
fn many_findings_on_one_long_line_print_a_bounded_report() {
    let dir = repo();
    let mut line = String::from(
        "pub fn f(con: &mut redis::Connection, lock_key: &str) -> redis::RedisResult<()> { ",
    );
    for _ in 0..2_000 {
        line.push_str("con.del(lock_key)?; ");
    }
    line.push_str("Ok(()) } // ");
    while line.len() < 64 << 10 {
        line.push('x');
    }
    fs::write(dir.path().join("long.rs"), format!("{line}\n")).unwrap();
    let r = run(dir.path(), &["check", "--color", "never", "."]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert_eq!(
        r.stdout.matches("error[unowned-release]").count(),
        2_001,
        "one per finding"
    );
    assert!(
        r.raw_stdout.len() < 4 << 20,
        "{} bytes of human output",
        r.raw_stdout.len()
    );
    // Each finding still names its own column.
    assert!(
        r.stdout.contains("--> long.rs:1:87\n"),
        "{}",
        &r.stdout[..2000]
    );
    assert!(r.stdout.contains("--> long.rs:1:40067\n"));
}

// ---------------------------------------------------------------------
// 6. Config and pack bombs are refused at their place.

fn refused(file: &str, text: &str, expect: &str) {
    let dir = repo();
    if file == "lockaudit.yaml" {
        fs::write(dir.path().join(file), text).unwrap();
    } else {
        fs::write(dir.path().join(file), text).unwrap();
        fs::write(
            dir.path().join("lockaudit.yaml"),
            format!("rules: [{file}]\n"),
        )
        .unwrap();
    }
    let r = run(dir.path(), &["check", "."]);
    assert_eq!(r.code, Some(2), "{r:?}");
    // `expect` is `place: message`, found as a problem in the findings' style.
    let found = match expect.split_once(": ") {
        Some((place, message)) if place.contains(".yaml:") => {
            common::has_problem(&r.stderr, place, message)
        }
        _ => r.stderr.contains(expect),
    };
    assert!(found, "expected {expect:?} in {}", r.stderr);
    assert!(r.stderr.len() < 4000, "{}", r.stderr);
}

/// The forms a text scan missed: an anchor after a tag, an alias after a
/// quoted flow key, anchors after a block scalar under a `- ` item. They
/// are found in the parser's own events, at their place; a clean twin
/// with the same tags, quotes and block scalars loads.
#[test]
fn yaml_anchors_hidden_from_a_text_scan_are_refused() {
    let mut laughs = String::from("a: !!seq &a [\"lol\", \"lol\", \"lol\", \"lol\", \"lol\"]\n");
    for (i, c) in ('b'..='p').enumerate() {
        let prev = (b'a' + i as u8) as char;
        laughs.push_str(&format!(
            "{c}: !!seq &{c} [{{\"k\": *{prev}}}, {{\"k\": *{prev}}}, {{\"k\": *{prev}}}, {{\"k\": *{prev}}}]\n"
        ));
    }
    let padded = format!("{laughs}{}", "# pad\n".repeat(6_000));
    refused("lockaudit.yaml", &padded, "lockaudit.yaml:1:");
    refused("lockaudit.yaml", &padded, "YAML anchors and aliases");
    refused("pack.yaml", &padded, "pack.yaml:1:");
    let block = "exclude:\n  - |\n     a\nx: &x [1, 1]\ny: [*x, *x, *x]\n";
    refused(
        "lockaudit.yaml",
        block,
        "lockaudit.yaml:4:4: YAML anchors and aliases",
    );
    // The twin: tags, quoted keys and block scalars without anchors.
    let dir = repo();
    fs::write(
        dir.path().join("lockaudit.yaml"),
        "exclude:\n  - |-\n     vendor/**\n  - !!str \"gen/**\"\nchecks: {\"missing-purpose\": off}\n",
    )
    .unwrap();
    let r = run(dir.path(), &["check", "--format", "short", "."]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(
        r.stdout.contains("witness.rs:4:9: error[unowned-release]"),
        "{r:?}"
    );
}

#[test]
fn yaml_aliases_are_refused_in_config_and_packs() {
    // The quadratic form: one 8,000-item anchor, aliased 8,000 times.
    let items = vec!["1"; 8_000].join(", ");
    let aliases = vec!["*a"; 8_000].join(", ");
    let quadratic = format!("x: &a [{items}]\ny: [{aliases}]\n");
    refused(
        "lockaudit.yaml",
        &quadratic,
        "lockaudit.yaml:1:4: YAML anchors and aliases",
    );
    refused(
        "pack.yaml",
        &quadratic,
        "pack.yaml:1:4: YAML anchors and aliases",
    );
    // Billion laughs (held).
    let mut laughs = String::from("a: &a [\"lol\", \"lol\", \"lol\", \"lol\", \"lol\"]\n");
    for (i, c) in ('b'..='j').enumerate() {
        let prev = (b'a' + i as u8) as char;
        laughs.push_str(&format!(
            "{c}: &{c} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"
        ));
    }
    refused(
        "lockaudit.yaml",
        &laughs,
        "lockaudit.yaml:1:4: YAML anchors",
    );
}

#[test]
fn deep_long_and_many_values_are_refused_at_their_place() {
    let deep = format!("exclude: {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
    refused(
        "lockaudit.yaml",
        &deep,
        "lockaudit.yaml:1:42: YAML nested deeper than 32 levels",
    );
    refused(
        "pack.yaml",
        &deep,
        "pack.yaml:1:42: YAML nested deeper than 32 levels",
    );
    let pattern = format!("lock-name-pattern: \"{}\"\n", "a".repeat(5_000));
    refused(
        "lockaudit.yaml",
        &pattern,
        "lockaudit.yaml:1:20: invalid regex: longer than 4096 bytes",
    );
    let huge = format!("lock-name-pattern: \"{}\"\n", "a".repeat(2 << 20));
    refused("lockaudit.yaml", &huge, "larger than 1048576 bytes");
    let mut many = String::from("exclude:\n");
    for i in 0..16_000 {
        many.push_str(&format!("  - \"gen/{i}.rs\"\n"));
    }
    refused(
        "lockaudit.yaml",
        &many,
        "lockaudit.yaml:1002:5: more than 1000 excludes (16000)",
    );
    let pack = format!(
        "backend: b\ndescription: d\nconsensus: false\napis:\n  - id: x\n    role: acquire\n    match: {{ method: m, receiver: '{}' }}\n",
        "(a|b)".repeat(1_000)
    );
    refused("pack.yaml", &pack, "pack.yaml:7:");
}

// ---------------------------------------------------------------------
// 7. The gate cannot be switched off from outside lockaudit's config.

#[test]
fn files_reached_by_mod_declarations_are_audited_whatever_hides_them() {
    let dir = repo();
    let d = dir.path();
    fs::remove_file(d.join("witness.rs")).unwrap();
    fs::create_dir_all(d.join("src/target")).unwrap();
    fs::create_dir_all(d.join("src/.impl")).unwrap();
    fs::write(
        d.join("src/lib.rs"),
        "mod target;\nmod hidden;\nmod ignored;\n#[path = \".impl/x.rs\"]\nmod x;\n#[cfg(unix)]\n#[path = \"x.inc\"]\npub(crate) mod inc;\n\
         #[path = \"/etc/passwd\"]\nmod passwd;\n#[path = \"../../../../../../../../etc/hostname\"]\nmod host;\nmod a;\nmod b;\n",
    )
    .unwrap();
    // `a::b` is `src/a/b.rs`, ignored; the walked `src/b.rs` beside `a.rs`
    // is another module and does not stand for it.
    fs::create_dir_all(d.join("src/a")).unwrap();
    fs::write(d.join("src/a.rs"), "mod b;\n").unwrap();
    fs::write(d.join("src/b.rs"), "pub fn f() {}\n").unwrap();
    for f in [
        "src/target/mod.rs",
        "src/hidden.rs",
        "src/ignored.rs",
        "src/.impl/x.rs",
        "src/x.inc",
        "src/a/b.rs",
    ] {
        fs::write(d.join(f), WITNESS).unwrap();
    }
    fs::write(d.join("src/.ignore"), "hidden.rs\n").unwrap();
    fs::write(d.join(".gitignore"), "src/ignored.rs\nsrc/a/\n").unwrap();
    let r = run(d, &["check", "--format", "short", "."]);
    assert_eq!(r.code, Some(1), "{r:?}");
    for f in [
        "src/target/mod.rs",
        "src/hidden.rs",
        "src/ignored.rs",
        "src/.impl/x.rs",
        "src/x.inc",
        "src/a/b.rs",
    ] {
        assert!(
            r.stdout
                .contains(&format!("{f}:4:9: error[unowned-release]")),
            "{f}: {r:?}"
        );
    }
    assert!(
        !r.stdout.contains("passwd") && !r.stdout.contains("hostname"),
        "{r:?}"
    );
    assert!(r.stdout.contains("9 files audited"), "{r:?}");
    // lockaudit's own excludes still apply, and say how many they hide.
    fs::write(
        d.join("lockaudit.yaml"),
        "exclude: [\"src/x.inc\", \"src/.impl/**\"]\n",
    )
    .unwrap();
    let r = run(d, &["check", "--format", "short", "."]);
    assert!(
        !r.stdout.contains("src/x.inc") && !r.stdout.contains(".impl"),
        "{r:?}"
    );
    assert!(
        r.stderr
            .contains("note: 2 files reached by `mod` declarations are excluded"),
        "{r:?}"
    );
    // A hidden config counts like any other.
    fs::remove_file(d.join("lockaudit.yaml")).unwrap();
    fs::write(
        d.join(".lockaudit.yaml"),
        "checks:\n  unowned-release: off\n",
    )
    .unwrap();
    let r = run(d, &["check", "--format", "short", "."]);
    assert_eq!(r.code, Some(0), "{r:?}");
}

/// A file named several ways is audited once.
#[test]
fn a_file_named_several_ways_is_audited_once() {
    let dir = repo();
    let abs = dir.path().join("witness.rs");
    let r = run(
        dir.path(),
        &[
            "check",
            "--format",
            "short",
            "witness.rs",
            "./witness.rs",
            abs.to_str().unwrap(),
            ".",
        ],
    );
    assert_eq!(r.code, Some(1), "{r:?}");
    assert_eq!(
        r.stdout.matches("error[unowned-release]").count(),
        1,
        "{r:?}"
    );
}

/// Two hard links are two paths of the tree: each is audited and reported
/// (one walked directory asks no file's identity).
#[cfg(unix)]
#[test]
fn hard_links_in_one_tree_are_each_audited() {
    let dir = repo();
    std::fs::hard_link(dir.path().join("witness.rs"), dir.path().join("twin.rs")).unwrap();
    let r = run(dir.path(), &["check", "--format", "short", "."]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert_eq!(
        r.stdout.matches("error[unowned-release]").count(),
        2,
        "{r:?}"
    );
    assert!(r.stdout.contains("twin.rs"), "{r:?}");
}

// ---------------------------------------------------------------------
// 8b. A run stopped during the write leaves no temporary file.

#[test]
fn a_run_stopped_while_writing_leaves_no_temporary_file() {
    let dir = repo();
    let mut child = Command::new(env!("CARGO_BIN_EXE_lockaudit"))
        .args([
            "check",
            "--format",
            "sarif",
            "--output",
            "report.sarif",
            ".",
        ])
        .current_dir(dir.path())
        .env("LOCKAUDIT_INTERNAL_WRITE_PAUSE_MS", "30000")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let temporary = || {
        fs::read_dir(dir.path())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with(".lockaudit-"))
            .count()
    };
    let start = Instant::now();
    while temporary() == 0 {
        assert!(start.elapsed() < TIMEOUT, "no temporary file appeared");
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: a signal to the child this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let status = child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    assert_eq!(temporary(), 0, "the temporary file was left behind");
    assert!(!dir.path().join("report.sarif").exists());
}

// ---------------------------------------------------------------------
// 9. Closed streams, huge --jobs.

/// Runs with stdout or stderr a pipe nobody reads (closed at once).
/// A pipe whose reading end is closed before anything is written to it:
/// every write fails (`EPIPE`), however soon the child writes.
fn unread_pipe() -> Stdio {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: `pipe` fills both descriptors; the reading one is closed at
    // once and the writing one is owned by the returned `Stdio`.
    unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
        libc::close(fds[0]);
        Stdio::from(std::os::fd::OwnedFd::from_raw_fd(fds[1]))
    }
}

fn run_closed(dir: &Path, args: &[&str], close_stdout: bool) -> (Option<i32>, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockaudit"));
    cmd.args(args).current_dir(dir).stdin(Stdio::null());
    if close_stdout {
        cmd.stdout(unread_pipe()).stderr(Stdio::piped());
    } else {
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    }
    let mut child = cmd.spawn().unwrap();
    let mut kept = String::new();
    if close_stdout {
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut kept)
            .unwrap();
    } else {
        drop(child.stderr.take());
    }
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return (s.code(), kept);
        }
        assert!(start.elapsed() < TIMEOUT, "no exit");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn closed_streams_lose_nothing_silently() {
    let dir = repo();
    // A skip note goes to stderr; stderr is closed; the report is kept.
    symlink("witness.rs", dir.path().join("alias.rs"));
    let (code, _) = run_closed(
        dir.path(),
        &["check", "--format", "json", "--output", "report.json", "."],
        false,
    );
    assert_eq!(code, Some(1), "no panic (101) on a closed stderr");
    let report = fs::read_to_string(dir.path().join("report.json")).unwrap();
    assert!(report.contains("\"unowned-release\""), "{report}");
    // Nobody reads stdout: the report is lost, and the run says so.
    let (code, stderr) = run_closed(dir.path(), &["check", "."], true);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("cannot write the report to standard output"),
        "{stderr}"
    );
}

/// Runs with standard output closed (`>&-`), or the file `to` as it.
fn run_stdout(dir: &Path, args: &[&str], to: Option<&Path>) -> Run {
    run_with(dir, args, |c| match to {
        Some(p) => {
            c.stdout(fs::OpenOptions::new().write(true).open(p).unwrap());
        }
        None => {
            c.stdout(Stdio::null());
            // SAFETY: close is async-signal-safe.
            unsafe {
                c.pre_exec(|| {
                    libc::close(1);
                    Ok(())
                });
            }
        }
    })
}

/// A report standard output cannot take (closed, a full disk, a pipe
/// nobody reads) is exit 2 with a message, in every command that prints
/// one; `--output`, `/dev/null` and a reader that took part still work.
#[test]
fn a_report_standard_output_cannot_take_is_exit_2() {
    let dir = repo();
    fs::write(
        dir.path().join("acquire.rs"),
        "use redis::Commands;\nfn f(con: &mut redis::Connection) -> redis::RedisResult<()> {\n    let _: bool = con.set_nx(\"lock:a\", 1)?;\n    Ok(())\n}\n",
    )
    .unwrap();
    let pack = dir.path().join("acme-locks.yaml");
    fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/packs/custom/acme-locks.yaml"),
        &pack,
    )
    .unwrap();
    let commands: [&[&str]; 4] = [
        &["check", "."],
        &["annotate", "--purpose", "efficiency", "acquire.rs"],
        &["test-pack", "acme-locks.yaml", "witness.rs"],
        &["rules"],
    ];
    for args in commands {
        let r = run_stdout(dir.path(), args, None);
        assert_eq!(r.code, Some(2), "closed: {args:?}: {r:?}");
        assert!(
            r.stderr
                .contains("cannot write the report to standard output: it is closed"),
            "{args:?}: {r:?}"
        );
        if Path::new("/dev/full").exists() {
            let r = run_stdout(dir.path(), args, Some(Path::new("/dev/full")));
            assert_eq!(r.code, Some(2), "full: {args:?}: {r:?}");
            assert!(
                r.stderr
                    .contains("cannot write the report to standard output"),
                "{args:?}: {r:?}"
            );
        }
        let (code, stderr) = run_closed(dir.path(), args, true);
        assert_eq!(code, Some(2), "unread pipe: {args:?}: {stderr}");
    }
    // The twins: the report goes where it was asked to.
    let r = run_stdout(dir.path(), &["check", "--output", "r.txt", "."], None);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(fs::read_to_string(dir.path().join("r.txt"))
        .unwrap()
        .contains("unowned-release"));
    let r = run_stdout(dir.path(), &["check", "."], Some(Path::new("/dev/null")));
    assert_eq!(r.code, Some(1), "{r:?}");
    let r = run_stdout(
        dir.path(),
        &["annotate", "--purpose", "efficiency", "acquire.rs"],
        Some(Path::new("/dev/null")),
    );
    assert_eq!(r.code, Some(0), "{r:?}");
}

#[test]
fn a_huge_jobs_count_is_capped_with_a_note() {
    let dir = repo();
    let r = run(
        dir.path(),
        &["check", "--jobs", "100000", "--format", "short", "."],
    );
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(
        r.stderr.contains("note: --jobs 100000 is more than ") && r.stderr.contains("; using "),
        "{r:?}"
    );
    assert!(
        r.stdout.contains("witness.rs:4:9: error[unowned-release]"),
        "{r:?}"
    );
}

// ---------------------------------------------------------------------
// Held: what already withstood a hostile tree stays so.

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

#[test]
fn held_configs_that_are_fifos_devices_or_links() {
    // A FIFO config is not read (the run does not block on it).
    let dir = repo();
    mkfifo(&dir.path().join("lockaudit.yaml"));
    let r = run(dir.path(), &["check", "--format", "short", "."]);
    assert_eq!(r.code, Some(1), "{r:?}");
    // A device: not a config either, and never read.
    let dir = repo();
    symlink("/dev/zero", dir.path().join("lockaudit.yaml"));
    let r = run(dir.path(), &["check", "--format", "short", "."]);
    assert_eq!(r.code, Some(1), "{r:?}");
    // A link to a config inside the repository is followed.
    let dir = repo();
    fs::create_dir(dir.path().join("ci")).unwrap();
    fs::write(
        dir.path().join("ci/lockaudit.yaml"),
        "checks:\n  unowned-release: off\n",
    )
    .unwrap();
    symlink("ci/lockaudit.yaml", dir.path().join("lockaudit.yaml"));
    let r = run(dir.path(), &["check", "."]);
    assert_eq!(r.code, Some(0), "{r:?}");
}

#[test]
fn held_corrupt_deep_and_huge_baselines() {
    let dir = repo();
    let b = dir.path().join("baseline.json");
    for text in [
        "{ not json".to_string(),
        format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)),
        "{\"version\": 1, \"findings\": 7}".to_string(),
    ] {
        fs::write(&b, text).unwrap();
        let r = run(dir.path(), &["check", "--baseline", "baseline.json", "."]);
        assert_eq!(r.code, Some(2), "{r:?}");
        assert!(r.stderr.contains("baseline.json"), "{r:?}");
    }
    let huge = fs::File::create(&b).unwrap();
    huge.set_len(65 << 20).unwrap();
    let r = run(dir.path(), &["check", "--baseline", "baseline.json", "."]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(r.stderr.contains("larger than 67108864 bytes"), "{r:?}");
}

#[test]
fn held_outputs_to_files_directories_full_disks_and_concurrent_writers() {
    let dir = repo();
    let args = |out: &str| {
        vec![
            "check".to_string(),
            "--format".into(),
            "json".into(),
            "--output".into(),
            out.to_string(),
            ".".into(),
        ]
    };
    let call = |out: &str| {
        let a = args(out);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        run(dir.path(), &a)
    };
    fs::write(dir.path().join("old.json"), "old").unwrap();
    assert_eq!(call("old.json").code, Some(1));
    assert!(fs::read_to_string(dir.path().join("old.json"))
        .unwrap()
        .contains("unowned-release"));
    fs::create_dir(dir.path().join("adir")).unwrap();
    let r = call("adir");
    assert_eq!(r.code, Some(2), "{r:?}");
    let r = call("/dev/full");
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(r.stderr.contains("/dev/full: cannot write"), "{r:?}");
    let r = call("missing-dir/report.json");
    assert_eq!(r.code, Some(2), "{r:?}");
    // Four writers at once: the file is one whole report.
    let runs: Vec<_> = (0..4)
        .map(|_| {
            let d = dir.path().to_path_buf();
            std::thread::spawn(move || {
                run(
                    &d,
                    &["check", "--format", "json", "--output", "same.json", "."],
                )
                .code
            })
        })
        .collect();
    for r in runs {
        assert_eq!(r.join().unwrap(), Some(1));
    }
    let text = fs::read_to_string(dir.path().join("same.json")).unwrap();
    serde_json::from_str::<serde_json::Value>(&text).expect("a whole report");
    let leftovers: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(".lockaudit-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn held_head_reads_the_first_line_and_the_run_succeeds() {
    let dir = repo();
    let mut src = String::from(
        "use redis::Commands;\nfn release_lock(con: &mut redis::Connection, lock_key: &str) -> redis::RedisResult<()> {\n",
    );
    for _ in 0..300 {
        src.push_str("    con.del(lock_key)?;\n");
    }
    src.push_str("    Ok(())\n}\n");
    fs::write(dir.path().join("many.rs"), src).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_lockaudit"))
        .args(["check", "--color", "never", "."])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut first = [0u8; 64];
    let n = out.read(&mut first).unwrap();
    assert!(n > 0);
    drop(out);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
}

/// Thousands of files and a directory tree deeper than PATH_MAX allows
/// to name.
#[test]
fn held_many_files_and_very_deep_directories() {
    let dir = repo();
    let many = dir.path().join("many");
    fs::create_dir(&many).unwrap();
    for i in 0..2_000 {
        fs::write(many.join(format!("f{i}.rs")), "fn main() {}\n").unwrap();
    }
    // 2,500 nested directories (5,000 bytes of path, past PATH_MAX),
    // made relative to each other.
    let c = std::ffi::CString::new(dir.path().as_os_str().as_encoded_bytes()).unwrap();
    let name = std::ffi::CString::new("d").unwrap();
    // SAFETY: plain system calls on descriptors this test owns.
    unsafe {
        let mut fd = libc::open(c.as_ptr(), libc::O_DIRECTORY | libc::O_RDONLY);
        assert!(fd >= 0);
        for _ in 0..2_500 {
            assert_eq!(libc::mkdirat(fd, name.as_ptr(), 0o755), 0);
            let next = libc::openat(fd, name.as_ptr(), libc::O_DIRECTORY | libc::O_RDONLY);
            assert!(next >= 0);
            libc::close(fd);
            fd = next;
        }
        libc::close(fd);
    }
    let r = run(dir.path(), &["check", "--format", "short", "."]);
    assert!(matches!(r.code, Some(1) | Some(2)), "{r:?}");
    assert!(
        r.stdout.contains("witness.rs:4:9: error[unowned-release]"),
        "{r:?}"
    );
}

/// Under attack: a crate with thousands of lock helpers and a
/// thousand files that each call five. Each caller is given the helpers it
/// calls, not the whole set (5,000 helpers copied into 1,000 files would
/// not fit the cap), and finding the calls is one scan per file.
#[test]
fn thousands_of_wrappers_and_callers_stay_linear() {
    let dir = repo();
    let d = dir.path();
    fs::write(
        d.join("Cargo.toml"),
        "[package]\nname = \"many\"\nversion = \"0.1.0\"\n",
    )
    .unwrap();
    fs::create_dir(d.join("src")).unwrap();
    let mut helpers = String::new();
    // Long names: the crate's name search must not build an automaton that
    // grows with names times their length.
    let long = "x".repeat(200);
    for i in 0..5_000 {
        helpers.push_str(&format!(
            "pub fn take{i}{long}(con: &mut redis::Connection, key: &str) -> redis::RedisResult<bool> {{\n    \
             let won: bool = redis::cmd(\"SET\").arg(key).arg(\"me\").arg(\"NX\").arg(\"PX\").arg(30000).query(con)?;\n    Ok(won)\n}}\n"
        ));
    }
    fs::write(d.join("src/locks.rs"), helpers).unwrap();
    let mut lib = String::from("mod locks;\n");
    for i in 0..1_000 {
        lib.push_str(&format!("mod job{i};\n"));
        fs::write(
            d.join(format!("src/job{i}.rs")),
            format!(
                "use crate::locks;\n\npub fn run(con: &mut redis::Connection) {{\n{}}}\n",
                (5 * i..5 * i + 5)
                    .map(|k| format!("    let _ = locks::take{k}{long}(con, \"lock:job{k}\");\n"))
                    .collect::<String>()
            ),
        )
        .unwrap();
    }
    fs::write(d.join("src/lib.rs"), lib).unwrap();
    let r = run(d, &["check", "--format", "short", "."]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    // Each dropped reply at its call, each helper's missing purpose once
    // at its lock call.
    for (check, file) in [
        ("missing-purpose", "src/locks.rs"),
        ("ignored-acquire-result", "src/job"),
    ] {
        let found = r
            .stdout
            .lines()
            .filter(|l| l.starts_with(file) && l.contains(&format!("[{check}]")))
            .count();
        assert_eq!(found, 5_000, "{check}");
    }
    assert_eq!(
        r.stdout
            .lines()
            .filter(|l| l.starts_with("src/") && l.contains(": error["))
            .count(),
        10_000,
        "each finding once: {}",
        r.stdout
            .lines()
            .filter(|l| l.starts_with("src/")
                && !l.contains("[missing-purpose]")
                && !l.contains("[ignored-acquire-result]"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Each finding once, under attack: a trait with 300 implementations that
/// take the lock the same way, called 300 times through `&dyn Slot`. A
/// call reaches at most a bounded number of them, so the call sites the
/// lock calls are told of stay linear in the input.
#[test]
fn a_trait_with_hundreds_of_agreeing_lock_implementations_stays_bounded() {
    let dir = repo();
    let d = dir.path();
    fs::write(
        d.join("Cargo.toml"),
        "[package]\nname = \"slots\"\nversion = \"0.1.0\"\n",
    )
    .unwrap();
    fs::create_dir(d.join("src")).unwrap();
    let mut defs = String::from(
        "pub trait Slot {\n    fn claim(&self, con: &mut redis::Connection, key: &str) -> redis::RedisResult<bool>;\n}\n",
    );
    for i in 0..300 {
        defs.push_str(&format!(
            "pub struct S{i};\nimpl Slot for S{i} {{\n    fn claim(&self, con: &mut redis::Connection, key: &str) -> redis::RedisResult<bool> {{\n        let won: Option<String> = redis::cmd(\"SET\").arg(key).arg(\"{i}\").arg(\"NX\").arg(\"PX\").arg(5000).query(con)?;\n        Ok(won.is_some())\n    }}\n}}\n"
        ));
    }
    fs::write(d.join("src/slots.rs"), defs).unwrap();
    let mut calls = String::from("use crate::slots::Slot;\n");
    for i in 0..300 {
        calls.push_str(&format!(
            "pub fn run{i}(con: &mut redis::Connection, s: &dyn Slot) {{\n    let _ = s.claim(con, \"lock:{i}\");\n}}\n"
        ));
    }
    fs::write(d.join("src/users.rs"), calls).unwrap();
    fs::write(d.join("src/lib.rs"), "mod slots;\nmod users;\n").unwrap();
    let r = run(d, &["check", "--format", "short", "."]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    // Every dropped reply at its call; every lock call's missing purpose
    // once, at the lock call.
    let count = |file: &str, check: &str| {
        r.stdout
            .lines()
            .filter(|l| l.starts_with(file) && l.contains(&format!("[{check}]")))
            .count()
    };
    assert_eq!(count("src/users.rs", "ignored-acquire-result"), 300);
    assert_eq!(count("src/slots.rs", "missing-purpose"), 300);
    assert_eq!(count("src/users.rs", "missing-purpose"), 0);
}

// ---------------------------------------------------------------------
// 12. Ceilings no config can raise; one budget for what is parsed at once.

/// `bytes` of plain, valid code with one lock call: parsed and modelled
/// whole (the pre-filter lets it through), at a cost of hundreds of bytes
/// of memory per byte of source.
fn heavy(bytes: usize) -> String {
    let mut s = String::from(
        "pub fn g(con: &mut redis::Connection, lock_key: &str) {\n    let _ = con.del(lock_key);\n}\npub fn f() {\n",
    );
    let line = "    let a = b.c(d, e, [1, 2, 3]);\n";
    s.push_str(&line.repeat(bytes / line.len()));
    s.push_str("}\n");
    s
}

#[test]
fn the_repository_config_cannot_raise_the_file_size_past_the_ceiling() {
    let dir = repo();
    let d = dir.path();
    // 12 MB that would take gigabytes to model.
    fs::write(d.join("big.rs"), heavy(12 << 20)).unwrap();
    fs::write(d.join("lockaudit.yaml"), "max-file-size: 67108864\n").unwrap();
    let r = run(d, &["check", "--format", "short", "."]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stdout.contains(
            "big.rs:1:1: note[parse-error]: file was not audited: larger than 8388608 bytes"
        ),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("witness.rs:4:9: error[unowned-release]"),
        "{}",
        r.stdout
    );
    assert!(
        r.stderr.contains(
            "warning: lockaudit.yaml:1:16: `max-file-size: 67108864` is above the hard ceiling of 8388608 bytes"
        ),
        "{}",
        r.stderr
    );
    // `--config` is held to the same ceiling.
    let r = run(
        d,
        &[
            "check",
            "--config",
            "lockaudit.yaml",
            "--format",
            "short",
            ".",
        ],
    );
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stdout.contains("big.rs:1:1: note[parse-error]"),
        "{}",
        r.stdout
    );
    // The twin: a limit below the ceiling is the config's, with no warning.
    fs::write(d.join("big.rs"), heavy(64 << 10)).unwrap();
    fs::write(d.join("lockaudit.yaml"), "max-file-size: 65536\n").unwrap();
    let r = run(d, &["check", "--format", "short", "."]);
    assert!(
        r.stdout.contains(
            "big.rs:1:1: note[parse-error]: file was not audited: larger than 65536 bytes"
        ),
        "{}",
        r.stdout
    );
    assert!(!r.stderr.contains("warning"), "{}", r.stderr);
    fs::write(d.join("lockaudit.yaml"), "max-file-size: 8388608\n").unwrap();
    let r = run(d, &["check", "--format", "short", "."]);
    assert!(
        r.stdout.contains("big.rs:2:17: error[unowned-release]"),
        "{}",
        r.stdout
    );
    assert!(!r.stderr.contains("warning"), "{}", r.stderr);
}

/// Eight files of 1.5 MB on eight workers: each alone fits the memory cap,
/// all at once do not. What is parsed at once stays within one budget,
/// whatever `--jobs` says.
#[test]
#[ignore = "parses 12 MB of source in a debug build"]
fn what_is_parsed_at_once_stays_within_one_budget_whatever_the_jobs() {
    let dir = repo();
    let d = dir.path();
    let text = heavy(3 << 19);
    for i in 0..8 {
        fs::write(d.join(format!("big{i}.rs")), &text).unwrap();
    }
    let r = run(d, &["check", "--jobs", "8", "--format", "short", "."]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    for i in 0..8 {
        assert!(
            r.stdout
                .contains(&format!("big{i}.rs:2:17: error[unowned-release]")),
            "big{i}.rs: {}",
            r.stdout
        );
    }
    assert!(r.stdout.contains("9 files audited"), "{}", r.stdout);
}

/// One language server session under the memory cap and the timeout:
/// `input` is what the client writes (then its end). The exit code (`None`:
/// killed by a signal), standard output and standard error.
fn lsp_session(dir: &Path, input: Vec<u8>) -> (Option<i32>, String, String) {
    let messages = tempfile::NamedTempFile::new().unwrap();
    fs::write(messages.path(), input).unwrap();
    let r = run_with(dir, &["lsp"], |c| {
        c.stdin(fs::File::open(messages.path()).unwrap());
    });
    (r.code, r.stdout, r.stderr)
}

/// A framed client message.
fn lsp_message(body: &serde_json::Value) -> Vec<u8> {
    let text = body.to_string();
    format!("Content-Length: {}\r\n\r\n{text}", text.len()).into_bytes()
}

fn lsp_open(dir: &Path, name: &str, text: &str) -> serde_json::Value {
    serde_json::json!({ "jsonrpc": "2.0", "method": "textDocument/didOpen", "params": { "textDocument": {
        "uri": format!("file://{}/{name}", dir.display()), "languageId": "rust", "version": 1, "text": text } } })
}

fn lsp_start() -> Vec<u8> {
    let mut input = lsp_message(
        &serde_json::json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": { "capabilities": {} } }),
    );
    input.extend(lsp_message(
        &serde_json::json!({ "jsonrpc": "2.0", "method": "initialized", "params": {} }),
    ));
    input
}

fn lsp_stop() -> Vec<u8> {
    let mut input = lsp_message(
        &serde_json::json!({ "jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": null }),
    );
    input.extend(lsp_message(
        &serde_json::json!({ "jsonrpc": "2.0", "method": "exit", "params": null }),
    ));
    input
}

/// The diagnostics published for `name`, as JSON text.
fn published<'a>(out: &'a str, name: &str) -> Vec<&'a str> {
    out.split("Content-Length")
        .filter(|m| m.contains("publishDiagnostics") && m.contains(&format!("/{name}\"")))
        .collect()
}

#[test]
fn the_language_server_bounds_messages_and_documents() {
    let dir = repo();
    let d = dir.path();
    let mut input = lsp_start();
    // A message over the limit (a 70 MB document): read past, never kept.
    input.extend(lsp_message(&lsp_open(d, "huge.rs", &heavy(70 << 20))));
    // A document under the message limit and over the file size ceiling:
    // a note, never parsed.
    input.extend(lsp_message(&lsp_open(d, "big.rs", &heavy(12 << 20))));
    // The twin: a document of ordinary size is served as before.
    input.extend(lsp_message(&lsp_open(d, "witness.rs", WITNESS)));
    input.extend(lsp_stop());
    let (code, out, err) = lsp_session(d, input);
    assert_eq!(code, Some(0), "{err}");
    assert!(published(&out, "huge.rs").is_empty(), "{err}");
    assert!(
        out.contains("a message of ") && out.contains("larger than the 67108864-byte limit"),
        "{err}"
    );
    let big = published(&out, "big.rs");
    assert!(
        big.iter().any(|m| m.contains("parse-error")
            && m.contains("file was not audited: larger than 8388608 bytes")),
        "{big:?}"
    );
    assert!(
        published(&out, "witness.rs")
            .iter()
            .any(|m| m.contains("unowned-release")),
        "{out}"
    );
    // A length far beyond memory, then the end of the input: nothing is
    // allocated for it, and the server ends cleanly.
    let mut input = lsp_start();
    input.extend(b"Content-Length: 3000000000\r\n\r\n{}");
    let (code, _out, err) = lsp_session(d, input);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("a message of 3000000000 bytes is larger than the 67108864-byte limit"),
        "{err}"
    );
    // A header lockaudit cannot follow stops the server with a message.
    let mut input = lsp_start();
    input.extend(b"Content-Length: many\r\n\r\n{}");
    let (code, _out, err) = lsp_session(d, input);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("Content-Length that is not a number"), "{err}");
}

// ---------------------------------------------------------------------
// 13. Output linear in the input, on lines megabytes long.

/// One line of 2.4 MB, wide characters first (a comment of `é😀\t`), then
/// `calls` findings: the line, the number of the first finding's column in
/// characters and in UTF-16 units.
fn long_wide_line(calls: usize) -> (String, usize, usize) {
    let mut line = String::from(
        "pub fn f(con: &mut redis::Connection, lock_key: &str) -> redis::RedisResult<()> { /* ",
    );
    while line.len() < 2_400_000 {
        line.push_str("é😀\t");
    }
    line.push_str(" */ ");
    let chars = line.chars().count();
    let units: usize = line.chars().map(char::len_utf16).sum();
    for _ in 0..calls {
        line.push_str("con.del(lock_key)?; ");
    }
    line.push_str("Ok(()) }");
    // The finding stands at `del`.
    (line, chars + 5, units + 4)
}

#[test]
fn findings_on_a_megabyte_line_print_in_linear_time() {
    let dir = repo();
    let (line, column, _) = long_wide_line(2_000);
    fs::write(dir.path().join("long.rs"), format!("{line}\n")).unwrap();
    let r = run(dir.path(), &["check", "--color", "never", "."]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert_eq!(r.stdout.matches("error[unowned-release]").count(), 2_001);
    assert!(
        r.stdout.contains(&format!("--> long.rs:1:{column}\n")),
        "{}",
        &r.stdout[..2000]
    );
    assert!(r
        .stdout
        .contains(&format!("--> long.rs:1:{}\n", column + 20 * 1_999)));
    // Each shown line is cut around its span, with an ellipsis where it
    // was cut (the line's end shows on the last ones).
    let shown: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with("1 | ")).collect();
    assert_eq!(shown.len(), 2_000);
    assert!(
        shown.iter().all(|l| l.chars().count() <= 100
            && l.starts_with("1 | ...")
            && l.contains("del(lock_key)")),
        "{:?}",
        &shown[..3]
    );
    assert!(shown[0].ends_with("...") && shown[1_999].ends_with("Ok(()) }"));
    assert!(
        r.raw_stdout.len() < 4 << 20,
        "{} bytes of human output",
        r.raw_stdout.len()
    );
}

#[test]
fn the_language_server_converts_positions_on_a_megabyte_line_in_linear_time() {
    let dir = repo();
    let d = dir.path();
    let (line, _, units) = long_wide_line(2_000);
    let mut input = lsp_start();
    input.extend(lsp_message(&lsp_open(d, "long.rs", &format!("{line}\n"))));
    input.extend(lsp_stop());
    let (code, out, err) = lsp_session(d, input);
    assert_eq!(code, Some(0), "{err}");
    let found = published(&out, "long.rs");
    assert_eq!(found.len(), 1, "{err}");
    let body = &found[0][found[0].find('{').unwrap()..];
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    let diagnostics = v["params"]["diagnostics"].as_array().unwrap();
    let starts: Vec<u64> = diagnostics
        .iter()
        .filter(|d| d["code"] == "unowned-release")
        .map(|d| d["range"]["start"]["character"].as_u64().unwrap())
        .collect();
    assert_eq!(starts.len(), 2_000);
    assert!(starts.contains(&(units as u64)), "{:?}", &starts[..3]);
    assert!(starts.contains(&((units + 20 * 1_999) as u64)));
}

/// A config with tens of thousands of wrong entries: each problem shown is
/// located in the file, so past the first hundred they are only counted.
#[test]
fn a_config_with_thousands_of_problems_is_reported_in_linear_time() {
    let dir = repo();
    let d = dir.path();
    let mut checks = String::from("checks:\n");
    let mut keys = String::new();
    for i in 0..20_000 {
        checks.push_str(&format!("  no-such-check-{i}: off\n"));
        keys.push_str(&format!("no-such-key-{i}: 1\n"));
    }
    for (text, first) in [
        (
            checks,
            "lockaudit.yaml:2:3: unknown check id `no-such-check-0`",
        ),
        (keys, "lockaudit.yaml:1:1: unknown key `no-such-key-0`"),
    ] {
        fs::write(d.join("lockaudit.yaml"), text).unwrap();
        let r = run(d, &["check", "."]);
        assert_eq!(r.code, Some(2), "{}", r.stderr);
        assert!(
            r.stderr
                .contains("config lockaudit.yaml is invalid (20000 problems, the first 100 shown)"),
            "{}",
            &r.stderr[..r.stderr.len().min(2000)]
        );
        let (place, message) = first.split_once(": ").unwrap();
        assert!(
            common::has_problem(&r.stderr, place, message),
            "{}",
            &r.stderr[..2000]
        );
        assert!(r.stderr.len() < 200 << 10, "{} bytes", r.stderr.len());
    }
    // The twin: a config with a few problems shows them all.
    fs::write(d.join("lockaudit.yaml"), "checks:\n  no-such-check: off\n").unwrap();
    let r = run(d, &["check", "."]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("config lockaudit.yaml is invalid (1 problem)"),
        "{}",
        r.stderr
    );
}

// ---------------------------------------------------------------------
// 14. Deep trees cost one lookup per directory.

/// 1,900 nested directories, a file in each: every directory's canonical
/// path, config and crate root is asked of the file system once, not once
/// per file below it (which made such a tree take minutes).
#[test]
fn nested_directories_cost_one_lookup_each() {
    let dir = repo();
    let d = dir.path();
    fs::write(
        d.join("Cargo.toml"),
        "[package]\nname = \"deep\"\nversion = \"0.1.0\"\n",
    )
    .unwrap();
    let mut at = d.to_path_buf();
    for _ in 0..1_900 {
        at.push("d");
        fs::create_dir(&at).unwrap();
        fs::write(at.join("f.rs"), "pub fn f() {}\n").unwrap();
    }
    // The twin: the deepest file is audited as any other.
    fs::write(at.join("lock.rs"), WITNESS).unwrap();
    let r = run(d, &["check", "--format", "short", "."]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(r.stdout.contains("1902 files audited"), "{}", r.stdout);
    let deepest = format!("{}lock.rs:4:9: error[unowned-release]", "d/".repeat(1_900));
    assert!(
        r.stdout.contains(&deepest),
        "{}",
        &r.stdout[r.stdout.len().saturating_sub(500)..]
    );
    assert!(r.stdout.contains("witness.rs:4:9: error[unowned-release]"));
    // A config with excludes matches each path as written and resolved:
    // resolved once per directory too.
    fs::write(d.join("lockaudit.yaml"), "exclude: [\"vendor/**\"]\n").unwrap();
    let r = run(d, &["check", "--format", "short", "."]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(r.stdout.contains("1902 files audited"), "{}", r.stdout);
    assert!(r.stdout.contains(&deepest));
}

/// Code rustc compiles is audited even when the walk would not find it: a
/// file `include!` names (a `.inc` is not walked), `mod b;` and `#[path]`
/// inside inline modules, in a `lib.rs` and in a non-`mod.rs` file (here
/// hidden from the walk by `.ignore`). A candidate that does not exist is
/// nothing.
#[test]
fn included_files_and_modules_inside_inline_modules_are_audited() {
    let dir = repo();
    let d = dir.path();
    fs::remove_file(d.join("witness.rs")).unwrap();
    fs::create_dir_all(d.join("src/outer/inner")).unwrap();
    fs::create_dir_all(d.join("src/plain/a")).unwrap();
    fs::write(
        d.join("src/lib.rs"),
        "mod outer {\n    pub mod inner {\n        mod deep;\n    }\n    #[path = \"odd.inc\"]\n    mod odd;\n    mod missing;\n}\ninclude!(\"locks.inc\");\nmod plain;\n",
    )
    .unwrap();
    fs::write(d.join("src/plain.rs"), "mod a {\n    mod b;\n}\n").unwrap();
    let reached = [
        "src/outer/inner/deep.rs",
        "src/outer/odd.inc",
        "src/locks.inc",
        "src/plain/a/b.rs",
    ];
    for f in reached {
        fs::write(d.join(f), WITNESS).unwrap();
    }
    fs::write(d.join("src/.ignore"), "outer/\nplain/\n").unwrap();
    let r = run(d, &["check", "--format", "short", "."]);
    assert_eq!(r.code, Some(1), "{r:?}");
    for f in reached {
        assert!(
            r.stdout
                .contains(&format!("{f}:4:9: error[unowned-release]")),
            "{f}: {r:?}"
        );
    }
    assert!(r.stdout.contains("6 files audited"), "{r:?}");
    assert!(!r.stderr.contains("inside a macro"), "{r:?}");
    // A module a macro declares cannot be followed: a note says so.
    fs::write(
        d.join("src/gen.rs"),
        "macro_rules! modules { ($($name:ident),*) => { $(mod $name;)* }; }\nmodules!(alpha, beta);\n",
    )
    .unwrap();
    let r = run(d, &["check", "--format", "short", "."]);
    assert!(
        r.stderr.contains(
            "note: 1 file declares modules inside a macro (`mod $name;`), which lockaudit cannot follow: src/gen.rs"
        ),
        "{r:?}"
    );
}

/// Thousands of configs cost one set of packs: configs that name the same
/// rule packs (here none) share them and their pre-filter. Each used to
/// cost about 0.7 MB, so 3,000 of them passed the memory cap.
#[test]
fn thousands_of_configs_share_their_packs() {
    let dir = repo();
    let d = dir.path();
    for i in 0..3_000 {
        let sub = d.join(format!("svc{i}"));
        fs::create_dir(&sub).unwrap();
        fs::write(
            sub.join("lockaudit.yaml"),
            "checks:\n  missing-purpose: warning\n",
        )
        .unwrap();
        fs::write(sub.join("lib.rs"), "pub fn f() {}\n").unwrap();
    }
    let r = run(d, &["check", "."]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stdout.contains("3001 files audited"), "{}", r.stdout);
    // A config that names its own pack still gets it.
    fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/packs/custom/acme-locks.yaml"),
        d.join("svc7/acme-locks.yaml"),
    )
    .unwrap();
    fs::write(d.join("svc7/lockaudit.yaml"), "rules: [acme-locks.yaml]\n").unwrap();
    fs::write(
        d.join("svc7/lib.rs"),
        "use acme_locks::DistLock;\npub fn f(locks: &DistLock) {\n    let _lease = locks.acquire(\"lock:report\", 30);\n}\n",
    )
    .unwrap();
    let r = run(d, &["check", "--format", "short", "."]);
    assert!(r.stdout.contains("svc7/lib.rs:3:"), "{}", r.stdout);
    assert!(!r.stdout.contains("svc8/"), "{}", r.stdout);
}

/// A `mod` chain `depth` directories deep under `src/m/`, hidden from the
/// walk by `.ignore`: each `mod.rs` declares the next, the last holds the
/// witness; with `config`, each directory has that `lockaudit.yaml`.
fn hidden_mod_chain(d: &Path, depth: usize, config: Option<&str>) {
    fs::remove_file(d.join("witness.rs")).unwrap();
    fs::create_dir_all(d.join("src")).unwrap();
    fs::write(d.join("src/lib.rs"), "mod m;\n").unwrap();
    fs::write(d.join(".ignore"), "src/m/\n").unwrap();
    let mut cur = d.join("src/m");
    for i in 0..depth {
        fs::create_dir_all(&cur).unwrap();
        let text = if i + 1 < depth {
            "mod m;\npub fn f() {}\n"
        } else {
            WITNESS
        };
        fs::write(cur.join("mod.rs"), text).unwrap();
        if let Some(c) = config {
            fs::write(cur.join("lockaudit.yaml"), c).unwrap();
        }
        cur = cur.join("m");
    }
}

/// A `mod` chain 1,800 directories deep, hidden from the walk: each file it
/// reaches costs a few system calls, not a walk of its whole path per
/// component (which was cubic: 7 s at 600 levels in a release build).
#[test]
fn a_deep_mod_chain_costs_a_few_lookups_per_file() {
    let dir = repo();
    let d = dir.path();
    hidden_mod_chain(d, 1_800, None);
    let r = run(d, &["check", "--format", "short", "."]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stdout.contains("1801 files audited"), "{}", r.stdout);
    assert!(
        r.stdout.contains("/mod.rs:4:9: error[unowned-release]"),
        "{}",
        r.stdout
    );
}

/// The same hidden `mod` chain, 1,300 directories deep, with a config in
/// every directory: each config is checked against its repository from
/// the directory memos, not by resolving its whole path several times
/// (9.4 s at 600 levels in a release build before; 1,300 levels ran
/// past the 60 s guard in a debug build).
#[test]
fn configs_down_a_deep_mod_chain_cost_a_few_lookups_each() {
    let dir = repo();
    let d = dir.path();
    hidden_mod_chain(d, 1_300, Some("checks:\n  unowned-release: warning\n"));
    let r = run(d, &["check", "--format", "short", "."]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stdout.contains("1301 files audited"), "{}", r.stdout);
    // The deepest config applies to the deepest file.
    assert!(
        r.stdout.contains("/mod.rs:4:9: warning[unowned-release]"),
        "{}",
        r.stdout
    );
}

/// A `Cargo.toml` is read for a lockaudit table, so it is hostile input
/// too: nested 200,000 deep, it is no config and aborts nothing; a
/// literal `include!` that leaves the repository is not read.
#[test]
fn hostile_manifests_and_includes_stay_harmless() {
    let dir = repo();
    let d = dir.path();
    for deep in [
        format!("x = {}{}", "[".repeat(200_000), "]".repeat(200_000)),
        format!("x = {}1{}", "{a=".repeat(100_000), "}".repeat(100_000)),
    ] {
        fs::write(
            d.join("Cargo.toml"),
            format!("# lockaudit\n[package.metadata.lockaudit]\n{deep}\n"),
        )
        .unwrap();
        let r = run(d, &["check", "--format", "short", "."]);
        assert_eq!(r.code, Some(1), "{r:?}");
        assert!(r.stdout.contains("witness.rs:4:9"), "{r:?}");
    }
    fs::remove_file(d.join("Cargo.toml")).unwrap();
    fs::write(
        d.join("inc.rs"),
        "include!(\"/etc/passwd\");\ninclude!(\"../../../../../../../../etc/hostname\");\n",
    )
    .unwrap();
    let r = run(d, &["check", "--format", "short", "."]);
    assert!(
        !r.stdout.contains("passwd") && !r.stdout.contains("hostname"),
        "{r:?}"
    );
    assert!(r.stdout.contains("2 files audited"), "{r:?}");
}

/// A user pack may give any position: the largest integer for an
/// argument, a `nth` call, a script's `ARGV` or a statement's placeholder
/// finds nothing there, and the run goes on.
#[test]
fn pack_positions_as_large_as_an_integer_find_nothing() {
    let dir = repo();
    let max = u64::MAX;
    fs::write(
        dir.path().join("own.yaml"),
        format!(
            "backend: own\ndescription: d\nconsensus: false\ntrigger-words: [leases]\napis:\n  - id: own.take\n    role: acquire\n    match: {{ method: take_lease, crates: [own] }}\n    key: [{{ arg: {max} }}, {{ method: arg, nth: {max}, arg: {max} }}, {{ root-arg: {max} }}, {{ call: k, arg: {max} }}, {{ script-arg: {max} }}, {{ param: {max} }}]\n  - id: own.sql\n    role: try-acquire\n    match: {{ text: ['(?i)insert into leases'], evidence: none }}\n    key: [{{ param: {max} }}]\n"
        ),
    )
    .unwrap();
    fs::write(dir.path().join("lockaudit.yaml"), "rules: [own.yaml]\n").unwrap();
    fs::write(
        dir.path().join("main.rs"),
        "use own::Client;\nfn f(c: &Client, q: &sqlx::PgPool) {\n    c.take_lease(\"jobs\", 1).arg(2);\n    let _ = sqlx::query_as!(Row, \"INSERT INTO leases VALUES ($1)\", 7).execute(q);\n    sqlx::query(\"INSERT INTO leases VALUES (?)\").bind(7).execute(q);\n    q.execute(\"INSERT INTO leases VALUES ($1)\", &[&7]);\n}\n",
    )
    .unwrap();
    let r = run(dir.path(), &["check", "--format", "json", "."]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stdout.contains("missing-purpose"), "{r:?}");
}
