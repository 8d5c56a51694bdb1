//! lockaudit on a checkout a stranger controls: every file, file name,
//! symlink, config and rule pack below is hostile. Each test runs the
//! binary under a memory cap and a timeout: a run that writes outside its
//! report, reads outside the repository, prints a forged line, aborts, or
//! takes too much memory or time fails here. Covers #14.

use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Address space a run may use. Generous for a debug build with its
/// worker stacks reserved, and far below what any of the bombs took.
const MEMORY: u64 = 1536 << 20;
const TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug)]
struct Run {
    /// `None`: killed by a signal (an abort, the timeout).
    code: Option<i32>,
    stdout: String,
    stderr: String,
    raw_stdout: Vec<u8>,
    raw_stderr: Vec<u8>,
}

fn run_with(dir: &Path, args: &[&str], setup: impl FnOnce(&mut Command)) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockaudit"));
    cmd.args(args)
        .current_dir(dir)
        .env_remove("NO_COLOR")
        .env_remove("LOCKAUDIT_INTERNAL_PANIC_ON")
        .env("MALLOC_ARENA_MAX", "2")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    setup(&mut cmd);
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between
    // fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: MEMORY,
                rlim_max: MEMORY,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("the lockaudit binary runs");
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let read_out = std::thread::spawn(move || {
        let mut b = Vec::new();
        if let Some(o) = out.as_mut() {
            let _ = o.read_to_end(&mut b);
        }
        b
    });
    let read_err = std::thread::spawn(move || {
        let mut b = Vec::new();
        if let Some(e) = err.as_mut() {
            let _ = e.read_to_end(&mut b);
        }
        b
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("lockaudit {args:?} did not finish in {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let raw_stdout = read_out.join().unwrap();
    let raw_stderr = read_err.join().unwrap();
    Run {
        code: status.code(),
        stdout: String::from_utf8_lossy(&raw_stdout).into_owned(),
        stderr: String::from_utf8_lossy(&raw_stderr).into_owned(),
        raw_stdout,
        raw_stderr,
    }
}

fn run(dir: &Path, args: &[&str]) -> Run {
    run_with(dir, args, |_| {})
}

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
        "use redis::Commands;\nconst S: &str = r\"\n::error file=README.md::FORGED\n##[warning]FORGED\n\";\n\
         fn f(con: &mut redis::Connection) -> redis::RedisResult<()> {\n    let _: bool = con.set_nx(\"lock:a\", 1)?;\n    Ok(())\n}\n",
    )
    .unwrap();
    let r = run(
        dir.path(),
        &["annotate", "--purpose", "efficiency", "ctx.rs"],
    );
    assert!(r.stdout.contains("lock-purpose"), "{r:?}");
    assert_no_command("annotate", &r.raw_stdout, false);
    assert_no_command("annotate", &r.raw_stderr, false);
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

/// Covers #14 item 9: names that are not UTF-8 stay apart.
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
            r.stderr.contains("lockaudit.yaml:2:5: rule pack")
                && r.stderr.contains("resolves outside the"),
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
#[test]
fn the_language_server_is_guarded_too() {
    let dir = repo();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockaudit"));
    cmd.arg("lsp")
        .current_dir(dir.path())
        .env("MALLOC_ARENA_MAX", "2")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between
    // fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: MEMORY,
                rlim_max: MEMORY,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let mut input = String::new();
    let mut send = |body: serde_json::Value| {
        let text = body.to_string();
        input.push_str(&format!("Content-Length: {}\r\n\r\n{text}", text.len()));
    };
    send(
        serde_json::json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": { "capabilities": {} } }),
    );
    send(serde_json::json!({ "jsonrpc": "2.0", "method": "initialized", "params": {} }));
    let root = dir.path().display().to_string();
    for (name, text) in [
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
    ] {
        send(
            serde_json::json!({ "jsonrpc": "2.0", "method": "textDocument/didOpen", "params": { "textDocument": {
            "uri": format!("file://{root}/{name}"), "languageId": "rust", "version": 1, "text": text } } }),
        );
    }
    send(serde_json::json!({ "jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": null }));
    send(serde_json::json!({ "jsonrpc": "2.0", "method": "exit", "params": null }));
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let _ = stdin.write_all(input.as_bytes());
    });
    let mut out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut b = String::new();
        let _ = out.read_to_string(&mut b);
        b
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("lockaudit lsp did not finish in {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    writer.join().unwrap();
    let out = reader.join().unwrap();
    assert_eq!(status.code(), Some(0), "{status:?}\n{out}");
    let diagnostics: Vec<&str> = out
        .split("Content-Length")
        .filter(|m| m.contains("publishDiagnostics"))
        .collect();
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

fn git(dir: &Path, args: &[&str]) {
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
        r.stderr
            .contains("lockaudit.yaml:1:16: `0` is not a file size"),
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
    assert!(
        r.stderr.contains(expect),
        "expected {expect:?} in {}",
        r.stderr
    );
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
         #[path = \"/etc/passwd\"]\nmod passwd;\n#[path = \"../../../../../../../../etc/hostname\"]\nmod host;\n",
    )
    .unwrap();
    for f in [
        "src/target/mod.rs",
        "src/hidden.rs",
        "src/ignored.rs",
        "src/.impl/x.rs",
        "src/x.inc",
    ] {
        fs::write(d.join(f), WITNESS).unwrap();
    }
    fs::write(d.join("src/.ignore"), "hidden.rs\n").unwrap();
    fs::write(d.join(".gitignore"), "src/ignored.rs\n").unwrap();
    let r = run(d, &["check", "--format", "short", "."]);
    assert_eq!(r.code, Some(1), "{r:?}");
    for f in [
        "src/target/mod.rs",
        "src/hidden.rs",
        "src/ignored.rs",
        "src/.impl/x.rs",
        "src/x.inc",
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
    assert!(r.stdout.contains("6 files audited"), "{r:?}");
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

/// Covers #14 item 9: a file named several ways is audited once.
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
fn run_closed(dir: &Path, args: &[&str], close_stdout: bool) -> (Option<i32>, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockaudit"));
    cmd.args(args).current_dir(dir).stdin(Stdio::null());
    if close_stdout {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    } else {
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    }
    let mut child = cmd.spawn().unwrap();
    let mut kept = String::new();
    if close_stdout {
        drop(child.stdout.take());
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

/// Covers #13 under attack: a crate with thousands of lock helpers and a
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
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockaudit"));
    cmd.arg("lsp")
        .current_dir(dir)
        .env("MALLOC_ARENA_MAX", "2")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between
    // fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: MEMORY,
                rlim_max: MEMORY,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let _ = stdin.write_all(&input);
    });
    let mut out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = out.read_to_end(&mut b);
        b
    });
    let mut err = child.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = err.read_to_end(&mut b);
        b
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("lockaudit lsp did not finish in {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    writer.join().unwrap();
    let out = String::from_utf8_lossy(&reader.join().unwrap()).into_owned();
    let err = String::from_utf8_lossy(&err_reader.join().unwrap()).into_owned();
    (status.code(), out, err)
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
        assert!(r.stderr.contains(first), "{}", &r.stderr[..2000]);
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
