//! Monorepos and CI: per-file config discovery, paths from the repository
//! root whatever the working directory, GitHub's annotation limits and step
//! summary, `--new-since` in shallow clones and across renames, baselines
//! that are pruned and judged only on the files audited, and vendored or
//! generated files skipped by default.

mod common;

use std::fs;
use std::path::Path;

use serde_json::Value;

use common::{lockaudit, lockaudit_env};

use common::git;

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}):\n{text}"))
}

/// A function taking one unannotated redis lock (a `missing-purpose` error
/// on line `2 + 4 * i` when it is the `i`-th in its file).
fn job(name: &str) -> String {
    format!(
        "pub fn {name}(con: &mut redis::Connection, lock_key: &str) -> redis::RedisResult<bool> {{\n    let reply: Option<String> = redis::cmd(\"SET\").arg(lock_key).arg(\"me\").arg(\"NX\").arg(\"PX\").arg(5_000).query(con)?;\n    Ok(reply.is_some())\n}}\n"
    )
}

/// Each finding of a JSON report as (path, severity).
fn path_severities(report: &Value) -> Vec<(String, String)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["severity"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Makes `root` a repository whose one commit, `base`, holds its files.
fn commit_base(root: &Path) {
    git(root, &["init", "-q"]);
    git(root, &["add", "."]);
    git(root, &["commit", "-q", "-m", "base"]);
}

fn jobs(n: usize) -> String {
    (0..n).map(|i| job(&format!("job_{i}"))).collect()
}

#[test]
fn each_file_is_governed_by_its_nearest_config_whatever_the_order_of_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    git(root, &["init", "-q"]);
    write(
        &root.join("lockaudit.yaml"),
        "checks:\n  missing-purpose: warning\n",
    );
    write(
        &root.join("billing/lockaudit.yaml"),
        "checks:\n  missing-purpose: off\n",
    );
    write(&root.join("billing/src/lib.rs"), &job("billing"));
    write(&root.join("search/src/lib.rs"), &job("search"));
    let order_a = lockaudit(
        root,
        &[
            "check",
            "--format",
            "json",
            "billing/src/lib.rs",
            "search/src/lib.rs",
        ],
    );
    let order_b = lockaudit(
        root,
        &[
            "check",
            "--format",
            "json",
            "search/src/lib.rs",
            "billing/src/lib.rs",
        ],
    );
    assert_eq!(order_a.code, 1, "{order_a:?}");
    assert_eq!(order_a.stdout, order_b.stdout);
    let report = json(&order_a.stdout);
    let findings = path_severities(&report);
    // billing/ turns the check off; search/ gets the root config's warning.
    assert_eq!(
        findings,
        [("search/src/lib.rs".to_string(), "warning".to_string())]
    );

    // Walking the whole tree gives the same, as does starting in billing/.
    let walked = lockaudit(root, &["check", "--format", "json", "."]);
    assert_eq!(json(&walked.stdout)["findings"], report["findings"]);

    // `--config` applies one file to everything.
    let one = lockaudit(
        root,
        &[
            "check",
            "--format",
            "json",
            "--config",
            "billing/lockaudit.yaml",
            "search/src/lib.rs",
            "billing/src/lib.rs",
        ],
    );
    assert_eq!(one.code, 0, "{one:?}");
    assert_eq!(json(&one.stdout)["findings"], Value::Array(vec![]));
}

#[test]
fn a_nested_config_excludes_only_below_itself() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    git(root, &["init", "-q"]);
    write(
        &root.join("svc/lockaudit.yaml"),
        "exclude:\n  - \"gen/**\"\n",
    );
    write(&root.join("svc/gen/a.rs"), &job("generated_a"));
    write(&root.join("gen/b.rs"), &job("top_level_b"));
    let run = lockaudit(root, &["check", "--format", "short", "."]);
    assert!(run.stdout.contains("gen/b.rs"), "{}", run.stdout);
    assert!(!run.stdout.contains("svc/gen/a.rs"), "{}", run.stdout);
}

#[test]
fn machine_paths_are_from_the_repository_root_when_run_in_a_subdirectory() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    git(root, &["init", "-q"]);
    write(&root.join("services/api/src/lib.rs"), &job("api"));
    let api = root.join("services/api");

    let github = lockaudit(&api, &["check", "--format", "github"]);
    assert!(
        github
            .stdout
            .starts_with("::error file=services/api/src/lib.rs,line=2,"),
        "{}",
        github.stdout
    );
    let sarif = json(&lockaudit(&api, &["check", "--format", "sarif"]).stdout);
    let location = &sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"];
    assert_eq!(
        location["artifactLocation"]["uri"],
        "services/api/src/lib.rs"
    );
    assert_eq!(location["artifactLocation"]["uriBaseId"], "%SRCROOT%");
    // %SRCROOT% is the repository root, not the directory lockaudit ran in.
    let srcroot = sarif["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"]
        .as_str()
        .unwrap()
        .to_string();
    let root_abs = fs::canonicalize(root).unwrap();
    assert!(
        srcroot.ends_with(&format!(
            "{}/",
            root_abs.file_name().unwrap().to_string_lossy()
        )),
        "{srcroot}"
    );
    assert!(!srcroot.contains("services"), "{srcroot}");
    let report = json(&lockaudit(&api, &["check", "--format", "json", "src"]).stdout);
    assert_eq!(report["findings"][0]["path"], "services/api/src/lib.rs");
    // People's formats stay relative to where they stand.
    let short = lockaudit(&api, &["check", "--format", "short"]);
    assert!(
        short.stdout.starts_with("src/lib.rs:2:"),
        "{}",
        short.stdout
    );
    // From a sibling directory, `..` is resolved against the root.
    let web = root.join("services/web");
    fs::create_dir_all(&web).unwrap();
    let github = lockaudit(&web, &["check", "--format", "github", "../api"]);
    assert!(
        github
            .stdout
            .starts_with("::error file=services/api/src/lib.rs,"),
        "{}",
        github.stdout
    );
}

#[test]
fn without_git_the_nearest_config_directory_is_the_root() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(&root.join("lockaudit.yaml"), "");
    write(&root.join("crates/x/src/lib.rs"), &job("x"));
    let run = lockaudit(&root.join("crates/x"), &["check", "--format", "github"]);
    assert!(
        run.stdout.starts_with("::error file=crates/x/src/lib.rs,"),
        "{}",
        run.stdout
    );
}

/// The number of `::error` and `::warning` commands, and the other lines.
fn annotations(stdout: &str) -> (usize, usize, Vec<&str>) {
    let errors = stdout.lines().filter(|l| l.starts_with("::error ")).count();
    let warnings = stdout
        .lines()
        .filter(|l| l.starts_with("::warning "))
        .count();
    let rest = stdout.lines().filter(|l| !l.starts_with("::")).collect();
    (errors, warnings, rest)
}

#[test]
fn github_prints_at_most_ten_annotations_per_level_changed_lines_first() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    git(root, &["init", "-q"]);
    write(&root.join("src/lib.rs"), &jobs(12));
    git(root, &["add", "."]);
    git(root, &["commit", "-q", "-m", "twelve locks"]);
    git(root, &["checkout", "-q", "-b", "feature"]);
    // The pull request adds a thirteenth at the end of the file.
    write(
        &root.join("src/lib.rs"),
        &format!("{}{}", jobs(12), job("added")),
    );
    git(root, &["commit", "-q", "-am", "one more"]);

    let plain = lockaudit(root, &["check", "--format", "github"]);
    assert_eq!(plain.code, 1);
    let (errors, _, rest) = annotations(&plain.stdout);
    assert_eq!(errors, 10, "{}", plain.stdout);
    assert_eq!(rest.len(), 1, "{}", plain.stdout);
    assert!(
        rest[0].contains("3 more findings not annotated"),
        "{}",
        rest[0]
    );
    assert!(
        !plain.stdout.contains("line=50,"),
        "in path order, the added one is cut"
    );

    // With the pull request's base known, its own finding comes first.
    let pr = lockaudit_env(
        root,
        &["check", "--format", "github"],
        &[("GITHUB_BASE_REF", "main")],
    );
    let first = pr.stdout.lines().next().unwrap();
    assert!(
        first.starts_with("::error file=src/lib.rs,line=50,"),
        "{first}"
    );
    assert_eq!(annotations(&pr.stdout).0, 10);
    assert!(
        pr.stdout.contains("changed lines came first"),
        "{}",
        pr.stdout
    );

    // The step summary lists every finding.
    let summary = root.join("summary.md");
    let run = lockaudit_env(
        root,
        &["check", "--format", "github"],
        &[("GITHUB_STEP_SUMMARY", summary.to_str().unwrap())],
    );
    assert_eq!(run.code, 1);
    let md = fs::read_to_string(&summary).unwrap();
    assert!(
        md.contains("| location | severity | check | message |"),
        "{md}"
    );
    assert_eq!(
        md.lines()
            .filter(|l| l.starts_with("| src/lib.rs:"))
            .count(),
        13,
        "{md}"
    );
    assert!(md.contains("13 findings"), "{md}");
}

#[test]
fn new_since_in_a_shallow_clone_says_how_to_fetch_the_history() {
    let tmp = tempfile::tempdir().unwrap();
    let origin = tmp.path().join("origin");
    write(&origin.join("src/lib.rs"), &jobs(1));
    git(&origin, &["init", "-q"]);
    git(&origin, &["add", "."]);
    git(&origin, &["commit", "-q", "-m", "one"]);
    write(&origin.join("src/lib.rs"), &jobs(2));
    git(&origin, &["commit", "-q", "-am", "two"]);
    let url = format!("file://{}", origin.display());
    git(
        tmp.path(),
        &["clone", "-q", "--depth", "1", &url, "shallow"],
    );
    let run = lockaudit(
        &tmp.path().join("shallow"),
        &["check", "--new-since", "HEAD~1"],
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("shallow"), "{}", run.stderr);
    assert!(run.stderr.contains("fetch-depth: 0"), "{}", run.stderr);
    assert!(run.stderr.contains("git fetch --deepen"), "{}", run.stderr);
}

#[test]
fn a_renamed_file_keeps_its_findings_for_new_since() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(&root.join("src/old_name.rs"), &jobs(2));
    commit_base(root);
    git(root, &["mv", "src/old_name.rs", "src/new_name.rs"]);
    let run = lockaudit(root, &["check", "--format", "short", "--new-since", "HEAD"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .contains("2 already present at the base revision"),
        "{}",
        run.stdout
    );
    // A finding the rename brought along with a new one is still new.
    write(
        &root.join("src/new_name.rs"),
        &format!("{}{}", jobs(2), job("added")),
    );
    git(root, &["add", "."]);
    let run = lockaudit(root, &["check", "--format", "short", "--new-since", "HEAD"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(
        run.stdout.lines().filter(|l| l.contains("error[")).count(),
        1
    );
}

/// A function taking a redis lock on `key` with `px` (or none), annotated.
fn lock_fn(name: &str, purpose: &str, key: &str, px: Option<u32>) -> String {
    let px = px
        .map(|n| format!(".arg(\"PX\").arg({n})"))
        .unwrap_or_default();
    format!(
        "pub fn {name}(con: &mut redis::Connection, id: u64) -> redis::RedisResult<bool> {{\n    // lock-purpose: {purpose} — one at a time\n    let reply: Option<String> = redis::cmd(\"SET\").arg(format!(\"{key}\")).arg(\"me\").arg(\"NX\"){px}.query(con)?;\n    Ok(reply.is_some())\n}}\n"
    )
}

/// `inventory --new-since`: a lock moved down a file or carried by a
/// renamed file is unchanged; a new one is added, a deleted file's is
/// removed, and a dropped expiry or a new key is a change of the same lock.
#[test]
fn inventory_new_since_lists_the_locks_a_change_adds_removes_and_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(&root.join("src/lib.rs"), "mod jobs;\nmod old;\nmod kept;\n");
    write(
        &root.join("src/jobs.rs"),
        &[
            lock_fn("settle", "correctness", "invoice:{id}", Some(30_000)),
            lock_fn("report", "efficiency", "report", Some(5_000)),
            lock_fn("rotate", "efficiency", "keys", Some(5_000)),
        ]
        .concat(),
    );
    write(
        &root.join("src/old.rs"),
        &lock_fn("sweep", "efficiency", "sweep", Some(5_000)),
    );
    write(
        &root.join("src/kept.rs"),
        &lock_fn("kept", "efficiency", "kept:{id}", Some(5_000)),
    );
    commit_base(root);
    let run = lockaudit(root, &["inventory", "--new-since", "HEAD"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        "0 locks added, 0 removed, 0 changed, 5 unchanged since HEAD\n"
    );

    write(
        &root.join("src/jobs.rs"),
        &[
            "// Jobs, moved down.\n\n".to_string(),
            lock_fn("refund", "correctness", "refund:{id}", Some(30_000)),
            lock_fn("settle", "correctness", "invoice:{id}", Some(30_000)),
            lock_fn("report", "efficiency", "report", None),
            lock_fn("rotate", "efficiency", "keys:{id}", Some(5_000)),
        ]
        .concat(),
    );
    git(root, &["rm", "-q", "src/old.rs"]);
    git(root, &["mv", "src/kept.rs", "src/moved.rs"]);
    write(&root.join("src/lib.rs"), "mod jobs;\nmod moved;\n");
    git(root, &["add", "."]);
    let git_out = |dir: &Path, args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let status = git_out(root, &["status", "--porcelain"]);
    let staged = git_out(root, &["diff", "--cached"]);
    assert!(
        status.contains("R  src/kept.rs -> src/moved.rs"),
        "{status}"
    );
    let run = lockaudit(
        root,
        &["inventory", "--new-since", "HEAD", "--format", "json"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let v = json(&run.stdout);
    let keys = |list: &Value| -> Vec<String> {
        list.as_array()
            .unwrap()
            .iter()
            .map(|r| r["key"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(keys(&v["added"]), ["refund:{id}"], "{}", run.stdout);
    assert_eq!(v["added"][0]["path"], "src/jobs.rs");
    assert_eq!(v["added"][0]["purpose"], "correctness");
    assert_eq!(keys(&v["removed"]), ["sweep"], "{}", run.stdout);
    assert_eq!(v["removed"][0]["path"], "src/old.rs");
    assert_eq!(v["unchanged"], 2, "{}", run.stdout);
    let changed: Vec<(String, String, Value)> = v["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["before"]["key"].as_str().unwrap().to_string(),
                c["after"]["key"].as_str().unwrap().to_string(),
                c["fields"].clone(),
            )
        })
        .collect();
    assert_eq!(
        changed,
        [
            (
                "report".into(),
                "report".into(),
                serde_json::json!(["expiry"])
            ),
            (
                "keys".into(),
                "keys:{id}".into(),
                serde_json::json!(["key"])
            ),
        ],
        "{}",
        run.stdout
    );
    assert_eq!(v["changed"][0]["before"]["expiry"], "PX 5000");
    assert_eq!(v["changed"][0]["after"]["expiry"], "none");

    let run = lockaudit(
        root,
        &["inventory", "--new-since", "HEAD", "--format", "markdown"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .starts_with("**1 lock added, 1 removed, 2 changed, 2 unchanged since HEAD**\n"),
        "{}",
        run.stdout
    );
    for row in [
        "| added | src/jobs.rs:5 | redis | redis.set-nx | refund&#58;{id} | correctness | PX 30000 |",
        "| changed | src/jobs.rs:15 | redis | redis.set-nx | report | efficiency | PX 5000 → none |",
        "| changed | src/jobs.rs:20 | redis | redis.set-nx | keys → keys&#58;{id} | efficiency |",
        "| removed | src/old.rs:3 (before) | redis | redis.set-nx | sweep |",
    ] {
        assert!(run.stdout.contains(&format!("\n{row}")), "{row}\n{}", run.stdout);
    }
    // The work tree and the index are as they were.
    assert_eq!(git_out(root, &["status", "--porcelain"]), status);
    assert_eq!(git_out(root, &["diff", "--cached"]), staged);
    let run = lockaudit(root, &["inventory", "--new-since", "no-such-ref"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("`no-such-ref` is not a git revision"),
        "{}",
        run.stderr
    );
}

/// A file whose name holds a backslash (a plain character on Unix) is the
/// same file at the base: its findings and locks are not new.
#[cfg(unix)]
#[test]
fn a_name_with_a_backslash_is_the_same_file_at_the_base() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(&root.join("src/odd\\name.rs"), &jobs(1));
    commit_base(root);
    let run = lockaudit(root, &["check", "--format", "short", "--new-since", "HEAD"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .contains("1 already present at the base revision"),
        "{}",
        run.stdout
    );
    // Named on the command line, too.
    let run = lockaudit(
        root,
        &[
            "check",
            "--format",
            "short",
            "--new-since",
            "HEAD",
            "src/odd\\name.rs",
        ],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .contains("1 already present at the base revision"),
        "{}",
        run.stdout
    );
    let run = lockaudit(root, &["inventory", "--new-since", "HEAD"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        "0 locks added, 0 removed, 0 changed, 1 unchanged since HEAD\n"
    );
}

/// Code moved into the audited tree from a place the run does not audit
/// (an excluded directory, a hidden one, `third_party/`) or out of a generated file is
/// judged by its new place: its findings are new, not "already present".
#[test]
fn code_moved_in_from_an_unaudited_place_is_new_for_new_since() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(
        &root.join("lockaudit.yaml"),
        "exclude:\n  - \"vendor/**\"\n",
    );
    write(&root.join("vendor/locks.rs"), &job("vendored"));
    write(&root.join(".cache/locks.rs"), &job("hidden"));
    // Skipped by default, with no exclude naming it.
    write(&root.join("third_party/locks.rs"), &job("third"));
    write(
        &root.join("src/gen.rs"),
        &format!("// @generated by a tool\n{}", job("generated")),
    );
    write(&root.join("src/kept.rs"), &job("kept"));
    git(root, &["init", "-q"]);
    git(root, &["add", "-f", "."]);
    git(root, &["commit", "-q", "-m", "base"]);
    git(root, &["mv", "vendor/locks.rs", "src/vendored.rs"]);
    git(root, &["mv", ".cache/locks.rs", "src/hidden.rs"]);
    git(root, &["mv", "third_party/locks.rs", "src/third.rs"]);
    write(&root.join("src/gen.rs"), &job("generated"));
    git(root, &["mv", "src/kept.rs", "src/moved.rs"]);
    git(root, &["add", "."]);
    let run = lockaudit(
        root,
        &["check", "--format", "short", "--new-since", "HEAD", "src"],
    );
    assert_eq!(run.code, 1, "{run:?}");
    let new: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.contains("error["))
        .map(|l| l.split(':').next().unwrap())
        .collect();
    assert_eq!(
        new,
        [
            "src/gen.rs",
            "src/hidden.rs",
            "src/third.rs",
            "src/vendored.rs"
        ],
        "{}",
        run.stdout
    );
    // A move inside the audited tree still brings nothing new.
    assert!(run.stdout.contains("1 already present"), "{}", run.stdout);
}

fn baseline_entries(path: &Path) -> Vec<(String, String)> {
    let b = json(&fs::read_to_string(path).unwrap());
    b["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap().to_string(),
                e["check"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn update_baseline_drops_fixed_entries_and_never_adds() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    git(root, &["init", "-q"]);
    write(&root.join("src/a.rs"), &jobs(2));
    write(&root.join("src/b.rs"), &jobs(1));
    let run = lockaudit(root, &["check", "--write-baseline", "base.json"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(baseline_entries(&root.join("base.json")).len(), 3);

    // One finding fixed (its function gone), one new.
    write(
        &root.join("src/a.rs"),
        &format!("{}{}", job("job_0"), job("brand_new")),
    );
    let run = lockaudit(root, &["check", "--update-baseline", "base.json"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("dropped 1 entry"), "{}", run.stderr);
    let entries = baseline_entries(&root.join("base.json"));
    assert_eq!(entries.len(), 2, "{entries:?}");
    let run = lockaudit(
        root,
        &["check", "--baseline", "base.json", "--format", "short"],
    );
    assert_eq!(run.code, 1, "the new finding is not baselined: {run:?}");
    assert!(!run.stdout.contains("stale"), "{}", run.stdout);

    // Auditing b.rs alone judges no entry of a.rs: none is dropped.
    write(&root.join("src/a.rs"), "");
    let run = lockaudit(
        root,
        &["check", "--update-baseline", "base.json", "src/b.rs"],
    );
    assert!(run.stderr.contains("dropped 0 entries"), "{}", run.stderr);
    assert_eq!(baseline_entries(&root.join("base.json")).len(), 2);
}

#[test]
fn stale_baseline_entries_are_reported_only_for_audited_files() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    git(root, &["init", "-q"]);
    write(&root.join("src/a.rs"), &jobs(1));
    write(&root.join("src/b.rs"), &jobs(1));
    lockaudit(root, &["check", "--write-baseline", "base.json"]);
    write(&root.join("src/a.rs"), "");
    // a.rs is not audited: its entry is not judged.
    let run = lockaudit(root, &["check", "--baseline", "base.json", "src/b.rs"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!run.stdout.contains("stale"), "{}", run.stdout);
    // Audited, it is stale.
    let run = lockaudit(root, &["check", "--baseline", "base.json", "src"]);
    assert!(
        run.stdout.contains("1 stale baseline entry"),
        "{}",
        run.stdout
    );
}

#[test]
fn vendored_and_generated_files_are_skipped_with_a_note_unless_asked() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    // Mentions generated things, and is no generated file.
    write(
        &root.join("src/lib.rs"),
        &format!("//! Keys are auto-generated by the caller.\n{}", jobs(1)),
    );
    write(&root.join("vendor/dep/src/lib.rs"), &jobs(1));
    write(&root.join("third_party/x.rs"), &jobs(1));
    write(
        &root.join("src/proto.rs"),
        &format!("// This file is @generated by prost-build.\n{}", jobs(1)),
    );
    write(
        &root.join("src/bindings.rs"),
        &format!(
            "/* automatically generated by rust-bindgen 0.73.2 */\n\n{}",
            jobs(1)
        ),
    );
    let run = lockaudit(root, &["check", "--format", "short", "."]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stdout.lines().filter(|l| l.contains("error[")).count(),
        1,
        "{}",
        run.stdout
    );
    assert!(run.stdout.starts_with("src/lib.rs:"), "{}", run.stdout);
    assert!(
        run.stderr
            .contains("skipped 2 vendored directories (third_party/, vendor/)"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("skipped 2 generated files"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("--include-vendored"), "{}", run.stderr);

    let all = lockaudit(
        root,
        &["check", "--format", "short", "--include-vendored", "."],
    );
    assert_eq!(
        all.stdout.lines().filter(|l| l.contains("error[")).count(),
        5,
        "{}",
        all.stdout
    );
    assert_eq!(all.stderr, "");
    // A generated file named on the command line is audited.
    let named = lockaudit(root, &["check", "--format", "short", "src/proto.rs"]);
    assert_eq!(named.code, 1, "{named:?}");
}

/// The README's first command: every config under `fixtures/` is
/// discovered, and none of them stops the audit (the deliberately broken
/// ones are stored under another name).
#[test]
fn the_quick_start_audit_of_the_fixtures_exits_1() {
    let run = lockaudit(
        Path::new(env!("CARGO_MANIFEST_DIR")),
        &["check", "fixtures/", "--format", "short"],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stdout.trim_end().ends_with("suppressed"),
        "{}",
        run.stdout
    );
}

/// A config may live in `Cargo.toml`, as `[workspace.metadata.lockaudit]`
/// or `[package.metadata.lockaudit]`: found as `lockaudit.yaml` is (the
/// nearest wins, and a `lockaudit.yaml` beside the manifest first), named
/// with `--config`, and its problems reported at their place in it.
#[test]
fn a_config_in_cargo_toml_is_found_and_checked_like_lockaudit_yaml() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    git(d, &["init", "-q"]);
    let release = "pub fn free(con: &mut redis::Connection) -> redis::RedisResult<()> {\n    let _: () = redis::Commands::del(con, \"lock:job\")?;\n    Ok(())\n}\n";
    write(
        &d.join("Cargo.toml"),
        "[workspace]\nmembers = [\"a\", \"b\", \"c\"]\n\n[workspace.metadata.lockaudit.checks]\nunowned-release = \"off\"\n",
    );
    for m in ["a", "b", "c"] {
        write(&d.join(m).join("src/lib.rs"), release);
    }
    write(
        &d.join("a/Cargo.toml"),
        "[package]\nname = \"a\"\nversion = \"0.1.0\"\n",
    );
    write(
        &d.join("b/Cargo.toml"),
        "[package]\nname = \"b\"\nversion = \"0.1.0\"\n\n[package.metadata.lockaudit]\nchecks = { unowned-release = \"note\" }\n",
    );
    // A lockaudit.yaml beside the manifest is the config of its directory.
    write(&d.join("c/Cargo.toml"), "[package]\nname = \"c\"\nversion = \"0.1.0\"\n\n[package.metadata.lockaudit.checks]\nunowned-release = \"note\"\n");
    write(
        &d.join("c/lockaudit.yaml"),
        "checks:\n  unowned-release: error\n",
    );
    let r = lockaudit(d, &["check", "--format", "json", "."]);
    assert_eq!(r.code, 1, "{r:?}");
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let mut got = path_severities(&v);
    got.sort();
    assert_eq!(
        got,
        [
            ("b/src/lib.rs".to_string(), "note".to_string()),
            ("c/src/lib.rs".to_string(), "error".to_string())
        ]
    );
    // A manifest with both tables uses its package's; a mistake in the
    // other one is not this config's.
    write(
        &d.join("c/Cargo.toml"),
        "[package]\nname = \"c\"\nversion = \"0.1.0\"\n\n[package.metadata.lockaudit.checks]\nunowned-release = \"note\"\n\n[workspace.metadata.lockaudit]\nexlude = []\n",
    );
    fs::remove_file(d.join("c/lockaudit.yaml")).unwrap();
    let r = lockaudit(d, &["check", "--format", "short", "c"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("note[unowned-release]"), "{r:?}");
    // Named with --config: the workspace's table for every file.
    let r = lockaudit(d, &["check", "--config", "Cargo.toml", "."]);
    assert_eq!(r.code, 0, "{r:?}");
    // A wrong key, at its place in the manifest, with the near name.
    write(
        &d.join("a/Cargo.toml"),
        "[package]\nname = \"a\"\nversion = \"0.1.0\"\n\n[package.metadata.lockaudit]\nexlude = []\n",
    );
    let r = lockaudit(d, &["check", "."]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        common::has_problem(&r.stderr, "a/Cargo.toml:6:1", "unknown field `exlude`"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("did you mean `exclude`?"), "{}", r.stderr);
    // A value: at the value.
    write(
        &d.join("a/Cargo.toml"),
        "[package]\nname = \"a\"\nversion = \"0.1.0\"\n\n[package.metadata.lockaudit]\ndefault-purpose = \"sometimes\"\n",
    );
    let r = lockaudit(d, &["check", "."]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        common::has_problem(
            &r.stderr,
            "a/Cargo.toml:6:19",
            "`sometimes` is not a purpose"
        ),
        "{}",
        r.stderr
    );
}
