//! End to end: the built `lockaudit` binary on the small projects under
//! `fixtures/projects/` (and on temporary copies of them): exit codes,
//! every output format (insta snapshots in `tests/snapshots/`), SARIF
//! against the bundled SARIF 2.1.0 schema, baselines, `--new-since`,
//! suppressions in machine output, `--output`, `--jobs` and `init`.
//!
//! Snapshots are written with `INSTA_UPDATE=always cargo test --test cli`
//! and reviewed by reading the `.snap` files; CI never writes them.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::LazyLock;

use serde_json::Value;

/// The outcome of one run of the binary.
#[derive(Debug)]
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `lockaudit ARGS` in `dir`, with no colour or width settings from
/// the environment leaking in.
fn lockaudit(dir: &Path, args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_lockaudit"))
        .args(args)
        .current_dir(dir)
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("COLUMNS")
        .output()
        .expect("the lockaudit binary runs");
    Run {
        code: out.status.code().expect("lockaudit exits with a code"),
        stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
    }
}

fn project(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/projects")
        .join(name)
}

/// A fresh copy of a fixture project in a temporary directory.
fn copy_project(name: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&project(name), tmp.path());
    tmp
}

fn copy_dir(from: &Path, to: &Path) {
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

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}):\n{text}"))
}

const FORMATS: [&str; 6] = ["human", "short", "table", "json", "sarif", "github"];

// ---- exit codes ---------------------------------------------------------

#[test]
fn unannotated_set_nx_px_exits_1_with_a_diagnostic_on_the_call() {
    let run = lockaudit(&project("unannotated"), &["--color", "never"]);
    assert_eq!(run.code, 1, "{run:?}");
    // The diagnostic names the check, the place, and underlines the call.
    assert!(run.stdout.contains("missing-purpose"), "{}", run.stdout);
    assert!(run.stdout.contains("[src/lib.rs:2:33]"), "{}", run.stdout);
    assert!(
        run.stdout.contains("`SET … NX PX` takes a redis lock here"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("help: "), "{}", run.stdout);
    insta::assert_snapshot!("unannotated_human", run.stdout);
}

#[test]
fn annotated_set_nx_px_exits_0() {
    let run = lockaudit(&project("annotated"), &["--color", "never"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "no findings in 1 file\n");
}

#[test]
fn in_process_mutexes_exit_0() {
    let run = lockaudit(&project("in-process"), &["check", "."]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "no findings in 1 file\n");
}

#[test]
fn broken_rule_pack_exits_2_naming_file_line_and_column() {
    let run = lockaudit(&project("bad-pack"), &[]);
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr
            .contains("tools/acme-locks.yaml:8:11: apis[0].role"),
        "{}",
        run.stderr
    );
    insta::assert_snapshot!("bad_pack_stderr", run.stderr);
}

#[test]
fn bad_config_exits_2_naming_file_line_and_column() {
    let run = lockaudit(&project("bad-config"), &[]);
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(run.stdout, "");
    for place in [
        "lockaudit.yaml:3:20",
        "lockaudit.yaml:4:24",
        "lockaudit.yaml:7:18",
    ] {
        assert!(run.stderr.contains(place), "{place} in:\n{}", run.stderr);
    }
    insta::assert_snapshot!("bad_config_stderr", run.stderr);
}

#[test]
fn unknown_config_key_exits_2_naming_file_line_and_column() {
    let tmp = copy_project("annotated");
    fs::write(
        tmp.path().join("lockaudit.yaml"),
        "default-purpose: sometimes\nfail-fast: true\n",
    )
    .unwrap();
    let run = lockaudit(tmp.path(), &[]);
    assert_eq!(run.code, 2, "{run:?}");
    // The unknown key and the bad value are reported together.
    assert!(
        run.stderr
            .contains("lockaudit.yaml:2:1: unknown key `fail-fast`"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("lockaudit.yaml:1:18: `sometimes` is not a purpose"),
        "{}",
        run.stderr
    );
}

#[test]
fn nonexistent_path_exits_2() {
    let run = lockaudit(&project("annotated"), &["check", "src", "no-such-dir"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr
            .contains("no-such-dir: no such file or directory"),
        "{}",
        run.stderr
    );
}

#[test]
fn bad_arguments_exit_2() {
    let dir = project("annotated");
    for args in [
        &["--format", "xml"][..],
        &["--fail-on", "sometimes"],
        &["--config", "missing.yaml"],
        &["--baseline", "missing.json"],
    ] {
        let run = lockaudit(&dir, args);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert_eq!(run.stdout, "", "{args:?}");
    }
}

#[test]
fn fail_on_levels() {
    // One unused suppression: a warning by default, a note with as-note.yaml.
    let dir = project("severities");
    let code = |args: &[&str]| lockaudit(&dir, args).code;
    assert_eq!(code(&[]), 1, "the default is --fail-on warning");
    assert_eq!(code(&["--fail-on", "note"]), 1);
    assert_eq!(code(&["--fail-on", "warning"]), 1);
    assert_eq!(code(&["--fail-on", "error"]), 0);
    assert_eq!(code(&["--fail-on", "never"]), 0);
    let note = ["--config", "as-note.yaml"];
    assert_eq!(code(&note), 0);
    assert_eq!(code(&[&note[..], &["--fail-on", "warning"]].concat()), 0);
    assert_eq!(code(&[&note[..], &["--fail-on", "note"]].concat()), 1);
    assert_eq!(code(&[&note[..], &["--fail-on", "never"]].concat()), 0);

    // Errors fail every level but `never`.
    let mixed = project("mixed");
    for (level, expected) in [("error", 1), ("warning", 1), ("note", 1), ("never", 0)] {
        let run = lockaudit(&mixed, &["--fail-on", level, "--format", "short"]);
        assert_eq!(run.code, expected, "--fail-on {level}");
        // The report itself does not depend on --fail-on.
        assert!(run
            .stdout
            .ends_with("5 findings (5 errors) in 6 files; 3 suppressed\n"));
    }
}

// ---- formats ------------------------------------------------------------

/// The SARIF `%SRCROOT%` is the absolute current directory: replace it.
/// The rules' `help` is each check's whole documentation page, checked
/// field by field in `assert_github_ready`; the snapshot elides it so that
/// editing a check's docs does not churn the SARIF snapshot.
fn normalise_sarif(text: &str) -> String {
    let mut log = json(text);
    let run = &mut log["runs"][0];
    let root = run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
        .as_str()
        .expect("%SRCROOT% has a uri");
    assert!(
        root.starts_with("file:///") && root.ends_with('/'),
        "{root}"
    );
    run["originalUriBaseIds"]["%SRCROOT%"]["uri"] = Value::from("file:///ROOT/");
    for rule in run["tool"]["driver"]["rules"].as_array_mut().unwrap() {
        for key in ["text", "markdown"] {
            assert!(!rule["help"][key].as_str().unwrap().is_empty());
            rule["help"][key] = Value::from("(the check's documentation)");
        }
    }
    let mut out = serde_json::to_string_pretty(&log).unwrap();
    out.push('\n');
    out
}

#[test]
fn snapshots_of_every_format_on_the_mixed_project() {
    let dir = project("mixed");
    for format in FORMATS {
        let run = lockaudit(&dir, &["--format", format, "--color", "never"]);
        assert_eq!(run.code, 1, "{format}: {run:?}");
        assert_eq!(run.stderr, "", "{format}");
        let text = if format == "sarif" {
            normalise_sarif(&run.stdout)
        } else {
            run.stdout
        };
        insta::assert_snapshot!(format!("mixed_{format}"), text);
    }
}

#[test]
fn short_is_one_line_per_finding_then_the_summary() {
    let run = lockaudit(&project("mixed"), &["--format", "short"]);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 6, "{}", run.stdout);
    for l in &lines[..5] {
        let (place, rest) = l.split_once(": ").unwrap();
        let parts: Vec<&str> = place.split(':').collect();
        assert_eq!(parts.len(), 3, "{l}");
        assert!(parts[1].parse::<usize>().is_ok() && parts[2].parse::<usize>().is_ok());
        assert!(rest.starts_with("error["), "{l}");
    }
    let quiet = lockaudit(&project("mixed"), &["--format", "short", "--quiet"]);
    assert_eq!(quiet.stdout.lines().count(), 5);
}

#[test]
fn table_has_a_fixed_width_when_not_a_terminal() {
    let run = lockaudit(&project("mixed"), &["--format", "table"]);
    let (tables, summary) = run.stdout.trim_end().rsplit_once('\n').unwrap();
    assert_eq!(summary, "5 findings (5 errors) in 6 files; 3 suppressed");
    let end = tables.find('┘').expect("two tables") + '┘'.len_utf8();
    let (findings, counts) = tables.split_at(end);
    // The findings table is laid out at 100 columns, every line alike.
    for line in findings.lines() {
        assert_eq!(line.chars().count(), 100, "{line}");
    }
    // One row per finding: each starts with its location.
    let rows = findings.lines().filter(|l| l.starts_with("│ src/")).count();
    assert_eq!(rows, 5, "{findings}");
    // Then counts per check and severity, with a total.
    assert!(counts.contains("│ check "), "{counts}");
    assert!(
        counts
            .lines()
            .any(|l| l.starts_with("│ total ") && l.contains("┆     5 │")),
        "{counts}"
    );
}

#[test]
fn github_annotations_are_one_workflow_command_per_unsuppressed_finding() {
    let run = lockaudit(&project("mixed"), &["--format", "github"]);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{}", run.stdout);
    for l in lines {
        let (props, message) = l
            .strip_prefix("::error ")
            .and_then(|r| r.split_once("::"))
            .unwrap_or_else(|| panic!("not a workflow command: {l}"));
        let keys: Vec<&str> = props
            .split(',')
            .map(|p| p.split_once('=').unwrap().0)
            .collect();
        assert_eq!(
            keys,
            ["file", "line", "col", "endLine", "endColumn", "title"],
            "{l}"
        );
        assert!(props.contains("file=src/"), "{l}");
        assert!(!message.is_empty());
    }
}

#[test]
fn json_has_exactly_the_contract_fields_sorted() {
    let run = lockaudit(&project("mixed"), &["--format", "json"]);
    let report = json(&run.stdout);
    assert_eq!(report["version"], env!("CARGO_PKG_VERSION"));
    let findings = report["findings"].as_array().unwrap();
    let expected: BTreeSet<&str> = [
        "check",
        "severity",
        "path",
        "line",
        "column",
        "end_line",
        "end_column",
        "message",
        "backend",
        "purpose",
        "fingerprint",
        "suppressed",
    ]
    .into();
    let mut keys = Vec::new();
    for f in findings {
        let fields: BTreeSet<&str> = f.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(fields, expected);
        assert!(f["line"].as_u64().unwrap() >= 1 && f["column"].as_u64().unwrap() >= 1);
        keys.push((
            f["path"].as_str().unwrap().to_string(),
            f["line"].as_u64().unwrap(),
            f["column"].as_u64().unwrap(),
            f["check"].as_str().unwrap().to_string(),
        ));
    }
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(
        keys, sorted,
        "findings are sorted by path, line, column, check"
    );
    assert_eq!(report["summary"]["findings"], 5);
    assert_eq!(report["summary"]["suppressed"], 3);
}

// ---- SARIF ----------------------------------------------------------------

/// The OASIS SARIF 2.1.0 schema (draft 2020-12), as shipped in the npm
/// package `@microsoft/sarif-multitool-linux` 5.7.0: the same schema the
/// SARIF Multitool validates with. Formats (`uri`, `date-time`) are checked
/// too.
static SARIF_SCHEMA: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
    let schema = json(include_str!("data/sarif-2.1.0.json"));
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("the SARIF schema compiles")
});

fn schema_errors(log: &Value) -> Vec<String> {
    SARIF_SCHEMA
        .iter_errors(log)
        .map(|e| format!("{}: {e}", e.instance_path))
        .collect()
}

fn assert_valid_sarif(log: &Value) {
    let errors = schema_errors(log);
    assert!(
        errors.is_empty(),
        "SARIF schema errors:\n{}",
        errors.join("\n")
    );
}

#[test]
fn the_schema_check_catches_what_the_multitool_misses() {
    let run = lockaudit(&project("mixed"), &["--format", "sarif"]);
    let mut log = json(&run.stdout);
    assert_valid_sarif(&log);
    log["runs"][0]["results"][0]["level"] = Value::from("critical");
    assert!(!schema_errors(&log).is_empty());
    log["runs"][0]["results"][0]["level"] = Value::from("error");
    log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] =
        Value::from(0);
    assert!(!schema_errors(&log).is_empty());
}

/// Everything the SPEC's output contract and GitHub code scanning ask of a
/// SARIF log, beyond what the schema says.
fn assert_github_ready(log: &Value) {
    assert_valid_sarif(log);
    assert_eq!(log["version"], "2.1.0");
    assert!(log["$schema"].as_str().unwrap().starts_with("https://"));
    let runs = log["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    let driver = &run["tool"]["driver"];
    assert_eq!(driver["name"], "lockaudit");
    assert_eq!(driver["semanticVersion"], env!("CARGO_PKG_VERSION"));
    assert!(driver["informationUri"]
        .as_str()
        .unwrap()
        .starts_with("https://"));

    let rules = driver["rules"].as_array().unwrap();
    let listed = json(&lockaudit(&project("mixed"), &["rules", "--format", "json"]).stdout);
    let ids: Vec<&str> = rules.iter().map(|r| r["id"].as_str().unwrap()).collect();
    let listed_ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, listed_ids, "every check is a rule, in registry order");
    for r in rules {
        let id = r["id"].as_str().unwrap();
        let name = r["name"].as_str().unwrap();
        assert!(
            !name.is_empty() && name != id,
            "{id}: name must differ from id"
        );
        for key in ["shortDescription", "fullDescription"] {
            let text = r[key]["text"].as_str().unwrap();
            assert!(!text.is_empty() && text.len() <= 1024, "{id}.{key}");
        }
        assert!(!r["help"]["text"].as_str().unwrap().is_empty(), "{id}");
        assert!(!r["help"]["markdown"].as_str().unwrap().is_empty(), "{id}");
        let level = r["defaultConfiguration"]["level"].as_str().unwrap();
        assert!(["error", "warning", "note"].contains(&level), "{id}");
        let tags = r["properties"]["tags"].as_array().unwrap();
        assert!(!tags.is_empty() && tags.len() <= 20, "{id}");
        assert!(tags.iter().all(Value::is_string), "{id}");
        let precision = r["properties"]["precision"].as_str().unwrap();
        assert!(
            ["very-high", "high", "medium", "low"].contains(&precision),
            "{id}"
        );
    }

    let root = run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
        .as_str()
        .unwrap();
    assert!(
        root.starts_with("file:///") && root.ends_with('/'),
        "{root}"
    );
    let mut hashes = BTreeSet::new();
    for r in run["results"].as_array().unwrap() {
        let index = r["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[index]["id"], r["ruleId"]);
        assert!(!r["message"]["text"].as_str().unwrap().is_empty());
        let locations = r["locations"].as_array().unwrap();
        assert_eq!(locations.len(), 1);
        let phys = &locations[0]["physicalLocation"];
        let artifact = &phys["artifactLocation"];
        let uri = artifact["uri"].as_str().unwrap();
        if uri.starts_with("file:") {
            assert!(artifact.get("uriBaseId").is_none(), "{uri}");
        } else {
            assert!(!uri.starts_with('/') && !uri.contains('\\'), "{uri}");
            assert_eq!(artifact["uriBaseId"], "%SRCROOT%");
        }
        let region = &phys["region"];
        let n = |k: &str| region[k].as_u64().unwrap_or_else(|| panic!("region.{k}"));
        assert!(n("startLine") >= 1 && n("startColumn") >= 1);
        assert!(n("endLine") >= n("startLine"));
        if n("endLine") == n("startLine") {
            assert!(n("endColumn") > n("startColumn"), "{region}");
        }
        let hash = r["partialFingerprints"]["primaryLocationLineHash"]
            .as_str()
            .unwrap();
        assert!(hashes.insert(hash.to_string()), "duplicate hash {hash}");
    }
}

#[test]
fn sarif_is_schema_valid_and_github_ready() {
    let run = lockaudit(&project("mixed"), &["--format", "sarif"]);
    assert_github_ready(&json(&run.stdout));

    // No results at all.
    let clean = lockaudit(&project("annotated"), &["--format", "sarif"]);
    assert_eq!(clean.code, 0);
    let log = json(&clean.stdout);
    assert_eq!(log["runs"][0]["results"], Value::Array(Vec::new()));
    assert_github_ready(&log);

    // Every fixture of the fixture harness: more checks, secondary locations.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let all = lockaudit(
        root,
        &[
            "check",
            "fixtures",
            "--format",
            "sarif",
            "--exclude",
            "fixtures/projects/**",
        ],
    );
    assert_eq!(all.code, 1, "{}", all.stderr);
    assert_github_ready(&json(&all.stdout));
}

#[test]
fn sarif_uses_absolute_uris_for_files_outside_the_current_directory() {
    let elsewhere = tempfile::tempdir().unwrap();
    let target = project("unannotated");
    let run = lockaudit(
        elsewhere.path(),
        &["check", target.to_str().unwrap(), "--format", "sarif"],
    );
    assert_eq!(run.code, 1, "{run:?}");
    let log = json(&run.stdout);
    assert_github_ready(&log);
    let artifact =
        &log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"];
    assert!(
        artifact["uri"]
            .as_str()
            .unwrap()
            .ends_with("/fixtures/projects/unannotated/src/lib.rs"),
        "{artifact}"
    );
}

// ---- suppressions -------------------------------------------------------

#[test]
fn suppressed_findings_stay_in_json_and_sarif() {
    let dir = project("mixed");
    let report = json(&lockaudit(&dir, &["--format", "json"]).stdout);
    let suppressed: Vec<(String, u64, String)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["suppressed"] == true)
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["line"].as_u64().unwrap(),
                f["check"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        suppressed,
        [
            ("src/gen/client.rs".into(), 5, "missing-purpose".into()),
            ("src/jobs/mod.rs".into(), 16, "lock-without-expiry".into()),
            ("src/jobs/mod.rs".into(), 21, "unowned-release".into()),
        ]
    );

    let log = json(&lockaudit(&dir, &["--format", "sarif"]).stdout);
    let results = log["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 8, "suppressed results are kept");
    let mut justifications = Vec::new();
    for r in results {
        let uri = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            .as_str()
            .unwrap();
        let line = r["locations"][0]["physicalLocation"]["region"]["startLine"]
            .as_u64()
            .unwrap();
        match r.get("suppressions") {
            Some(s) => {
                let s = s.as_array().unwrap();
                assert_eq!(s.len(), 1);
                assert_eq!(s[0]["kind"], "inSource");
                justifications.push((
                    uri.to_string(),
                    line,
                    s[0].get("justification")
                        .map(|j| j.as_str().unwrap().to_string()),
                ));
            }
            None => assert!(!suppressed.iter().any(|(p, l, _)| p == uri && *l == line)),
        }
    }
    assert_eq!(
        justifications,
        [
            (
                "src/gen/client.rs".into(),
                5,
                Some("generated client, audited upstream".into())
            ),
            (
                "src/jobs/mod.rs".into(),
                16,
                Some("the importer sets the TTL in its own script".into())
            ),
            ("src/jobs/mod.rs".into(), 21, None),
        ]
    );

    // The text formats hide suppressed findings, count them, and point out
    // the suppression that gives no reason.
    let human = lockaudit(&dir, &["--color", "never"]).stdout;
    assert!(human
        .contains("note: src/jobs/mod.rs:21:9: `unowned-release` is suppressed without a reason"));
    assert!(!human.contains("importer sets the TTL"));
}

// ---- --jobs and --output --------------------------------------------------

#[test]
fn output_bytes_are_identical_for_every_jobs_count() {
    let dir = project("mixed");
    for format in FORMATS {
        let reference = lockaudit(&dir, &["--format", format, "--jobs", "1"]);
        for jobs in [None, Some("2"), Some("8")] {
            let mut args = vec!["--format", format];
            if let Some(j) = jobs {
                args.extend(["--jobs", j]);
            }
            let run = lockaudit(&dir, &args);
            assert_eq!(run.code, reference.code, "{format} {jobs:?}");
            assert_eq!(
                run.stdout, reference.stdout,
                "{format} with --jobs {jobs:?}"
            );
        }
    }
}

#[test]
fn output_file_has_the_same_bytes_as_stdout() {
    let dir = project("mixed");
    let out = tempfile::tempdir().unwrap();
    for format in FORMATS {
        let stdout = lockaudit(&dir, &["--format", format]);
        let file = out.path().join(format!("report.{format}"));
        // Replaces whatever was there.
        fs::write(
            &file,
            "old contents that are much longer than nothing at all",
        )
        .unwrap();
        let run = lockaudit(
            &dir,
            &["--format", format, "--output", file.to_str().unwrap()],
        );
        assert_eq!(run.code, stdout.code, "{format}");
        assert_eq!(run.stdout, "", "{format}: nothing on stdout");
        assert_eq!(
            fs::read_to_string(&file).unwrap(),
            stdout.stdout,
            "{format}"
        );
    }
    // Nothing but the reports: no temporary files left behind.
    let names: BTreeSet<String> = fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let expected: BTreeSet<String> = FORMATS.iter().map(|f| format!("report.{f}")).collect();
    assert_eq!(names, expected);
}

#[test]
fn output_into_a_missing_directory_exits_2() {
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("no/such/dir/report.sarif");
    let run = lockaudit(
        &project("mixed"),
        &["--format", "sarif", "-o", file.to_str().unwrap()],
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("cannot write"), "{}", run.stderr);
    assert!(!file.exists());
}

// ---- baselines ----------------------------------------------------------

fn edit(path: &Path, f: impl FnOnce(String) -> String) {
    let text = fs::read_to_string(path).unwrap();
    fs::write(path, f(text)).unwrap();
}

fn fingerprints(dir: &Path) -> BTreeSet<String> {
    json(&lockaudit(dir, &["--format", "json"]).stdout)["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["fingerprint"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn baseline_survives_moved_lines_fails_on_new_findings_and_reports_stale_entries() {
    let tmp = copy_project("mixed");
    let dir = tmp.path();
    let before = fingerprints(dir);

    let run = lockaudit(dir, &["--write-baseline", "lockaudit-baseline.json"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "");
    assert!(run
        .stderr
        .contains("wrote 5 findings to lockaudit-baseline.json"));
    let baseline = json(&fs::read_to_string(dir.join("lockaudit-baseline.json")).unwrap());
    let entries = baseline["findings"].as_array().unwrap();
    assert_eq!(entries.len(), 5, "suppressed findings are not baselined");
    for e in entries {
        assert!(
            e.get("line").is_none(),
            "no line numbers in a baseline: {e}"
        );
    }

    let run = lockaudit(dir, &["--baseline", "lockaudit-baseline.json"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .ends_with("\nno findings in 6 files; 3 suppressed, 5 in the baseline\n"),
        "{}",
        run.stdout
    );

    // Unrelated edits move every finding to another line.
    edit(&dir.join("src/report.rs"), |t| {
        format!("// Reports.\n\n/// Nothing to lock here.\npub fn version() -> u32 {{\n    3\n}}\n\n{t}")
    });
    edit(&dir.join("src/jobs/mod.rs"), |t| {
        t.replace(
            "use redis::Commands;\n",
            "use redis::Commands;\n\n\n// Background jobs.\n",
        )
    });
    edit(&dir.join("src/broken.rs"), |t| format!("\n\n{t}"));
    assert_eq!(
        fingerprints(dir),
        before,
        "fingerprints survive moved lines"
    );
    let run = lockaudit(dir, &["--baseline", "lockaudit-baseline.json"]);
    assert_eq!(run.code, 0, "{run:?}");

    // A new finding is reported, and only it.
    edit(&dir.join("src/report.rs"), |t| {
        t + "\npub fn yearly(con: &mut redis::Connection, token: &str) -> redis::RedisResult<bool> {\n    let reply: Option<String> = redis::cmd(\"SET\").arg(\"report:yearly:lock\").arg(token).arg(\"NX\").arg(\"PX\").arg(60_000).query(con)?;\n    Ok(reply.is_some())\n}\n"
    });
    let run = lockaudit(
        dir,
        &["--baseline", "lockaudit-baseline.json", "--format", "short"],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(
        run.stdout,
        "src/report.rs:47:33: error[missing-purpose]: lock acquisition of `\"report:yearly:lock\"` has no `lock-purpose:` annotation\n\
         1 finding (1 error) in 6 files; 3 suppressed, 5 in the baseline\n"
    );

    // A fixed finding leaves a stale baseline entry, counted and named.
    edit(&dir.join("src/report.rs"), |t| {
        t.replace("lock-purpose: eficiency", "lock-purpose: efficiency")
    });
    let run = lockaudit(
        dir,
        &[
            "--baseline",
            "lockaudit-baseline.json",
            "--fail-on",
            "never",
            "--color",
            "never",
        ],
    );
    assert_eq!(run.code, 0);
    assert!(
        run.stdout.contains(
            "note: stale baseline entry: unknown-purpose in src/report.rs no longer occurs (unknown lock purpose `eficiency`)\n"
        ),
        "{}",
        run.stdout
    );
    assert!(run.stdout.ends_with(
        "1 finding (1 error) in 6 files; 3 suppressed, 4 in the baseline, 1 stale baseline entry\n"
    ));
    let short = lockaudit(
        dir,
        &["--baseline", "lockaudit-baseline.json", "--format", "short"],
    );
    assert!(short
        .stdout
        .ends_with("4 in the baseline, 1 stale baseline entry\n"));
    let report = json(
        &lockaudit(
            dir,
            &["--baseline", "lockaudit-baseline.json", "--format", "json"],
        )
        .stdout,
    );
    let summary = &report["summary"];
    assert_eq!(summary["baselined"], 4);
    assert_eq!(summary["stale_baseline"], 1);
    assert_eq!(
        summary["stale_baseline_entries"][0]["check"],
        "unknown-purpose"
    );
    assert_eq!(
        summary["stale_baseline_entries"][0]["path"],
        "src/report.rs"
    );
}

#[test]
fn a_baseline_that_is_not_one_exits_2() {
    let tmp = copy_project("annotated");
    fs::write(tmp.path().join("b.json"), "{\"findings\": 3}").unwrap();
    let run = lockaudit(tmp.path(), &["--baseline", "b.json"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("b.json: not a lockaudit baseline"),
        "{}",
        run.stderr
    );
}

// ---- --new-since ----------------------------------------------------------

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
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

const OLD_JOB: &str = "pub fn old_job(con: &mut redis::Connection, lock_key: &str) -> redis::RedisResult<bool> {\n    let reply: Option<String> = redis::cmd(\"SET\").arg(lock_key).arg(\"me\").arg(\"NX\").arg(\"PX\").arg(5_000).query(con)?;\n    Ok(reply.is_some())\n}\n";
const NEW_JOB: &str = "pub fn new_job(con: &mut redis::Connection, lock_key: &str) -> redis::RedisResult<bool> {\n    let reply: Option<String> = redis::cmd(\"SET\").arg(lock_key).arg(\"me\").arg(\"NX\").arg(\"PX\").arg(5_000).query(con)?;\n    Ok(reply.is_some())\n}\n";

#[test]
fn new_since_reports_only_findings_absent_at_the_revision() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    fs::create_dir_all(dir.join("src")).unwrap();
    fs::write(dir.join("src/jobs.rs"), OLD_JOB).unwrap();
    git(dir, &["init", "-q"]);
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "base"]);

    // Unchanged: the old finding is not new.
    let run = lockaudit(dir, &["--new-since", "HEAD"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        "no findings in 1 file; 1 already present at the base revision\n"
    );

    // Move the old finding, add a new one (uncommitted, in the work tree).
    fs::write(
        dir.join("src/jobs.rs"),
        format!("// Jobs.\n\n{NEW_JOB}\n{OLD_JOB}"),
    )
    .unwrap();
    let run = lockaudit(dir, &["--new-since", "HEAD", "--format", "short"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(
        run.stdout,
        "src/jobs.rs:4:33: error[missing-purpose]: lock acquisition of `lock_key` has no `lock-purpose:` annotation\n\
         1 finding (1 error) in 1 file; 1 already present at the base revision\n"
    );

    // The same from a subdirectory, where paths are relative to it.
    let run = lockaudit(
        &dir.join("src"),
        &["--new-since", "HEAD", "--format", "short", "."],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stdout
            .starts_with("jobs.rs:4:33: error[missing-purpose]"),
        "{}",
        run.stdout
    );

    // Once committed, nothing is new relative to HEAD, but HEAD~1 still sees it.
    git(dir, &["commit", "-q", "-am", "new job"]);
    assert_eq!(lockaudit(dir, &["--new-since", "HEAD"]).code, 0);
    assert_eq!(lockaudit(dir, &["--new-since", "HEAD~1"]).code, 1);

    // The work tree was never touched.
    let status = Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(dir)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&status.stdout), "");

    let run = lockaudit(dir, &["--new-since", "no-such-ref"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("`no-such-ref` is not a git revision"),
        "{}",
        run.stderr
    );
}

// ---- init -----------------------------------------------------------------

#[test]
fn init_writes_a_commented_config_with_every_key_that_loads() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let run = lockaudit(dir, &["init"]);
    assert_eq!(run.code, 0, "{run:?}");
    let path = dir.join("lockaudit.yaml");
    let text = fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    for key in [
        "rules",
        "checks",
        "exclude",
        "lock-name-pattern",
        "default-purpose",
    ] {
        let at = lines
            .iter()
            .position(|l| l.starts_with(&format!("{key}:")))
            .unwrap_or_else(|| panic!("`{key}` is missing:\n{text}"));
        assert!(
            at > 0 && lines[at - 1].starts_with('#'),
            "`{key}` has a comment above it"
        );
    }

    // Every check is listed with its default severity.
    let checks = json(&lockaudit(dir, &["rules", "--format", "json"]).stdout);
    for c in checks.as_array().unwrap() {
        let id = c["id"].as_str().unwrap();
        let severity = c["severity"].as_str().unwrap();
        assert!(
            lines.iter().any(|l| l.starts_with("#   ")
                && l.contains(&format!("{id}:"))
                && l.ends_with(severity)),
            "`{id}` is not listed:\n{text}"
        );
    }

    // It loads, and it changes nothing from the defaults.
    let settings = lockaudit::config::load(&path, "lockaudit.yaml").expect("the starter loads");
    assert!(settings.rules.is_empty() && settings.exclude.is_empty());
    assert!(settings.checks.is_empty());
    assert_eq!(
        settings.lock_name.as_str(),
        lockaudit::config::DEFAULT_LOCK_NAME_PATTERN
    );
    assert_eq!(settings.default_purpose, None);

    // The binary discovers and accepts it.
    copy_dir(&project("annotated").join("src"), &dir.join("src"));
    let run = lockaudit(dir, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    let run = lockaudit(dir, &["--config", "lockaudit.yaml"]);
    assert_eq!(run.code, 0, "{run:?}");

    // It never overwrites without --force.
    fs::write(&path, "checks: {}\n").unwrap();
    let run = lockaudit(dir, &["init"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("already exists"));
    assert_eq!(fs::read_to_string(&path).unwrap(), "checks: {}\n");
    assert_eq!(lockaudit(dir, &["init", "--force"]).code, 0);
    assert_eq!(fs::read_to_string(&path).unwrap(), text);
}

/// Fingerprints name files by their repository path, so a baseline written
/// at the repository root matches when lockaudit runs from a subdirectory.
#[test]
fn baseline_matches_from_any_directory_of_the_repository() {
    let tmp = copy_project("mixed");
    let dir = tmp.path();
    git(dir, &["init", "-q"]);
    let run = lockaudit(dir, &["--write-baseline", "baseline.json"]);
    assert_eq!(run.code, 0, "{run:?}");
    let run = lockaudit(&dir.join("src"), &["--baseline", "../baseline.json", "."]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("in the baseline"), "{}", run.stdout);
    assert!(!run.stdout.contains("stale"), "{}", run.stdout);
}

/// A file named on the command line is audited even if excluded, unless
/// `--force-exclude` (what the pre-commit hook passes).
#[test]
fn force_exclude_applies_excludes_to_named_files() {
    let tmp = copy_project("unannotated");
    let dir = tmp.path();
    fs::write(dir.join("lockaudit.yaml"), "exclude:\n  - \"src/**\"\n").unwrap();
    let file = fs::read_dir(dir.join("src"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "rs"))
        .unwrap();
    let rel = file
        .strip_prefix(dir)
        .unwrap()
        .to_string_lossy()
        .to_string();
    let run = lockaudit(dir, &["check", &rel]);
    assert_eq!(run.code, 1, "a named file is audited: {run:?}");
    let run = lockaudit(dir, &["check", "--force-exclude", &rel]);
    assert_eq!(run.code, 0, "--force-exclude skips it: {run:?}");
    let run = lockaudit(dir, &["check", "."]);
    assert_eq!(run.code, 0, "walking skips excluded files: {run:?}");
}

/// Covers #16: inside a lock crate's own source (its `Cargo.toml` names a
/// pack crate) the crate is the evidence, since it never imports itself;
/// the same code in a crate of another name is nothing.
#[test]
fn a_lock_crates_own_source_is_evidence_for_it() {
    let run = lockaudit(&project("lock-crate"), &["check", "--format", "short", "."]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stdout
            .contains("src/lib.rs:17:14: error[missing-purpose]: lock acquisition of `resources`"),
        "{run:?}"
    );
    let twin = lockaudit(
        &project("lock-crate-user"),
        &["check", "--format", "short", "."],
    );
    assert_eq!(twin.code, 0, "{twin:?}");
    // The pre-filter lets the crate's files through, with the same result.
    let unfiltered = lockaudit(
        &project("lock-crate"),
        &["check", "--format", "short", "--no-prefilter", "."],
    );
    assert_eq!(unfiltered.stdout, run.stdout);
}
